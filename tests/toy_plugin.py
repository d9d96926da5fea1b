"""A pytest plugin (``-p toy_plugin``) that adds the toy store: the one registry line."""

from toy_store import ENTRY
from trails.registry import VECTOR_STORES

VECTOR_STORES.register("toy", ENTRY)

"""``trails serve``: one context behind HTTP (and, for agents, MCP), with API keys that grant
scopes and rights.

Only :mod:`trails.service.keys` loads without the ``service`` extra; the HTTP application
imports FastAPI when it is built.
"""

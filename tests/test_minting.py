"""Document IRIs stay one to one and inside their scope under IRI normalisation.

A document id with ``../`` segments used to mint an IRI that URL normalisation
(RFC 3986 section 6.2.2) turns into another scope's IRI. The normaliser here is written from the
RFC, independently of the minting code: percent-decoding of unreserved characters, upper-case
hex, ``remove_dot_segments`` (section 5.2.4); its "merging" variant also collapses empty
segments, as some URL libraries and servers do.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from trails.ingest.minting import doc_iri, metadata_predicate

BASE = "https://example.org/kb/"
_UNRESERVED = re.compile(r"[A-Za-z0-9\-._~]")


def _decode_unreserved(path: str) -> str:
    def one(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if _UNRESERVED.fullmatch(char) else "%" + match.group(1).upper()
    return re.sub(r"%([0-9A-Fa-f]{2})", one, path)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, step by step."""
    source, output = path, ""
    while source:
        if source.startswith("../"):
            source = source[3:]
        elif source.startswith(("./", "/./")):
            source = source[2:]
        elif source == "/.":
            source = "/"
        elif source.startswith("/../"):
            source = source[3:]
            output = output[: output.rfind("/")] if "/" in output else ""
        elif source == "/..":
            source = "/"
            output = output[: output.rfind("/")] if "/" in output else ""
        elif source in (".", ".."):
            source = ""
        else:
            start = 1 if source.startswith("/") else 0
            end = source.find("/", start)
            end = len(source) if end < 0 else end
            output += source[:end]
            source = source[end:]
    return output


def normalised(iri: str, *, merge_empty: bool = False) -> str:
    scheme_and_host = "https://example.org"
    assert iri.startswith(scheme_and_host)
    path = _remove_dot_segments(_decode_unreserved(iri[len(scheme_and_host):]))
    if merge_empty:
        path = re.sub(r"/{2,}", "/", path).rstrip("/") or "/"
    return scheme_and_host + path


def _prefix(scope: str) -> str:
    return f"{BASE}doc/" if scope == "default" else f"{BASE}scope/{scope}/doc/"


VERSION = "0123456789abcdef"  # what version_of gives: 16 hex digits
_PIECES = st.sampled_from(["..", ".", "", "%2e%2e", "%2E", ".%2e", "\\", "..\\", "a", "b.md",
                           "scope", "legal", "doc", "%", "%25", "!", "..!", ".!", "~", " ",
                           "v", "v!", "c", "0", VERSION])
_IDS = st.one_of(
    st.lists(_PIECES, min_size=1, max_size=6).map("/".join),
    st.text(alphabet=st.sampled_from("./\\%2eE!a"), min_size=1, max_size=12),
    st.text(min_size=1, max_size=12))
_SCOPES = st.sampled_from(["default", "legal", "s", "doc", "scope"])


@settings(max_examples=400, deadline=None)
@given(_SCOPES, _IDS, _SCOPES, _IDS)
@example("default", "../../scope/legal/doc/a.md", "legal", "a.md")
@example("s", "../../legal/doc/a.md", "legal", "a.md")
@example("default", "./a.md", "default", "a.md")
@example("default", "x/../a.md", "default", "a.md")
@example("default", "a//b", "default", "a/b")
@example("default", "a/", "default", "a")
@example("default", "/a", "default", "a")
@example("default", "..", "default", "..!")
def test_distinct_ids_never_normalise_to_one_iri_or_leave_their_scope(scope, id, other_scope,
                                                                       other_id):
    for merge_empty in (False, True):
        iri = normalised(doc_iri(BASE, id, scope), merge_empty=merge_empty)
        other = normalised(doc_iri(BASE, other_id, other_scope), merge_empty=merge_empty)
        assert iri.startswith(_prefix(scope)) and other.startswith(_prefix(other_scope))
        assert len(iri) > len(_prefix(scope))
        if (scope, id) != (other_scope, other_id):
            assert iri != other


@pytest.mark.parametrize("id, scope, iri", [
    ("a.md", "default", f"{BASE}doc/a.md"),
    ("docs/a b.md", "default", f"{BASE}doc/docs/a%20b.md"),
    ("docs/a.md", "legal", f"{BASE}scope/legal/doc/docs/a.md"),
    ("x/.../y..z/.hidden/a.", "default", f"{BASE}doc/x/.../y..z/.hidden/a."),
    ("r%C3%A9sum\u00e9?q=1#f", "default", f"{BASE}doc/r%25C3%25A9sum%C3%A9%3Fq%3D1%23f"),
    ("a\\b", "default", f"{BASE}doc/a%5Cb"),
])
def test_an_id_without_dot_or_empty_segments_mints_the_iri_it_always_did(id, scope, iri):
    assert doc_iri(BASE, id, scope) == iri


@settings(max_examples=300, deadline=None)
@given(_SCOPES, _IDS, _IDS)
@example("default", f"a.md/v/{VERSION}/c/0", "a.md")
@example("default", f"a.md/v/{VERSION}", "a.md")
def test_no_id_mints_another_documents_chunk_or_staged_manifest(scope, id, other):
    """A chunk (``<doc>/v/<version>/c/<n>``), its mention nodes and a staged manifest
    (``<doc>/v/<version>``) live under their document's IRI: no other id mints one of them."""
    staged = f"{doc_iri(BASE, other, scope)}/v/{VERSION}"
    iri = doc_iri(BASE, id, scope)
    assert iri != staged and not iri.startswith(staged + "/")



META_NS = "https://trails.dev/meta#"


@pytest.mark.parametrize("key, local", [
    ("author", "author"), ("date_created", "date_created"), ("x-y2", "x-y2"),  # as always
    ("a b", "a%20b"), ("a.b", "a%2Eb"), ("a_b", "a_b"), ("100%", "100%25"),
    ("größe", "gr%C3%B6%C3%9Fe"), ("автор", "%D0%B0%D0%B2%D1%82%D0%BE%D1%80"),
])
def test_a_metadata_key_names_its_own_predicate(key, local):
    assert metadata_predicate(key, {}).value == META_NS + local


@settings(max_examples=500, deadline=None)
@given(st.text(st.characters(blacklist_categories=["Cs"])),
       st.text(st.characters(blacklist_categories=["Cs"])))
@example("автор", "номер")  # both were meta:_____
@example("a b", "a_b")
def test_distinct_metadata_keys_never_share_a_predicate(key, other):
    if key != other:
        assert metadata_predicate(key, {}) != metadata_predicate(other, {})


def test_keys_outside_plain_names_stay_apart_in_the_graph_and_filters():
    from trails.ingest import ingest_all
    from trails.ingest.document import Document
    from trails.testing import fresh_context

    with fresh_context(dim=8) as ctx:
        ingest_all([Document("a", "m", "Hello.", metadata={
            "автор": "Ann", "номер": 7, "first name": "Bo", "first_name": "Cy"})], ctx=ctx)
        author = ctx.kg.query("SELECT ?v WHERE { ?d meta:%D0%B0%D0%B2%D1%82%D0%BE%D1%80 ?v }")
        assert author.column("v") == ["Ann"]
        assert ctx.kg.query("SELECT ?v WHERE { ?d meta:first%20name ?v }").column("v") == ["Bo"]
        assert ctx.kg.query("SELECT ?v WHERE { ?d meta:first_name ?v }").column("v") == ["Cy"]

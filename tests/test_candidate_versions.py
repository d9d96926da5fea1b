"""The versions a filter's answer names, read as the chunk IRI pattern reads them: the reading
that cuts each IRI at its last ``/c/`` (fast, for tens of thousands of chunks) agrees with the
pattern on every name, minted or not."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from trails.ingest.minting import CHUNK_IRI, chunk_iri, doc_iri
from trails.retrieval.consistency import candidate_versions

PIECES = st.sampled_from(["/v/", "/c/", "/", "v", "c", "0", "7", "a", "f", "A", "g", "\n", "٣",
                          "0123456789abcdef", "deadbeefdeadbeef", "x:", "é", " "])


def by_the_pattern(iris: list[str]) -> dict[str, set[str]]:
    versions: dict[str, set[str]] = {}
    for iri in iris:
        match = CHUNK_IRI.match(iri)
        if match:
            versions.setdefault(match["doc"], set()).add(match["version"])
    return versions


@settings(max_examples=500)
@given(st.lists(st.lists(PIECES, max_size=12).map("".join), max_size=8))
def test_any_name_is_read_as_the_pattern_reads_it(names):
    assert candidate_versions(names) == by_the_pattern(names)


def test_minted_chunks_and_near_misses():
    doc = doc_iri("trails://local/", "legal", "a/v/0123456789abcdef/c/3")
    minted = [chunk_iri(doc, "0123456789abcdef", n) for n in range(3)]
    minted.append(chunk_iri(doc, "fedcba9876543210", 0))
    assert candidate_versions(minted) == {doc: {"0123456789abcdef", "fedcba9876543210"}}
    near = [f"{doc}/v/0123456789ABCDEF/c/1", f"{doc}/v/0123456789abcde/c/1",
            f"{doc}/v/0123456789abcdef/c/", f"{doc}/v/0123456789abcdef/c/1\n",
            f"{doc}/v/0123456789abcdef/c/١", "/v/0123456789abcdef/c/1", f"{doc}/c/1",
            "trails://x\ny/v/0123456789abcdef/c/1"]
    assert candidate_versions(near) == by_the_pattern(near)
    assert candidate_versions(near)[doc] == {"0123456789abcdef"}  # "1\n" and "١": as \d+$ reads


def test_the_live_versions_a_read_checks_are_the_recorded_ones(tmp_path):
    """The store's cheap read of current versions (two columns) says what its full records
    say, for documents it holds, documents it does not, and a document changed since."""
    from trails.context import Context
    from trails.ingest import Document, ingest_all
    from trails.testing import MockEmbedder

    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as ctx:
        ingest_all([Document(id=f"d{n}", source="m", text=f"Text number {n}.") for n in range(5)],
                   ctx=ctx)
        ingest_all([Document(id="d1", source="m", text="Text changed.")], ctx=ctx)
        records = ctx.vectors.current_versions()
        asked = [*records, "trails://local/doc/missing"]
        assert ctx.vectors.live_versions(asked) == {d: r.version for d, r in records.items()}
        assert len(set(ctx.vectors.live_versions(asked).values())) == 5

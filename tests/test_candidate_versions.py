"""The versions a filter's answer names, read as the chunk IRI pattern reads them: the reading
that cuts each IRI at its last ``/c/`` (fast, for tens of thousands of chunks) agrees with the
pattern on every name, minted or not."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from trails.ingest.minting import CHUNK_IRI, chunk_iri, doc_iri
from trails.retrieval.chunk_versions import candidate_versions, coded_unselected, unselected_live

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


class LiveVersions:
    """A store's live versions and its state number, as a read's check asks them."""

    def __init__(self) -> None:
        self.live: dict[str, str] = {}
        self.number = 0
        self.asked: list[str] = []

    def live_versions(self, docs):
        self.asked.extend(docs)
        return {doc: self.live[doc] for doc in docs if doc in self.live}

    def state(self):
        return self.number


DOCS = [doc_iri("trails://local/", "s", f"d{n}") for n in range(4)]
VERSIONS = ["0123456789abcdef", "fedcba9876543210", "00000000000000aa"]
NAMES = st.one_of(
    st.builds(chunk_iri, st.sampled_from(DOCS), st.sampled_from(VERSIONS), st.integers(0, 2)),
    # a chunk's "<head>/c/" and something else after it (a name beside its version's chunks)
    st.builds(lambda doc, version, after: chunk_iri(doc, version, 0)[:-1] + after,
              st.sampled_from(DOCS), st.sampled_from(VERSIONS),
              st.sampled_from(["12", "\u0663", "1\n", "", "x", "1/c/2", "/v/0/c/1"])),
    st.sampled_from([*DOCS, "https://example.org/thing", f"{DOCS[0]}/v/0123456789ABCDEF/c/1"]),
    st.none())  # a blank node's place in a filter index's names


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_coded_answer_is_checked_as_its_names_are(data):
    """A filter index's answer (codes into its growing list of names) reads the same versions,
    and finds the same documents whose live version it does not name, as the names themselves
    do: across answers from one list, as the list grows, and as the store commits (a live
    version kept from the state before would keep a torn document hidden)."""
    import numpy as np

    from trails.vector.stores.records import CodedIris

    token, names, store = object(), np.empty(0, dtype=object), LiveVersions()
    for _ in range(data.draw(st.integers(1, 5))):
        added = data.draw(st.lists(NAMES, max_size=6))
        names = np.concatenate([names, np.array([*added, None], dtype=object)[:-1]])
        if data.draw(st.booleans()):  # a commit: other live versions, another state
            store.number += 1
            store.live = data.draw(st.dictionaries(st.sampled_from(DOCS),
                                                   st.sampled_from(VERSIONS)))
        if not len(names):
            continue
        codes = np.array(sorted(data.draw(st.sets(st.integers(0, len(names) - 1)))),
                         dtype=np.int64)
        codes = codes[[isinstance(names[c], str) for c in codes.tolist()]]
        plain = [names[c] for c in codes.tolist()]
        answer = CodedIris(plain)
        answer.coded = (token, names, codes)
        assert candidate_versions(answer) == candidate_versions(plain)
        assert coded_unselected(answer.coded, store) == unselected_live(
            candidate_versions(plain), store)


def test_a_live_version_first_named_by_a_later_answer_is_seen_there():
    """A document whose live version no name of the list read yet is torn in that answer; once
    the list grows by a chunk of that version, an answer naming it is whole (in one state)."""
    import numpy as np

    from trails.vector.stores.records import CodedIris

    store, token = LiveVersions(), object()
    store.live = {DOCS[0]: VERSIONS[1]}
    old, live = chunk_iri(DOCS[0], VERSIONS[0], 0), chunk_iri(DOCS[0], VERSIONS[1], 0)
    first = CodedIris([old])
    first.coded = (token, np.array([old], dtype=object), np.array([0]))
    assert coded_unselected(first.coded, store) == {DOCS[0]: VERSIONS[1]}
    second = CodedIris([old, live])
    second.coded = (token, np.array([old, live], dtype=object), np.array([0, 1]))
    assert coded_unselected(second.coded, store) == {}
    assert store.asked == [DOCS[0], DOCS[0]]  # asked again: its pair is new


def test_a_name_beside_a_chunk_of_its_head_is_read_on_its_own():
    """Names read in one pass share the last chunk's reading only when they are its head and
    a position: a later answer holding only the other names shows what each is alone."""
    import numpy as np

    from trails.vector.stores.records import CodedIris

    head = chunk_iri(DOCS[0], VERSIONS[0], 0)[:-1]
    others = [head + "x", head + "1\n", head + "1/c/2", head + "12", head + "\u0663"]
    names = np.array([head + "0", *others], dtype=object)
    token = object()
    both = CodedIris(list(names))
    both.coded = (token, names, np.arange(len(names)))
    assert candidate_versions(both) == candidate_versions(list(names))
    for code, name in enumerate(others, start=1):
        alone = CodedIris([name])
        alone.coded = (token, names, np.array([code]))
        assert candidate_versions(alone) == by_the_pattern([name]), name


def test_two_stores_in_the_same_state_number_are_asked_each():
    """One graph's answer checked against two stores (a reader's and a writer's handles, or
    two contexts over one graph) whose state numbers happen to be equal: each store's own
    live versions decide, not those kept from the other."""
    import numpy as np

    from trails.vector.stores.records import CodedIris

    names = np.array([chunk_iri(DOCS[0], VERSIONS[0], 0)], dtype=object)
    answer = CodedIris(list(names))
    answer.coded = (object(), names, np.array([0]))
    same, other = LiveVersions(), LiveVersions()
    same.live, other.live = {DOCS[0]: VERSIONS[0]}, {DOCS[0]: VERSIONS[1]}
    assert coded_unselected(answer.coded, same) == {}
    assert coded_unselected(answer.coded, other) == {DOCS[0]: VERSIONS[1]}
    assert coded_unselected(answer.coded, same) == {}

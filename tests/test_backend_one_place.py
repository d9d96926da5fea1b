"""Adding a backend is one module and one registry line (ADR 0048).

``tests/toy_store.py`` is a whole vector store: the eight methods ``BaseVectorStore`` leaves to
a backend plus ``from_settings``/``recorded_settings``. Registered (the one line of
``tests/toy_plugin.py``), ``trails.json`` records it and ``Context.open`` reopens it, and the
shared store suites run on it; without the line, neither happens.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toy_store import ENTRY, ToyStore
from trails import retrieve
from trails.backends import describe_vectors, open_vectors
from trails.config import PartConfig
from trails.context import Context
from trails.errors import ConfigurationError
from trails.recorded import Recordable
from trails.registry import VECTOR_STORES, Backend, StoreFixture
from trails.testing import stores
from trails.vector.embedders.mock import MockEmbedder

TESTS = Path(__file__).resolve().parent
DIM = 8
TEXTS = {"a": "rails routing", "b": "ruby gems", "c": "graph queries"}


@pytest.fixture
def toy_registered():
    VECTOR_STORES.register("toy", ENTRY)
    yield
    VECTOR_STORES.unregister("toy")


def filled_context(root: Path) -> None:
    """A context in ``root`` whose vectors are in a toy store, closed again."""
    embedder = MockEmbedder(dim=DIM)
    root.mkdir()
    store = ToyStore(root / "rows.json", dim=DIM)
    store.add_many(list(TEXTS), embedder.embed_many(list(TEXTS.values())),
                   [{"snippet": t} for t in TEXTS.values()])
    Context.open(root, embedder=embedder, vectors=store).close()


def test_a_registered_store_is_recorded_in_trails_json_and_reopens_by_itself(
        tmp_path, toy_registered):
    filled_context(tmp_path / "ctx")
    with Context.open(tmp_path / "ctx") as ctx:  # nothing passed in
        assert isinstance(ctx.vectors, ToyStore)
        assert ctx.vectors.path == tmp_path / "ctx" / "rows.json"
        assert retrieve("rails routing", ctx, mode="vector", k=1)[0].iri == "a"
    recorded = describe_vectors(ctx.vectors, tmp_path / "ctx")
    assert recorded == PartConfig(backend="toy", settings={"path": "rows.json"})


def test_without_the_registry_line_the_context_cannot_reopen_it(tmp_path):
    filled_context(tmp_path / "ctx")
    with pytest.raises(ConfigurationError, match=r"toy_store\.ToyStore.*pass vectors="):
        Context.open(tmp_path / "ctx")
    with pytest.raises(ConfigurationError, match="unknown vector store 'toy'"):
        open_vectors(PartConfig(backend="toy", settings={}), tmp_path, dim=DIM)


def test_the_kit_makes_empty_stores_of_it_from_its_settings(tmp_path, toy_registered):
    factory = stores.factory_named("toy-file")(tmp_path)
    store = factory.new(DIM)
    store.add("x", [1.0] + [0.0] * (DIM - 1))
    again = factory.reopen(read_only=True)
    assert isinstance(again, ToyStore) and again.path == tmp_path / "toy.json"
    assert again.all_ids() == ["x"] and again.read_only
    factory.close_all()


def test_every_shipped_backend_records_itself():
    """Each registered graph and vector store class implements the protocol: none needs a
    line anywhere else."""
    from trails.registry import GRAPHS
    for table in (GRAPHS, VECTOR_STORES):
        for name, entry in table.items():
            module, _, attribute = entry.target.partition(":")
            cls = getattr(__import__(module, fromlist=[attribute]), attribute)
            assert issubclass(cls, Recordable), name


def test_a_name_registered_twice_is_refused(toy_registered):
    VECTOR_STORES.register("toy", ENTRY)  # the same entry again: nothing happens
    with pytest.raises(ConfigurationError, match="already registered"):
        VECTOR_STORES.register("toy", Backend("elsewhere:Store"))
    with pytest.raises(ConfigurationError, match="already registered"):
        VECTOR_STORES.register("sqlite-vec", ENTRY)


def test_a_fixture_whose_factory_disagrees_with_it_is_refused(toy_registered):
    VECTOR_STORES.unregister("toy")
    VECTOR_STORES.register("toy", Backend("toy_store:ToyStore", tests=(StoreFixture(
        "toy-odd", factory="trails.testing.stores:SqliteVecFile"),)))
    with pytest.raises(ConfigurationError, match="StoreFactory named 'toy-odd'"):
        stores.factories()


def collected(*plugin: str) -> list[str]:
    """The contract suite's test ids as a pytest run collects them (with ``plugin``)."""
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         *plugin, str(TESTS / "test_vector_store_contract.py")],
        cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    return [line for line in run.stdout.splitlines() if "::" in line]


def test_the_registry_line_puts_the_store_into_the_contract_suite():
    with_toy, without = collected("-p", "toy_plugin"), collected()
    toy = [t for t in with_toy if "toy-file" in t]
    file = [t for t in with_toy if "sqlite-vec-file" in t]
    assert toy and len(toy) == len(file)  # every test the other stores run
    assert sorted(set(with_toy) - set(toy)) == sorted(without)
    assert not any("toy" in t for t in without)


# -- the defaults BaseVectorStore gives a store of eight methods ------------------------------

ROW = st.fixed_dictionaries({"doc_iri": st.sampled_from(["d1", "d2", "d3"]),
                             "kind": st.sampled_from(["a", "b", 1, True, None])})


@settings(max_examples=40, deadline=None)
@given(rows=st.dictionaries(st.sampled_from([f"c{i}" for i in range(8)] + ["d1"]), ROW,
                            max_size=8),
       named=st.lists(st.sampled_from(["c0", "c3", "d1", "d2", "missing"]), max_size=4),
       wanted=st.fixed_dictionaries({}, optional={"doc_iri": st.sampled_from(["d1", "d2"]),
                                                  "kind": st.sampled_from(["a", 1, True, None])}))
def test_the_scanning_defaults_answer_as_a_store_s_own_queries(rows, named, wanted):
    """``expand_ids``, ``count`` and ``find`` of a store that writes only the eight abstract
    methods agree with SqliteVecStore's, which answers them with queries; ``delete_where``
    removes exactly the rows whose metadata equals every filter as typed JSON."""
    from trails.vector.stores.sqlite_vec import SqliteVecStore

    with tempfile.TemporaryDirectory() as folder:
        toy, reference = ToyStore(Path(folder) / "t.json", dim=2), SqliteVecStore(dim=2)
        for store in (toy, reference):
            if rows:
                store.add_many(list(rows), [[1.0, float(n)] for n in range(len(rows))],
                               list(rows.values()))
        assert toy.expand_ids(named) == sorted(reference.expand_ids(named))
        assert toy.count() == reference.count() == len(rows)
        assert toy.count(wanted) == reference.count(wanted)
        assert toy.find(wanted, limit=3) == reference.find(wanted, limit=3)
        if wanted:  # typed equality, and None matches nothing (as PgVectorStore's query)
            gone = sorted(i for i, row in rows.items() if all(
                v is not None and type(row[k]) is type(v) and row[k] == v
                for k, v in wanted.items()))
            assert toy.delete_where(wanted) == len(gone)
            assert toy.all_ids() == sorted(set(rows) - set(gone))
        reference.close()


def test_a_registered_class_without_the_two_methods_is_named_when_opened(tmp_path):
    VECTOR_STORES.register("bare", Backend("trails.vector.stores.base:BaseVectorStore"))
    try:
        with pytest.raises(ConfigurationError, match=r"'bare' \(BaseVectorStore\).*from_settings"):
            open_vectors(PartConfig(backend="bare", settings={}), tmp_path, dim=DIM)
    finally:
        VECTOR_STORES.unregister("bare")

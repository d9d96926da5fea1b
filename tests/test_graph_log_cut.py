"""Closing a graph that was written leaves no write-ahead log behind (ADR 0036).

RocksDB keeps its write-ahead logs after a flush until the store is opened again; after a
long ingest they held more bytes than the data itself. A closed graph keeps its data and
not those logs.
"""

from __future__ import annotations

from pathlib import Path

from trails.kg import opening
from trails.kg.oxigraph import OxigraphGraph


def log_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.glob("*.log"))


def write(graph: OxigraphGraph, start: int, count: int) -> str:
    text = "".join(f'<urn:s{i}> <urn:p> "a value long enough to fill the log {i}" .\n'
                   for i in range(start, start + count))
    graph.load_nquads(text)
    return text


def test_a_closed_graph_keeps_its_data_and_not_its_log(tmp_path, monkeypatch):
    monkeypatch.setattr(opening, "LOG_CUT_BYTES", 0)  # cut whatever the logs hold
    graph = OxigraphGraph(str(tmp_path / "g"))
    written = sum(len(write(graph, n, 2_000)) for n in range(0, 20_000, 2_000))
    graph.close()
    assert log_bytes(tmp_path / "g") < written // 100
    reopened = OxigraphGraph(str(tmp_path / "g"), read_only=True)
    assert len(reopened) == 20_000
    reopened.close()


def test_small_logs_are_left_to_the_next_open(tmp_path):
    graph = OxigraphGraph(str(tmp_path / "g"))
    write(graph, 0, 100)
    graph.close()  # below the threshold: no second open at every close
    assert len(OxigraphGraph(str(tmp_path / "g"), read_only=True)) == 100


def test_a_writer_that_took_the_graph_meanwhile_is_not_disturbed(tmp_path, monkeypatch):
    monkeypatch.setattr(opening, "LOG_CUT_BYTES", 0)
    first = OxigraphGraph(str(tmp_path / "g"))
    write(first, 0, 1_000)
    first.close()
    second = OxigraphGraph(str(tmp_path / "g"))
    opening.cut_log(str(tmp_path / "g"))  # held by another writer: nothing happens
    assert len(second) == 1_000
    second.close()

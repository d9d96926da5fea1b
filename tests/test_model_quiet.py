"""Loading the packaged model says nothing on stderr unless asked: no ``Loading weights``
progress bar (transformers' tqdm), no ``TqdmWarning`` (tqdm imported in a notebook without
ipywidgets). Checked where a user meets them: a real subprocess's stderr, and the stderr
stream of a cell in a real Jupyter kernel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from importlib.util import find_spec

import pytest

from conftest import ROOT, needs

pytestmark = needs("sentence_transformers", reason="the local model needs trails[local-model]")


# One process loads the model three times, the model cache emptied between loads: quietly
# first (a fresh process, where tqdm's import warns), then with verbose=True, then with
# TRAILS_MODEL_PROGRESS=1. Then (when onnxruntime is installed) it makes two first ONNX
# exports, each into an empty cache of its own: quietly, then with verbose=True; the loads
# before have left transformers' progress bars on, as a fresh process has them. A marker line
# on stderr divides what each step wrote. One process instead of five: starting torch is most
# of a load's time and a third of an export's.
MARK = "--- next load ---"
STEPS = textwrap.dedent("""
    import json, os, sys
    from pathlib import Path
    import trails._state
    from trails.vector.embedders.sentence_transformer import SentenceTransformerEmbedder
    import transformers.utils.logging as hf_logging
    reports = []
    for verbose, env in ((None, None), (True, None), (None, "1")):
        if env is not None:
            os.environ["TRAILS_MODEL_PROGRESS"] = env
        trails._state.model_cache.clear()
        options = {} if verbose is None else {"verbose": verbose}
        vector = SentenceTransformerEmbedder(backend="torch", **options).embed("a sentence")
        reports.append({"dim": len(vector), "bars_after": hf_logging.is_progress_bar_enabled(),
                        "verbosity_after": hf_logging.get_verbosity()})
        print(sys.argv[1], file=sys.stderr, flush=True)  # MARK
    os.environ.pop("TRAILS_MODEL_PROGRESS")
    for verbose in ((None, True) if len(sys.argv) > 2 else ()):  # a cache folder: export
        trails._state.model_cache.clear()
        cache = Path(sys.argv[2]) / ("verbose" if verbose else "quiet")
        embedder = SentenceTransformerEmbedder(backend="onnx", cache_dir=cache, verbose=verbose)
        path, created = embedder.export()
        reports.append({"created": created, "dim": len(embedder.embed("a short sentence"))})
        print(sys.argv[1], file=sys.stderr, flush=True)  # MARK
    print(json.dumps(reports))
""")
CAN_EXPORT = find_spec("onnxruntime") is not None and find_spec("onnx") is not None


@pytest.fixture(scope="module")
def steps(tmp_path_factory) -> list[tuple[dict, str]]:
    """(report, stderr) of each step: the three loads, then the two exports if it made them."""
    environment = {name: value for name, value in os.environ.items()
                   if name != "TRAILS_MODEL_PROGRESS"}
    environment.update({"PYTHONPATH": str(ROOT / "python"), "HF_HUB_OFFLINE": "1"})
    exports = [str(tmp_path_factory.mktemp("exports"))] if CAN_EXPORT else []
    run = subprocess.run([sys.executable, "-c", STEPS, MARK, *exports], cwd=ROOT,
                         env=environment, capture_output=True, text=True, timeout=600,
                         check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    reports = json.loads(run.stdout.splitlines()[-1])
    stderrs = run.stderr.split(MARK + "\n")
    count = 3 + 2 * len(exports)
    assert len(reports) == count and len(stderrs) == count + 1 and stderrs[count] == "", \
        run.stderr[-3000:]
    return list(zip(reports, stderrs[:count]))


@pytest.fixture(scope="module")
def loads(steps) -> list[tuple[dict, str]]:
    """(report, stderr) of each load: quiet, verbose=True, TRAILS_MODEL_PROGRESS=1."""
    return steps[:3]


@pytest.mark.slow
def test_loading_the_model_writes_nothing_about_weights_to_stderr(loads):
    report, stderr = loads[0]  # the process's first load: tqdm is imported here
    assert report["dim"] == 384
    assert "Loading weights" not in stderr
    assert "TqdmWarning" not in stderr and "it/s]" not in stderr
    # Only around the load: the process's own progress bars and log level come back.
    assert report["bars_after"] is True
    assert report["verbosity_after"] == 30  # logging.WARNING, transformers' default


@pytest.mark.slow
@pytest.mark.parametrize("load", [1, 2], ids=["verbose=True", "TRAILS_MODEL_PROGRESS=1"])
def test_asking_for_progress_shows_the_weight_loading_bar(loads, load):
    report, stderr = loads[load]
    assert report["dim"] == 384
    assert "Loading weights" in stderr and "103/103" in stderr


@pytest.mark.slow
@pytest.mark.skipif(not CAN_EXPORT, reason='the ONNX export needs trails[onnx]')
@pytest.mark.parametrize("verbose", [False, True], ids=["quiet", "verbose=True"])
def test_the_first_onnx_export_loads_the_model_quietly_unless_asked(steps, verbose):
    report, stderr = steps[3 + verbose]
    assert report == {"created": True, "dim": 384}  # this run exported, then embedded
    assert ("Loading weights" in stderr) is verbose


def cell_outputs(code: str) -> list[dict]:
    """The outputs of ``code`` run as one cell in a fresh Jupyter kernel."""
    nbformat = pytest.importorskip("nbformat", reason="nbformat is in trails[dev]")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is in trails[dev]")
    setup = f"import sys; sys.path.insert(0, {str(ROOT / 'python')!r})"
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(setup), nbformat.v4.new_code_cell(code)])
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}}).execute()
    return notebook.cells[1].outputs


LOAD_IN_CELL = ("from trails.vector.embedders.sentence_transformer import "
                "SentenceTransformerEmbedder\n"
                "len(SentenceTransformerEmbedder(backend='torch'{}).embed('a sentence'))")


@pytest.mark.slow
def test_a_notebook_cell_loading_the_model_writes_no_stream():
    outputs = cell_outputs(LOAD_IN_CELL.format(""))
    assert [o["output_type"] for o in outputs] == ["execute_result"], outputs
    assert outputs[0]["data"]["text/plain"] == "384"


@pytest.mark.slow
def test_a_notebook_cell_asking_for_progress_shows_the_warning_and_the_bar():
    outputs = cell_outputs(LOAD_IN_CELL.format(", verbose=True"))
    stderr = "".join(o.get("text", "") for o in outputs if o.get("name") == "stderr")
    assert "Loading weights" in stderr and "TqdmWarning" in stderr
    assert outputs[-1]["data"]["text/plain"] == "384"


# -- the switch itself, without loading a model ----------------------------------------------


def tqdm_style_warning() -> None:
    """A warning issued from a tqdm module, as tqdm.auto's import issues TqdmWarning."""
    warnings.warn_explicit("IProgress not found", UserWarning, "tqdm/auto.py", 21,
                           module="tqdm.auto")


def test_quiet_loading_ignores_tqdm_warnings_and_switches_bars_off_only_inside():
    from transformers.utils import logging as hf_logging

    from trails.vector.embedders.sentence_transformer.quiet import quiet_loading

    hf_logging.enable_progress_bar()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with quiet_loading(False):
            assert not hf_logging.is_progress_bar_enabled()
            assert hf_logging.get_verbosity() == hf_logging.ERROR
            tqdm_style_warning()
            warnings.warn("the caller's own warning", UserWarning, stacklevel=1)
        tqdm_style_warning()  # outside the block it shows again
    assert [str(w.message) for w in caught] == ["the caller's own warning", "IProgress not found"]
    assert hf_logging.is_progress_bar_enabled()


def test_quiet_loading_restores_everything_when_the_load_fails():
    from transformers.utils import logging as hf_logging

    from trails.vector.embedders.sentence_transformer.quiet import quiet_loading

    hf_logging.enable_progress_bar()
    hf_logging.set_verbosity_info()
    try:
        with pytest.raises(OSError, match="no such model"), quiet_loading(None):
            raise OSError("no such model")
        assert hf_logging.is_progress_bar_enabled()
        assert hf_logging.get_verbosity() == hf_logging.INFO
    finally:
        hf_logging.set_verbosity_warning()


def test_progress_is_shown_when_asked(monkeypatch):
    from transformers.utils import logging as hf_logging

    from trails.vector.embedders.sentence_transformer.quiet import quiet_loading

    hf_logging.enable_progress_bar()
    with quiet_loading(True):
        assert hf_logging.is_progress_bar_enabled()
    monkeypatch.setenv("TRAILS_MODEL_PROGRESS", "1")
    with quiet_loading(None):
        assert hf_logging.is_progress_bar_enabled()
    monkeypatch.setenv("TRAILS_MODEL_PROGRESS", "0")
    with quiet_loading(None):
        assert not hf_logging.is_progress_bar_enabled()

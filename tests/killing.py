"""Running a real worker process, and killing it (SIGKILL) at a chosen moment."""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path


def run_worker(script: str, args: list[Path], kill_after: float | None) -> bool:
    """Run ``python -c script *args``; once it prints "ready", wait for it (``kill_after``
    None) or SIGKILL it ``kill_after`` seconds later. True if it finished on its own."""
    worker = subprocess.Popen([sys.executable, "-c", script, *map(str, args)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert worker.stdout is not None
    assert worker.stdout.readline().strip() == "ready"
    if kill_after is None:
        _out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        return True
    time.sleep(kill_after)
    worker.send_signal(signal.SIGKILL)
    worker.communicate(timeout=30)
    return worker.returncode == 0


def killed_copies(script: str, base: Path, args: list[Path], root: Path, kills: int,
                  seed: int) -> Iterator[tuple[Path, Path]]:
    """Copies of ``base`` that the worker ran on (``script base *args``) and was killed at a
    random moment of its measured duration: ``(state, the same state copied untouched)``.
    Goes on (bounded) until ``kills // 2`` kills landed mid-run, and checks that they did."""
    timing = root / "timing"
    shutil.copytree(base, timing)
    started = time.perf_counter()
    run_worker(script, [timing, *args], None)
    duration = time.perf_counter() - started
    rng = random.Random(seed)
    interrupted = attempts = 0
    while (attempts < kills or interrupted < kills // 2) and attempts < 3 * kills:
        state = root / f"kill{attempts}"
        attempts += 1
        shutil.copytree(base, state)
        interrupted += not run_worker(script, [state, *args], rng.uniform(0.0, duration))
        untouched = root / f"{state.name}-norepair"
        shutil.copytree(state, untouched)
        yield state, untouched
    assert interrupted >= kills // 2, "kills should land while the worker is running"

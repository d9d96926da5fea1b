"""Running a real worker process, and killing it (SIGKILL) at a chosen moment."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
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

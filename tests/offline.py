"""Run code in a fresh Python with no Hugging Face hub settings and no network.

The library must load local models by itself: the child process gets an environment without
``HF_HUB_OFFLINE`` (or any ``HF_HUB_*``), a hub address that refuses at once, and a socket
layer that records and refuses every connection to a network host. It reports what it printed,
every connection it tried, and the ``HF_HUB_*`` variables it ended with (the library must not
set any).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

_GUARD = textwrap.dedent("""
    import json, os, socket, sys
    _attempts = []
    _connect = socket.socket.connect

    def _refuse(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            _attempts.append(repr(address))
            raise OSError("no network here")
        return _connect(sock, address)

    socket.socket.connect = _refuse
""")
_REPORT = textwrap.dedent("""
    print(json.dumps({"attempts": _attempts,
                      "hub_settings": sorted(k for k in os.environ if k.startswith("HF_HUB"))}))
""")


def run_offline(code: str, *args: str) -> tuple[str, dict[str, list[str]]]:
    """(what ``code`` printed, {"attempts": [...], "hub_settings": [...]})."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_HUB")}
    env["HF_ENDPOINT"] = "http://127.0.0.1:9"  # should anything ask a hub, it fails at once
    script = _GUARD + textwrap.dedent(code) + _REPORT
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, check=False,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    *printed, report = done.stdout.strip().splitlines()
    return "\n".join(printed), json.loads(report)

"""Where the benchmark scripts find BEIR SciFact: ``$TRAILS_BEIR_DIR/scifact``, else the data
folder beside this checkout. The library itself looks only where it is told
(``trails.evaluation.beir``)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCIFACT = Path(os.environ.get("TRAILS_BEIR_DIR") or ROOT.parent / "shared" / "data" / "beir") \
    / "scifact"

"""The engine's process-wide state, kept in one place so tests can isolate it.

``trails.testing.isolated_kernel()`` snapshots and restores everything here.
"""

from __future__ import annotations

from typing import Any

# The context retrieve() uses when none is passed (set with trails.set_default_context).
default_context: Any = None
# Loaded models shared by every context in the process, keyed by (path, device).
model_cache: dict[tuple[str, str | None], Any] = {}
# Environment variables that change what the engine talks to; isolated in tests.
ENV_VARS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID",
            "OPENAI_ADMIN_KEY", "OPENAI_CUSTOM_HEADERS", "TRAILS_HOME", "TRAILS_DB",
            "TRAILS_MODEL", "QDRANT_URL", "QDRANT_API_KEY")

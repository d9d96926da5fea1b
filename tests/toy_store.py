"""A vector store in one module, to show what adding a backend takes: the eight methods
``BaseVectorStore`` leaves to a backend, and ``from_settings``/``recorded_settings`` for
``trails.json``. It keeps every row in a JSON file and scores in numpy (tests only).

Registering it is one line (``tests/toy_plugin.py``); the test kit then runs the shared
store suites on it (``trails_store_factory[toy-file]``) and ``Context.open`` reopens it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trails.recorded import Settings, Where, relative
from trails.registry import Backend, StoreFixture
from trails.scopes import DEFAULT_SCOPE
from trails.vector.embedders.base import EmbedderIdentity
from trails.vector.stores.base import BaseVectorStore, SearchPlan, StoredVector, VectorHit

# The registry entry a plugin adds (one line: VECTOR_STORES.register("toy", ENTRY)).
ENTRY = Backend("toy_store:ToyStore", summary="rows in a JSON file, for tests",
                tests=(StoreFixture("toy-file", settings={"path": "toy.json"}),))


class ToyStore(BaseVectorStore):
    def __init__(self, path: str | Path, dim: int | None = None, *,
                 read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        saved = json.loads(self.path.read_text()) if self.path.exists() else {}
        self._dim = int(saved.get("dim") or dim or 0)
        if not self._dim:
            raise ValueError(f"{self.path} holds no store: pass dim= to make one")
        self._identity = saved.get("identity")
        self._rows: dict[str, tuple[list[float], dict[str, Any]]] = {
            id: (vector, metadata) for id, (vector, metadata) in saved.get("rows", {}).items()}

    def _save(self) -> None:
        self.path.write_text(json.dumps({"dim": self._dim, "identity": self._identity,
                                         "rows": self._rows}))

    # -- the eight methods BaseVectorStore leaves to a backend ------------------------------

    @property
    def embedder_identity(self) -> EmbedderIdentity | None:
        return None if self._identity is None else EmbedderIdentity(**self._identity)

    def _record_embedder(self, identity: EmbedderIdentity) -> None:
        self._identity = identity.model_dump()
        self._save()

    def _write(self, ids: list[str], unit: np.ndarray, metas: list[dict[str, Any]],
               pending: bool) -> None:
        for id, vector, metadata in zip(ids, unit.tolist(), metas, strict=True):
            self._rows[id] = (vector, metadata)
        self._save()

    def _search_unit(self, query: np.ndarray, k: int, ids: Iterable[str] | None,
                     scopes: Sequence[str] | None, *, with_metadata: bool = True,
                     ) -> tuple[list[VectorHit], SearchPlan]:
        eligible = sorted(self._rows if ids is None else self.expand_ids(ids))
        if scopes is not None:
            eligible = [i for i in eligible
                        if self._rows[i][1].get("scope", DEFAULT_SCOPE) in scopes]
        scores = [float(np.dot(np.asarray(self._rows[i][0], dtype=np.float64), query))
                  for i in eligible]
        ranked = sorted(zip(eligible, scores, strict=True), key=lambda hit: (-hit[1], hit[0]))
        hits = [VectorHit(i, s, dict(self._rows[i][1]) if with_metadata else {})
                for i, s in ranked[:k]]
        return hits, SearchPlan("full-scan", len(eligible), True)

    def _delete_ids(self, ids: list[str]) -> int:
        gone = [self._rows.pop(i) for i in ids if i in self._rows]
        self._save()
        return len(gone)

    def get(self, ids: Iterable[str]) -> list[StoredVector]:
        return [StoredVector(i, list(self._rows[i][0]), dict(self._rows[i][1]))
                for i in ids if i in self._rows]

    def all_ids(self) -> list[str]:
        return sorted(self._rows)

    def close(self) -> None:
        pass

    # -- trails.json ----------------------------------------------------------------------

    @classmethod
    def from_settings(cls, settings: Settings, where: Where) -> ToyStore:
        return cls(where.path(settings.get("path"), "toy.json"), where.dim,
                   read_only=where.read_only)

    def recorded_settings(self, root: Path) -> Settings | None:
        return {"path": relative(self.path, root)}

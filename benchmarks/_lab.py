"""Helpers for ranking runs on BEIR data (eval_beir.py here; studies/tune_auto.py and the guard
study), built on ``trails.evaluation``.

- :class:`CachedEmbedder`: vectors kept in a SQLite file, so a rerun embeds nothing again;
- :func:`collect_rankings` / :func:`fused_run`: each query's two rankings, searched once and
  fused many times (one fusion setting per grid point);
- :func:`corrupt` / :func:`derived_store`: one ranking damaged on purpose, the other intact.

Importable by the benchmark scripts (their folder is on ``sys.path``) and by the tests of these
helpers (``tests/test_eval.py`` puts ``benchmarks/`` on ``sys.path``).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trails.context import Context
from trails.evaluation import CHUNK_DEPTH, DOC_DEPTH, BeirDataset, max_pool
from trails.evaluation.run import keyword_index
from trails.rank.fusion import FusionFn, Ranking
from trails.rank.keyword import keyword_evidence
from trails.retrieval.retrieve import retrieve
from trails.vector.embedders.base import BaseEmbedder, EmbedderIdentity
from trails.vector.stores.base import VectorStore
from trails.vector.stores.sqlite_vec import SqliteVecStore

__all__ = ["CachedEmbedder", "collect_rankings", "corrupt", "derived_store", "fused_run"]

# query id -> {"vector": Ranking, "keyword": Ranking}
Rankings = dict[str, dict[str, Ranking]]


# ------------------------------------------------------------------------------- embeddings

class CachedEmbedder:
    """An embedder whose vectors are kept in a SQLite file, keyed by model and text.

    It is the wrapped embedder to every check (same ``identity``, ``dim``, ``tokenizer``,
    ``max_tokens``), so contexts built through it are the wrapped embedder's contexts; it only
    makes a second embedding of the same text free. Thread-safe.
    """

    def __init__(self, embedder: BaseEmbedder, path: str | Path) -> None:
        self.inner = embedder
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, v BLOB)")
        self._lock = threading.Lock()
        self._prefix: bytes | None = None
        self._identity: EmbedderIdentity | None = None
        self.hits = 0
        self.misses = 0

    def __getattr__(self, name: str) -> Any:  # tokenizer, max_tokens, count_tokens, batch_size
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def identity(self) -> EmbedderIdentity:
        if self._identity is None:  # asked per query by retrieve(); fixed for an embedder
            self._identity = self.inner.identity
        return self._identity

    def _key(self, text: str) -> bytes:
        if self._prefix is None:
            # The whole identity: the revision names the weights and the backend that ran them.
            self._prefix = self.identity.model_dump_json().encode() + b"\0"
        return hashlib.sha256(self._prefix + text.encode("utf-8", "surrogatepass")).digest()

    def _stored(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = keys[start:start + 500]
                marks = ",".join("?" * len(part))
                for key, blob in self._db.execute(
                        f"SELECT key, v FROM vectors WHERE key IN ({marks})", part):
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def embed_array(self, texts: Iterable[str]) -> np.ndarray:
        texts = list(texts)
        keys = [self._key(t) for t in texts]
        found = self._stored(keys)
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        self.hits += len(keys) - len(missing)
        self.misses += len(missing)
        index = {k: i for i, k in enumerate(keys)}
        missing.sort(key=lambda k: len(texts[index[k]]))  # similar lengths: little padding
        step = max(int(getattr(self.inner, "batch_size", 32) or 32), 1)
        for start in range(0, len(missing), step):  # saved per batch: an interrupted run
            part = missing[start:start + step]      # loses at most one batch of work
            fresh = np.asarray(self.inner.embed_array([texts[index[k]] for k in part]),
                               dtype=np.float32)
            with self._lock:
                self._db.execute("BEGIN")
                self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                                     [(k, v.tobytes()) for k, v in zip(part, fresh)])
                self._db.execute("COMMIT")
            found.update(zip(part, fresh))
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        return np.vstack([found[k] for k in keys]).astype(np.float32, copy=False)

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]:
        rows: list[list[float]] = self.embed_array(texts).tolist()
        return rows

    def embed(self, text: str) -> list[float]:
        row: list[float] = self.embed_array([text])[0].tolist()
        return row

    def close(self) -> None:
        self._db.close()

    def __repr__(self) -> str:
        return f"<CachedEmbedder {self.inner!r} at {self.path}>"


# ------------------------------------------------------------------------------- fusion studies

def collect_rankings(dataset: BeirDataset, split: str, ctx: Context, *, store: Any = None,
                     depth: int = CHUNK_DEPTH, limit: int | None = None) -> Rankings:
    """Each query's vector and keyword chunk rankings, as ``retrieve`` fuses them.

    Returns ``{query id: {"vector": Ranking, "keyword": Ranking}}`` with ``depth`` hits each
    and each ranking's quality set as ``retrieve`` sets it. Fusing these with a fusion function
    is what ``retrieve(mode="hybrid", k=depth, fusion=...)`` does, without searching again per
    fusion setting (see :func:`fused_run`).
    """
    vectors = store if store is not None else ctx.vectors
    qrels = dataset.split(split)
    out: Rankings = {}
    for query_id in list(qrels)[:limit]:
        text = dataset.queries[query_id]
        found = retrieve(text, ctx, mode="vector", k=depth, vector_store=vectors)
        keyword = keyword_index(vectors).keyword_search(text, depth)
        # Vector mode scores every hit; the check only tells the type checker so.
        scored = [(h.iri, float(h.score)) for h in found if h.score is not None]
        quality, about = keyword_evidence(text, vectors, keyword)
        out[query_id] = {
            "vector": Ranking("vector", scored, quality=scored[0][1] if scored else None),
            "keyword": Ranking("keyword", [(h.id, float(h.score)) for h in keyword],
                               quality=quality, query=about),
        }
    return out


def fused_run(rankings: Mapping[str, Mapping[str, Ranking]], fusion: FusionFn | None,
              doc_of: Mapping[str, str], *, only: str | None = None,
              depth: int = DOC_DEPTH) -> dict[str, list[str]]:
    """Document runs from collected rankings: one ranking (``only``) or their fusion."""
    if only is None and fusion is None:
        raise ValueError("fused_run needs a fusion, or only=<ranking name>")
    run = {}
    for query_id, lists in rankings.items():
        if only is not None:
            hits = lists[only].hits
        else:
            assert fusion is not None  # checked above, for the type checker
            hits = fusion(list(lists.values()))
        run[query_id] = max_pool(hits, doc_of, depth)
    return run


def corrupt(text: str, rate: float, seed: int = 0) -> str:
    """``text`` with each letter replaced, with probability ``rate``, by a random letter.

    Deterministic for a given text, rate and seed (a typo/OCR-noise model).

    >>> corrupt("keyword ranking", 0.0)
    'keyword ranking'
    >>> corrupt("keyword ranking", 1.0) != "keyword ranking"
    True
    """
    if rate <= 0:
        return text
    digest = hashlib.sha256(f"{seed}\0{text}".encode("utf-8", "surrogatepass")).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    flips = rng.random(len(text)) < rate
    letters = rng.integers(0, 26, len(text))
    return "".join(chr(97 + int(letters[i])) if flips[i] and c.isalpha() else c
                   for i, c in enumerate(text))


def derived_store(store: VectorStore, *, text: Callable[[str], str] | None = None,
                  vector_noise: float = 0.0, seed: int = 0) -> SqliteVecStore:
    """An in-memory copy of ``store``'s live rows with their keyword text rewritten by
    ``text`` and/or Gaussian noise of norm ~``vector_noise`` added to their vectors.

    For "one poor ranking" experiments: the other ranking stays exactly as it was.
    """
    copy = SqliteVecStore(":memory:", dim=store.dim, embedder=store.embedder_identity)
    rng = np.random.default_rng(seed)
    ids = store.all_ids()
    for start in range(0, len(ids), 2000):
        rows = store.get(ids[start:start + 2000])
        matrix = np.asarray([r.vector for r in rows], dtype=np.float32)
        if vector_noise:
            noise = rng.standard_normal(matrix.shape).astype(np.float32)
            matrix = matrix + vector_noise * noise / np.sqrt(matrix.shape[1])
        metas = []
        for r in rows:
            meta = dict(r.metadata)
            if text is not None:
                meta["text"] = text(str(meta.get("text") or meta.get("snippet") or ""))
            metas.append(meta)
        copy.add_many([r.id for r in rows], matrix, metas)
    return copy

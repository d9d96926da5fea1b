"""PgVectorStore's size on the server beside SqliteVecStore's file, for docs/scale.md's sizing.

benchmarks/stores.py's corpus (clustered 384-d unit vectors, ``doc_iri`` and a two-word
``snippet`` per chunk) is loaded into a PgVectorStore (exact search: the table, its B-tree
indexes and the keyword index) and a file-backed SqliteVecStore; then the HNSW index is built
(``hnsw=True``) and its recall@10 measured (``measure_recall``). Prints the bytes of every
relation (``pg_relation_size``: heap, TOAST, each index) and of the file. No timings.

    .venv/bin/python benchmarks/pg_sizes.py               # 100,000 chunks
    .venv/bin/python benchmarks/pg_sizes.py --chunks 2000 # smoke run
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np
from hybrid import chunk_iri, doc_iri, make_corpus

from trails.testing.servers.postgres import PostgresServer
from trails.vector.stores.pgvector import PgVectorStore
from trails.vector.stores.sqlite_vec import SqliteVecStore

TABLE = "sizes"
BATCH = 20_000


def relations(store: PgVectorStore) -> list[tuple[str, int]]:
    """(relation, bytes) for the store's tables, their TOAST and every index, largest first."""
    def read(conn):
        return conn.execute(
            "SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relname LIKE %s"
            " UNION ALL SELECT c.relname || ' (TOAST)', pg_relation_size(c.reltoastrelid)"
            " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = current_schema() AND c.relname LIKE %s AND c.reltoastrelid <> 0"
            " ORDER BY 2 DESC", (TABLE + "%", TABLE + "%")).fetchall()

    return [(name, int(size)) for name, size in store._run(read)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    n, load_before = args.chunks, os.getloadavg()[0]
    vectors, _bucket, _qs = make_corpus(n, 1, np.random.default_rng(args.seed))
    ids = [chunk_iri(i) for i in range(n)]
    metas = [{"doc_iri": doc_iri(i // 10), "snippet": f"chunk {i}"} for i in range(n)]
    with PostgresServer() as server, tempfile.TemporaryDirectory() as tmp:
        dsn = server.new_schema()
        store = PgVectorStore(dsn, table=TABLE, dim=vectors.shape[1])
        embedded = SqliteVecStore(os.path.join(tmp, "vectors.db"), dim=vectors.shape[1])
        for lo in range(0, n, BATCH):
            for s in (store, embedded):
                s.add_many(ids[lo:lo + BATCH], vectors[lo:lo + BATCH], metas[lo:lo + BATCH])
        embedded.close()
        # The SQLite file and whatever the store keeps beside it (its vector matrix...).
        file_bytes = sum(os.path.getsize(os.path.join(d, f))
                         for d, _, files in os.walk(tmp) for f in files)
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:  # VACUUM runs outside a transaction
            conn.execute("VACUUM ANALYZE " + TABLE)
        exact = relations(store)
        store.close()
        # Building the index takes minutes at 100,000 rows on a busy machine (the open builds
        # it without the store's statement timeout).
        started = time.perf_counter()
        store = PgVectorStore(dsn, table=TABLE, hnsw=True)
        build_s = time.perf_counter() - started
        recall = store.measure_recall(queries=50, k=10)
        indexed = relations(store)
        store.close()
    print(f"{n:,} chunks of {vectors.shape[1]}-d float32; load average {load_before:.1f} before,"
          f" {os.getloadavg()[0]:.1f} after")
    for name, size in indexed:
        print(f"  {name:40s} {size / 2**20:10.1f} MB {size / n:8,.0f} B/chunk")
    exact_total = sum(size for _, size in exact)
    hnsw = sum(size for name, size in indexed if name.endswith("__hnsw"))
    print(f"pgvector exact path (tables, TOAST, B-trees, keyword index): {exact_total / 2**20:,.1f}"
          f" MB, {exact_total / n:,.0f} B/chunk")
    print(f"pgvector HNSW index: {hnsw / 2**20:,.1f} MB, {hnsw / n:,.0f} B/chunk; "
          f"recall@10 {recall:.3f} (50 queries); built in {build_s:.0f} s")
    print(f"SqliteVecStore files: {file_bytes / 2**20:,.1f} MB, {file_bytes / n:,.0f} B/chunk")
    return 0


if __name__ == "__main__":
    sys.exit(main())

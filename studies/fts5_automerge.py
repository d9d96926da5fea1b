"""FTS5's ``automerge`` at its default (4) against 16 (ADR 0036, seventh amendment): the cost of
an insert as the keyword index grows, the phrase queries FTS5 answers, and the index's size.

    python benchmarks/scale.py ...                        # once: a large context
    python studies/fts5_automerge.py CONTEXT/vectors.db --out /tmp/automerge

Every live chunk text of the store is inserted, in transactions of ``--batch`` rows (one
ingest batch), into a contentless FTS5 table with the store's tokenizer, once per setting,
one after the other; then each index answers the same two-word phrases (drawn from the
texts), the settings alternating. Timings are wall-clock on a shared machine: compare the two
columns of one run, not runs.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import time
from pathlib import Path

import apsw

# The store's keyword tokenizer (KEYWORD_TOKENIZER in its schema).
TOKENIZER = "porter unicode61 remove_diacritics 2"
SETTINGS = (4, 16)
BANDS = ((0, 117_000), (400_000, 600_000), (900_000, 1_000_000), (1_100_000, 10**12))
QUERY = "SELECT rowid, bm25(k) AS s FROM k WHERE k MATCH ? ORDER BY s LIMIT 10"


def build(texts: list[str], path: Path, merge: int, batch: int) -> list[tuple[int, float]]:
    """(rows so far, ms a row) of each transaction, inserting ``texts`` at ``automerge``."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    db = apsw.Connection(str(path))
    db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
    db.execute("CREATE VIRTUAL TABLE k USING fts5(text, content = '', contentless_delete = 1,"
               f" tokenize = '{TOKENIZER}')")
    db.execute("INSERT INTO k(k, rank) VALUES ('automerge', ?)", (merge,))
    timings = []
    for start in range(0, len(texts), batch):
        rows = [(start + i + 1, text) for i, text in enumerate(texts[start:start + batch])]
        began = time.perf_counter()
        with db:
            db.executemany("INSERT INTO k(rowid, text) VALUES (?, ?)", rows)
        timings.append((start + len(rows), (time.perf_counter() - began) * 1000 / len(rows)))
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return timings


def phrases(texts: list[str], count: int) -> list[str]:
    """Two adjacent words of random texts, as FTS5 phrases."""
    rng, words, found = random.Random(7), re.compile(r"[a-z]{4,}"), []
    while len(found) < count:
        seen = words.findall(rng.choice(texts).lower())
        if len(seen) > 3:
            i = rng.randrange(len(seen) - 1)
            found.append(f'"{seen[i]} {seen[i + 1]}"')
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("store", help="a store file (a context's vectors.db)")
    parser.add_argument("--out", default="automerge-study", help="where the indexes are built")
    parser.add_argument("--batch", type=int, default=11_700)
    parser.add_argument("--phrases", type=int, default=60)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    source = apsw.Connection(args.store, flags=apsw.SQLITE_OPEN_READONLY)
    texts = [t for (t,) in source.execute(
        "SELECT text FROM items WHERE pending = 0 AND text IS NOT NULL ORDER BY rowid")]
    print(f"{len(texts):,} texts")
    paths = {merge: Path(args.out) / f"automerge{merge}.db" for merge in SETTINGS}
    for merge in SETTINGS:
        timings = build(texts, paths[merge], merge, args.batch)
        bands = [statistics.fmean(ms for n, ms in timings if low < n <= high) if any(
            low < n <= high for n, _ in timings) else float("nan") for low, high in BANDS]
        print(f"automerge {merge}: insert ms a row by band {[round(b, 3) for b in bands]},"
              f" {os.path.getsize(paths[merge]) / 1e6:.0f} MB")
    asked = phrases(texts, args.phrases)
    indexes = {merge: apsw.Connection(str(paths[merge]), flags=apsw.SQLITE_OPEN_READONLY)
               for merge in SETTINGS}
    for db in indexes.values():  # warm both
        for phrase in asked[:10]:
            db.execute(QUERY, (phrase,)).fetchall()
    times: dict[int, list[float]] = {merge: [] for merge in SETTINGS}
    for round_ in range(3):
        for phrase in asked:
            for merge in SETTINGS if round_ % 2 == 0 else SETTINGS[::-1]:
                began = time.perf_counter()
                indexes[merge].execute(QUERY, (phrase,)).fetchall()
                times[merge].append((time.perf_counter() - began) * 1000)
    for merge in SETTINGS:
        print(f"automerge {merge}: phrase query median {statistics.median(times[merge]):.1f} ms,"
              f" mean {statistics.fmean(times[merge]):.1f} ms")


if __name__ == "__main__":
    main()

"""DBpedia-Entity (BEIR version), as the 5,000-document sample of its test split that
agentset-ai/embedding-leaderboard commits: short entity and keyword queries against DBpedia
abstracts, graded judgements (2 highly relevant, 1 relevant, 0 judged not relevant).

    python benchmarks/datasets/build_dbpedia_entity.py [--out DIR] [--git-dir DIR]
                                                       [--anserini-git-dir DIR]

Source: ``datasets/dbpedia/`` of agentset-ai/embedding-leaderboard at commit 7a1376c
(``<the fetched copy of agentset-ai+embedding-leaderboard>`` once fetched). No copy of BEIR's
4.6-million-document corpus can be had here, so the sample is taken as it is: 50 test
queries, of which 40 have judgements, every document judged for those 40 (3,658) and 1,342
others. Kept: the 40 judged queries, their qrels rows unchanged, the 5,000 documents in the
source's order, each line re-serialised with ``json.dumps`` (byte-identical to the source).
The queries gain ``"metadata": {}`` as in BEIR's file. When castorini/anserini-tools is
fetched too, the qrels rows and query texts are checked against BEIR's test files there.

BEIR's DBpedia-Entity has a dev split (67 queries), but none of its judged documents are in
this sample: there is only ``test``. Tune elsewhere, or by cross-validation across sets.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _beir_out as out

NAME = "dbpedia-entity"
REPOSITORY = "agentset-ai/embedding-leaderboard"
COMMIT = "7a1376ca20a006b470e3bbb4a08b17affd380d90"
FOLDER = "datasets/dbpedia"
ANSERINI_QRELS = "qrels/qrels.beir-v1.0.0-dbpedia-entity.test.txt"
ANSERINI_TOPICS = "topics/topics.beir-v1.0.0-dbpedia-entity.test.tsv.gz"


def build(source: out.GitSource) -> out.BeirSet:
    return out.judged_test_set(source, FOLDER)


def main(argv: list[str] | None = None) -> int:
    return out.sample_main(argv, doc=__doc__, name=NAME, repository=REPOSITORY, commit=COMMIT,
                           folder=FOLDER, anserini_qrels=ANSERINI_QRELS,
                           anserini_topics=ANSERINI_TOPICS)


if __name__ == "__main__":
    sys.exit(main())

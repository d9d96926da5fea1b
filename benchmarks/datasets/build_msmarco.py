"""MS MARCO passage ranking, BEIR's test split (the TREC Deep Learning 2019 queries), as the
5,000-passage sample that agentset-ai/embedding-leaderboard commits: web search questions
against short web passages, graded judgements (3 perfectly, 2 highly, 1 related).

    python benchmarks/datasets/build_msmarco.py [--out DIR] [--git-dir DIR]
                                                [--anserini-git-dir DIR]

Source: ``datasets/msmarco/`` of agentset-ai/embedding-leaderboard at commit 7a1376c
(``<the fetched copy of agentset-ai+embedding-leaderboard>`` once fetched). No copy of the
8.8-million-passage collection can be had here, so the sample is taken as it is: 50
queries, the 43 judged TREC DL 2019 queries among them, every passage judged relevant
(score 1 to 3) for those 43 (4,102) and 898 others. The sample leaves out the 5,158 rows
judged 0 (no passage of theirs is in it); they change neither nDCG nor recall. Kept: the 43
judged queries, their qrels rows unchanged, the 5,000 passages in the source's order, each
line re-serialised with ``json.dumps`` as BEIR writes it (the source wrote 1,117 lines with
raw UTF-8 instead of ``\\u`` escapes: same text). When castorini/anserini-tools is fetched too,
the qrels rows and query texts are checked against TREC DL 2019's files there.

MS MARCO's own train and dev queries judge passages that are not in this sample: there is
only ``test``. Tune elsewhere, or by cross-validation across sets.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _beir_out as out

NAME = "msmarco"
REPOSITORY = "agentset-ai/embedding-leaderboard"
COMMIT = "7a1376ca20a006b470e3bbb4a08b17affd380d90"
FOLDER = "datasets/msmarco"
ANSERINI_QRELS = "qrels/qrels.dl19-passage.txt"
ANSERINI_TOPICS = "topics/topics.dl19-passage.txt"


def build(source: out.GitSource) -> out.BeirSet:
    return out.judged_test_set(source, FOLDER)


def main(argv: list[str] | None = None) -> int:
    return out.sample_main(argv, doc=__doc__, name=NAME, repository=REPOSITORY, commit=COMMIT,
                           folder=FOLDER, anserini_qrels=ANSERINI_QRELS,
                           anserini_topics=ANSERINI_TOPICS, positive_only=True)


if __name__ == "__main__":
    sys.exit(main())

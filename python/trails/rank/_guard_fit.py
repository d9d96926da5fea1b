"""The fitted numbers of ``fusion="auto"``'s guard
(:class:`trails.rank.fusion.GuardedFusion`), in the order of
:data:`trails.rank.fusion.EVIDENCE`.

Written by ``studies/guard_study.py fit --write`` (2026-11-24) from tuning splits only
(arguana-tv dev, nfcorpus@torch dev, scifact@torch train; each clean and with either ranking
damaged on purpose); see docs/fusion-study.md and adr/0022. Do not edit by hand: refit.
"""

# vector_quality, keyword_quality, agreement20, log_terms, idf_per_term, vector_drop10, keyword_drop10
CENTER = (0.530476, 0.532016, 0.220105, 3.35179, 4.456724, 0.209853, 0.422468)
SCALE = (0.253087, 0.41602, 0.201661, 1.362832, 1.347784, 0.087505, 0.204831)
COEFFICIENTS = (-1.698216, 0.464928, -0.14138, 0.321044, -0.420356, 0.012177, 0.401418)
BIAS = -0.317541

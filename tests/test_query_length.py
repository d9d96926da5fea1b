"""A question is bounded like every other input: a /retrieve body with a 10 MB query was
embedded, ranked and recorded whole (each such search wrote 10 MB to the audit log of a
context any read-only key could fill). Over MAX_QUERY_CHARS it is refused, naming the limit,
before anything runs or is recorded."""

from __future__ import annotations

import pytest

from service_support import bearer, seeded_client
from trails import retrieve
from trails.errors import InvalidArgumentError
from trails.retrieval.arguments import MAX_QUERY_CHARS
from trails.testing import fresh_context


def test_the_limit_is_a_question_not_a_document():
    assert MAX_QUERY_CHARS == 100_000


def test_a_query_over_the_limit_is_refused_by_name_and_one_at_it_runs():
    ctx = fresh_context()
    with pytest.raises(InvalidArgumentError, match="query is 100,001 characters long"):
        retrieve("a" * (MAX_QUERY_CHARS + 1), ctx)
    assert len(retrieve("a " * (MAX_QUERY_CHARS // 2), ctx)) == 0
    ctx.close()


def test_the_service_refuses_a_10_mb_query_and_records_nothing(tmp_path):
    with seeded_client(tmp_path / "kb") as (client, ctx):
        answer = client.post("/retrieve", json={"query": "glaciers " * 1_200_000},
                             headers=bearer("alpha-reader"))
        assert answer.status_code == 400
        assert "characters long" in answer.json()["message"]
        recorded = ctx.audit.activities(limit=None)  # the service's own warm-up search only
        assert [r.caller for r in recorded] == ["trails serve (warm-up)"]

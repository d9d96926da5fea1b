"""Loading a model quietly: no weight-loading progress bar, no tqdm warning, unless asked.

transformers draws a ``Loading weights 0/103`` bar (tqdm) on stderr each time it reads a
checkpoint, and in a notebook without ipywidgets tqdm adds a ``TqdmWarning`` (IProgress not
found). Neither tells a user of the packaged model anything, so both are switched off around
the load, and only there: the process's own progress bars and warnings come back afterwards.
``verbose=True`` (or ``TRAILS_MODEL_PROGRESS=1`` in the environment) shows them.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator

from trails._lazy import require

__all__ = ["PROGRESS_ENV", "quiet_loading", "wants_progress"]

PROGRESS_ENV = "TRAILS_MODEL_PROGRESS"


def wants_progress(verbose: bool | None) -> bool:
    """``verbose`` when given, else whether ``$TRAILS_MODEL_PROGRESS`` is set to a true value.

    >>> wants_progress(True), wants_progress(False)
    (True, False)
    """
    if verbose is not None:
        return verbose
    return os.environ.get(PROGRESS_ENV, "").strip().lower() in ("1", "true", "yes", "on")


@contextlib.contextmanager
def quiet_loading(verbose: bool | None = None) -> Iterator[None]:
    """Within the block, transformers draws no progress bar and logs errors only, and the
    warnings tqdm issues (its import in a notebook warns) are ignored; everything is restored
    on the way out, even on an exception. Import sentence-transformers inside the block: its
    import is what brings tqdm in.

    Raises:
        MissingExtraError: transformers is not installed (the model could not load anyway).
    """
    if wants_progress(verbose):
        yield
        return
    with warnings.catch_warnings():
        # By the module that issues them: tqdm may not be imported yet to name its class.
        warnings.filterwarnings("ignore", module=r"tqdm(\.|$)")
        transformers = require("transformers", "SentenceTransformerEmbedder")
        hf_logging = transformers.utils.logging
        bars_were_on = hf_logging.is_progress_bar_enabled()
        verbosity = hf_logging.get_verbosity()
        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
        try:
            yield
        finally:
            hf_logging.set_verbosity(verbosity)
            if bars_were_on:
                hf_logging.enable_progress_bar()

"""A result as a pandas or polars DataFrame: one row per hit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from trails._lazy import require
from trails.display.results import Hit, hit_passage

if TYPE_CHECKING:  # optional packages (trails[pandas], trails[polars]), named for the checker
    import pandas
    import polars

__all__ = ["COLUMNS", "hit_rows", "to_pandas", "to_polars"]

COLUMNS = ("rank", "iri", "score", "components", "title", "date", "source", "snippet",
           "document")


def hit_rows(hits: Sequence[Hit]) -> list[dict[str, Any]]:
    """One plain dict per hit, in rank order (rank from 1), with the :data:`COLUMNS` keys."""
    return [{"rank": rank, "iri": hit.iri, "score": hit.score,
             "components": dict(hit.components), "title": hit.title,
             "date": None if hit.date is None else hit.date.isoformat(),
             "source": hit.source, "snippet": hit_passage(hit), "document": hit.document}
            for rank, hit in enumerate(hits, start=1)]


def to_pandas(hits: Sequence[Hit]) -> pandas.DataFrame:
    """The hits as a ``pandas.DataFrame`` (columns :data:`COLUMNS`, even with no hits).

    Raises:
        MissingExtraError: pandas is not installed (``pip install "trails[pandas]"``).
    """
    module = require("pandas", "RetrievalResult.to_pandas()")
    frame: pandas.DataFrame = module.DataFrame(hit_rows(hits), columns=list(COLUMNS))
    return frame


def to_polars(hits: Sequence[Hit]) -> polars.DataFrame:
    """The hits as a ``polars.DataFrame`` (columns :data:`COLUMNS`; ``components`` a struct
    of floats). Every other column has the same type whatever the hits hold (text stays
    ``String`` when no hit has a source, even with no hits), so frames of several searches
    concatenate.

    Raises:
        MissingExtraError: polars is not installed (``pip install "trails[polars]"``).
    """
    module = require("polars", "RetrievalResult.to_polars()")
    rows = hit_rows(hits)
    # Components differ between hits (a rank only some rankings gave): one struct field each.
    names = sorted({name for row in rows for name in row["components"]})
    for row in rows:
        row["components"] = ({name: row["components"].get(name) for name in names}
                             if names else None)
    text = module.String
    schema = {"rank": module.Int64, "iri": text, "score": module.Float64,
              "components": (module.Struct({name: module.Float64 for name in names})
                             if names else module.Null),
              "title": text, "date": text, "source": text, "snippet": text, "document": text}
    # Not strict: a component a custom step set to something else than a number is null.
    frame: polars.DataFrame = module.DataFrame(rows, schema=schema, strict=False)
    return frame

"""How trails objects look in a notebook and a terminal (layer 0).

Plain functions from plain values to HTML or text, so that the records at the bottom of the
package (``trails.records``) and the objects above them (``Context``, ``IngestionStats``,
``QueryResult``, CONSTRUCT triples) show themselves the same way without importing each
other. Every piece of text that reaches HTML passes through :func:`markup.escape`; nothing
here emits a ``<script>`` or an event attribute.

- :mod:`markup`: escaping, short IRI links, score bars, tables, the shared style.
- :mod:`snippets`: passages as the plain words their Markdown renders to, cut on a word
  boundary with an ellipsis (never inside a Markdown construct), the query's terms marked.
- :mod:`results`: hits and results, as HTML and as text; ``hit_passage``, the one passage
  every display shows of a hit.
- :mod:`tables`: key-value summaries (a context, ingest totals), SELECT rows, triples.
- :mod:`frames`: a result as pandas or polars rows.
"""

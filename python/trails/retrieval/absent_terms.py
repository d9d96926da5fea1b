"""Why a filter selected nothing, when it names a term the searched scopes never hold.

``?doc schema:dateCreatd ?d`` (a typo) or ``VALUES ?doc { <trails://local/doc/a.mdd> }``
selects nothing, and the caller would read "0 hits" as an answer. Only for a filter that
selected nothing, :func:`absent_term_notes` asks the graph, for each IRI or prefixed name the
filter's patterns name (not those inside FILTER or BIND expressions, datatypes, nor graph
names), whether any triple of the searched scopes holds it, as subject, predicate or object.
Each one that none holds gets a note, with the closest predicate or type that the scopes do
use (read from a sample of their typed subjects) when one is close. The probes are ASK
queries on the graph's indexes; a term the probe cannot read gives no note.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from trails.kg.base import KnowledgeGraph, select
from trails.kg.sparql import PREFIXES
from trails.kg.sparql_text import code_only, iris_only
from trails.kg.variables import _expression_spans

__all__ = ["absent_term_notes"]

_PREFIXED = re.compile(r"(?<![\w?$:.%-])([A-Za-z][\w.-]*)?:([\w%][\w.%-]*)?")
_IRI = re.compile(r"<[^<>\s]*>")
_BODY = re.compile(r"\bSELECT\b", re.IGNORECASE)
_NOT_A_NODE = re.compile(r"(\^\^|\bGRAPH)\s*$", re.IGNORECASE)  # a datatype, a graph's name
_SAMPLE = 2000  # typed subjects sampled: their predicates and types are the near names offered


def absent_term_notes(kg: KnowledgeGraph, sparql_filter: str,
                      scopes: Sequence[str] | None) -> list[str]:
    """A note for each term the filter's patterns name that no triple of ``scopes`` holds."""
    body = _BODY.search(code_only(sparql_filter))
    if body is None:
        return []
    prologue = sparql_filter[:body.start()]
    notes = []
    near: list[str] | None = None
    for term in _pattern_terms(sparql_filter, body.start()):
        try:
            found = kg.query(f"{prologue}\nASK {{ {{ {term} ?p ?o }} UNION {{ ?s {term} ?o }}"
                             f" UNION {{ ?s ?p {term} }} }}", scopes=scopes)
            iri = str(select(kg, f"{prologue}\nSELECT ?t WHERE {{ BIND({term} AS ?t) }}",
                             scopes=scopes)[0]["t"])
        except Exception:  # noqa: BLE001, S112 - a term the probe cannot read says nothing
            continue
        if found is not False:
            continue
        if near is None:
            near = _near_names(kg, scopes)
        close = _closest(iri, near)
        where = (f"the scope{'s' if len(scopes) > 1 else ''} {', '.join(scopes)}" if scopes
                 else "the graph")
        notes.append(f"nothing matched: {term} is in no triple of {where}"
                     + (f"; did you mean {_short(close[0])}?" if close else
                        "; check its spelling and prefix, and the scopes searched"))
    return notes


def _pattern_terms(text: str, start: int) -> list[str]:
    """The IRIs and prefixed names the query's patterns name, as written, in order."""
    code, iris = code_only(text), iris_only(text)
    spans = list(_expression_spans(code))
    masked = list(code)
    for begin, end in spans:
        masked[begin:end] = " " * (end - begin)
    plain = "".join(masked)
    terms: list[tuple[int, str]] = []
    for match in _IRI.finditer(iris, start):
        at = match.start()
        if not any(b <= at < e for b, e in spans) and not _NOT_A_NODE.search(plain[:at]):
            terms.append((at, match.group()))
    for match in _PREFIXED.finditer(plain, start):
        if match.group(2) is None or _NOT_A_NODE.search(plain[:match.start()]):
            continue
        terms.append((match.start(), match.group().rstrip(".")))
    return list(dict.fromkeys(term for _, term in sorted(terms)))


def _near_names(kg: KnowledgeGraph, scopes: Sequence[str] | None) -> list[str]:
    """Predicates and types of a sample of the scopes' typed subjects."""
    try:
        # Documents and chunks first (a chunk's many siblings would fill any plain sample),
        # then any subjects, with their types.
        rows = select(kg, "SELECT DISTINCT ?p ?t WHERE { { "
                      f"{{ SELECT ?s WHERE {{ ?s a trails:Document }} LIMIT {_SAMPLE // 4} }} UNION "
                      f"{{ SELECT ?s WHERE {{ ?s a trails:Chunk }} LIMIT {_SAMPLE // 40} }} UNION "
                      f"{{ SELECT ?s WHERE {{ ?s a ?any }} LIMIT {_SAMPLE} }} }} "
                      "?s ?p ?o OPTIONAL { ?s a ?t } }", scopes=scopes)
    except Exception:  # noqa: BLE001 - no sample, no suggestion
        return []
    return sorted({str(r[k]) for r in rows for k in ("p", "t") if r[k] is not None})


def _closest(iri: str, names: list[str]) -> list[str]:
    """The name nearest ``iri``: by local name among those of its namespace (a shared
    namespace would make any two of them look alike), else by the whole IRI."""
    space, local = _split(iri)
    locals_ = {_split(name)[1]: name for name in names if _split(name)[0] == space}
    close = difflib.get_close_matches(local, list(locals_), n=1, cutoff=0.75)
    if close:
        return [locals_[close[0]]]
    return difflib.get_close_matches(iri, [n for n in names if _split(n)[0] != space], n=1,
                                     cutoff=0.85)


def _split(iri: str) -> tuple[str, str]:
    cut = max(iri.rfind("#"), iri.rfind("/")) + 1
    return iri[:cut], iri[cut:]


def _short(iri: str) -> str:
    for prefix, base in PREFIXES.items():
        if iri.startswith(base) and re.fullmatch(r"[\w%-]+", iri[len(base):]):
            return f"{prefix}:{iri[len(base):]}"
    return f"<{iri}>"

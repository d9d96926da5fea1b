"""YAML front matter, read with bounded work whatever the input.

A safe loader refuses Python objects but not size: 448 bytes of anchors and aliases ("billion
laughs") describe billions of values, an alias inside its own anchor describes an infinite
one, and YAML parsers slow down with the square of the nesting depth (and overflow the C
stack composing it). So before anything is constructed, one pass over the parser's events
(no tree) measures the front matter as if every alias were expanded, and refuses it, as a
``ValueError`` that fails that document alone, when it is:

- longer than :data:`MAX_FRONT_MATTER_CHARS`;
- nested deeper than :data:`MAX_DEPTH` (lists in maps in lists...);
- more than :data:`MAX_VALUES` values once aliases are expanded;
- holding an alias to an anchor that contains it (a value that contains itself).

The pass stops at the first limit it crosses, so its work is linear in the text.

>>> load_front_matter("title: Guide\\ntags: [a, b]")
{'title': 'Guide', 'tags': ['a', 'b']}
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["MAX_DEPTH", "MAX_FRONT_MATTER_CHARS", "MAX_VALUES", "load_front_matter"]

MAX_FRONT_MATTER_CHARS = 1_000_000
MAX_DEPTH = 32
MAX_VALUES = 100_000

# libyaml's parser when PyYAML was built with it (much faster), else the pure-Python one.
_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _FrontMatterLoader(_SafeLoader):  # type: ignore[valid-type,misc]
    """YAML's safe loader, except that a value shaped like a date that is no date
    (``2024-13-45``) stays a string instead of failing the whole front matter: the pipeline
    then reports it as a warning and the document is still ingested."""

    def construct_yaml_timestamp(self, node: yaml.ScalarNode) -> Any:
        try:
            return super().construct_yaml_timestamp(node)
        except ValueError:
            return self.construct_scalar(node)


_FrontMatterLoader.add_constructor("tag:yaml.org,2002:timestamp",
                                   _FrontMatterLoader.construct_yaml_timestamp)

_OPEN = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSE = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


def load_front_matter(text: str) -> Any:
    """The YAML value of ``text`` (front matter without its ``---`` lines).

    Raises:
        ValueError: the YAML does not parse, or crosses one of the module's limits.
    """
    if len(text) > MAX_FRONT_MATTER_CHARS:
        raise ValueError(f"the front matter is {len(text):,} characters long, more than "
                         f"{MAX_FRONT_MATTER_CHARS:,}; keep large data in the body")
    try:
        _measure(text)
        return yaml.load(text, Loader=_FrontMatterLoader)
    except yaml.YAMLError as exc:
        raise ValueError(yaml_problem(text, exc)) from exc


def yaml_problem(text: str, exc: yaml.YAMLError) -> str:
    """One line: where the front matter stops parsing, the line, what YAML found, what to do."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is None:
        return f"invalid YAML front matter: {problem}. {_QUOTING}"
    lines = text.splitlines() or [""]
    line = lines[min(mark.line, len(lines) - 1)]
    hint = ("indent with spaces: YAML does not allow tabs" if "\t" in line
            else _QUOTING)
    return (f"invalid YAML front matter at line {mark.line + 1}, column {mark.column + 1} "
            f"({line.strip()!r}): {problem}. {hint}")


_QUOTING = ("A value that holds ': ' or ' #', or starts with one of [ ] { } , & * ! | > ' \" "
            "% @ `, must be quoted: write key: \"the value\"")


def _measure(text: str) -> None:
    """Walk the events once; raise ValueError at the first limit crossed."""
    loader = _FrontMatterLoader(text)
    try:
        sizes: dict[str, int] = {}  # anchor -> values in its node, aliases expanded
        open_anchors: list[str | None] = []  # of the collections being read, innermost last
        counts: list[int] = [0]  # values in each open collection; [0] is the whole stream
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, _OPEN):
                if len(open_anchors) >= MAX_DEPTH:
                    raise ValueError(f"the front matter nests deeper than {MAX_DEPTH} levels; "
                                     "flatten it")
                open_anchors.append(event.anchor)
                counts.append(1)
                continue
            if isinstance(event, _CLOSE):
                anchor = open_anchors.pop()
                size = counts.pop()
                if anchor is not None:
                    sizes[anchor] = size
            elif isinstance(event, yaml.ScalarEvent):
                size = 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            elif isinstance(event, yaml.AliasEvent):
                if event.anchor in open_anchors:
                    raise ValueError(f"the front matter's alias *{event.anchor} lies inside "
                                     f"its own anchor &{event.anchor}: a value that contains "
                                     "itself")
                size = sizes.get(event.anchor or "", 1)  # an unknown one fails to compose below
            else:
                continue  # stream and document boundaries
            counts[-1] += size
            if counts[-1] > MAX_VALUES:
                raise ValueError(f"the front matter holds more than {MAX_VALUES:,} values once "
                                 "its aliases are expanded; keep large data in the body")
    finally:
        loader.dispose()

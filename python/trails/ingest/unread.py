"""The files of a walked folder that ingest left out for their type, said in one line.

A folder walked without ``include`` gives the files of the types ingest reads (.md .txt
.html .jsonl .pdf); the others (.csv, .docx, a file with no suffix) are left out. When
some are, ``trails ingest`` says how many and of which types in a note after its summary,
so a folder of mostly .docx files is not read as "3 documents ingested" without a word.
The note is no warning and no failure: the run is what was asked.

    >>> unread_note({".csv": 2, "": 1, ".docx": 3})
    "note: 6 files left out, of types ingest does not read: 3 .docx, 2 .csv, 1 with no suffix; to read text files of another type, name every pattern to read with --include (--include '*.md' --include '*.csv'): include replaces the types read by default"
    >>> unread_note({".docx": 2})
    'note: 2 files left out, of types ingest does not read: 2 .docx; convert them to .md, .txt, .html or .pdf to ingest them'
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["unread_note"]

_SHOWN = 6  # types named; the others are counted together


def unread_note(unread: Mapping[str, int]) -> str | None:
    """The note for the files left out for their type (suffix, lower case -> files), or None
    when none were.

    >>> unread_note({}) is None
    True
    >>> unread_note({".csv": 1})
    "note: 1 file left out, of a type ingest does not read: 1 .csv; to read text files of another type, name every pattern to read with --include (--include '*.md' --include '*.csv'): include replaces the types read by default"
    """
    counts = sorted(((n, suffix) for suffix, n in unread.items() if n > 0),
                    key=lambda item: (-item[0], item[1]))
    if not counts:
        return None
    total = sum(n for n, _ in counts)
    named = [f"{n:,} {suffix}" if suffix else f"{n:,} with no suffix"
             for n, suffix in counts[:_SHOWN]]
    if len(counts) > _SHOWN:
        rest = counts[_SHOWN:]
        named.append(f"{sum(n for n, _ in rest):,} of {len(rest)} other types")
    files, types = ("file", "a type") if total == 1 else ("files", "types")
    said = f"note: {total:,} {files} left out, of {types} ingest does not read: {', '.join(named)}"
    example = next((suffix for _, suffix in counts if suffix and suffix not in _BINARY), None)
    if example is None:  # no text to read: .docx, images
        return f"{said}; convert them to .md, .txt, .html or .pdf to ingest them"
    return (f"{said}; to read text files of another type, name every pattern to read with "
            f"--include (--include '*.md' --include '*{example}'): include replaces the types "
            "read by default")


# Suffixes of files that are no text: never suggested to be read as text.
_BINARY = frozenset((".doc", ".docx", ".odt", ".rtf", ".xls", ".xlsx", ".ods", ".ppt", ".pptx",
                     ".odp", ".epub", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg",
                     ".zip", ".gz", ".tar", ".7z", ".exe", ".bin", ".mp3", ".mp4"))

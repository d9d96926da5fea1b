"""Bytes and file names into text: what :class:`~trails.ingest.loaders.FileLoader` reads,
and why a file could not be read.

A file is UTF-8 (a BOM dropped), or UTF-16 or UTF-32 when it starts with that encoding's
byte order mark (what Windows tools write as "Unicode"): the mark says which, so nothing is
guessed; such a file holding a NUL character is binary data after bytes that looked like a
mark, and fails. Anything else that is no UTF-8 fails its file with the byte and offset to look at.
Line endings become ``\\n``, so a content hash is the same on every machine::

    >>> decode("Olá\\r\\n".encode("utf-16"))
    'Olá\\n'
"""

from __future__ import annotations

import codecs
import os

__all__ = ["decode", "decode_failure", "read_failure", "undecodable_name",
           "unexpected_failure"]

# UTF-32 first: its little-endian mark starts with UTF-16's.
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
         (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def decode(data: bytes) -> str:
    """The text of a file's bytes, one newline convention.

    Raises:
        UnicodeDecodeError: the bytes are not text in the encoding they are read as.

    >>> decode(b"\\xef\\xbb\\xbfa\\rb")
    'a\\nb'
    """
    encoding = next((name for bom, name in _BOMS if data.startswith(bom)), "utf-8-sig")
    text = data.decode(encoding)
    if encoding != "utf-8-sig" and "\x00" in text:  # binary data after what looked a mark
        unit = 2 if encoding == "utf-16" else 4
        at = next(i for i in range(unit, len(data), unit) if not any(data[i:i + unit]))
        raise UnicodeDecodeError(encoding, data, at, at + unit, "a NUL character")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def decode_failure(exc: UnicodeDecodeError) -> str:
    """Why a file could not be read as text, and what to do about it.

    >>> decode_failure(UnicodeDecodeError("utf-8", b"caf\\xe9", 3, 4, "invalid"))
    'not UTF-8 text (byte 0xe9 at offset 3); convert the file to UTF-8 first'
    """
    name = next((n for n in ("UTF-16", "UTF-32") if exc.encoding.upper().startswith(n)),
                "UTF-8")  # the codec names its byte order: utf-16-le
    marked = "" if name == "UTF-8" else f", though it starts with a {name} byte order mark"
    return (f"not {name} text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}"
            f"{marked}); convert the file to UTF-8 first")


def undecodable_name(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot name a document, or None: a file or folder name on it (or above
    it) that is no UTF-8 (written by an old archive tool, say) reaches Python with its bytes
    escaped, and no IRI, id or source can hold it.

    >>> undecodable_name(os.fsdecode(b"notes/caf\\xe9.md"))
    "the file name is not UTF-8 (b'notes/caf\\\\xe9.md'); rename it (convmv -f latin1 -t utf-8 renames a folder's files)"
    >>> undecodable_name("notes/café.md") is None
    True
    """
    try:
        os.path.abspath(path).encode("utf-8")
    except UnicodeEncodeError:
        return (f"the file name is not UTF-8 ({os.fsencode(path)!r}); rename it "
                "(convmv -f latin1 -t utf-8 renames a folder's files)")
    return None


def read_failure(exc: Exception) -> str:
    """Why a file could not be read (an ``OSError``, a ``ValueError`` a parser raised)."""
    if isinstance(exc, UnicodeDecodeError):
        return decode_failure(exc)
    if isinstance(exc, FileNotFoundError):
        name = exc.filename
        if name is not None and not os.path.islink(name):
            return "no such file: it was deleted or moved after the folder was listed"
        return "no such file (a broken link?)"
    if isinstance(exc, PermissionError):
        return "permission denied"
    return str(exc) or type(exc).__name__


def unexpected_failure(exc: Exception) -> str:
    """Why a parser failed on a file in a way it does not name itself."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to read (thousands of levels); flatten it"
    return f"cannot parse: {type(exc).__name__}: {exc}"

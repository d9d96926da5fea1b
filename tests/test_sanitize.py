"""Sanitizers: the regex PII redactor, and running sync or async sanitizers."""

from __future__ import annotations

import asyncio
import dataclasses
import doctest

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trails.ingest import sanitize
from trails.ingest.chunkers import SentenceChunker
from trails.ingest.document import Document
from trails.ingest.sanitize import RegexRedactor, apply_sanitizer


@pytest.mark.parametrize(("text", "expected"), [
    ("Write to ann.lee+news@mail.example.co.uk today.", "Write to [EMAIL] today."),
    ("Call +49 30 1234567 now", "Call [PHONE] now"),
    ("Call (555) 123-4567 or 555.123.4567.", "Call [PHONE] or [PHONE]."),
    ("Call +1-202-555-0173.", "Call [PHONE]."),
    ("IBAN DE89 3704 0044 0532 0130 00 please", "IBAN [IBAN] please"),
    ("IBAN GB82WEST12345698765432.", "IBAN [IBAN]."),
])
def test_default_patterns_redact(text, expected):
    assert RegexRedactor().redact(text) == expected


@pytest.mark.parametrize("text", [
    "Met on 2024-01-05 at 12:30.",
    "Version 1.2.3 of the year 1999 cost 3.14 euros.",
    "Order 12345 to 10115 Berlin on 2024-01-05T10:00:00Z.",
    "Not an email: user at example dot com, nor @handle.",
])
def test_ordinary_text_is_left_alone(text):
    assert RegexRedactor().redact(text) == text


def test_custom_patterns_and_replacement():
    redactor = RegexRedactor({"TICKET": r"\bJIRA-\d+\b", "NAME": r"\bAnn\b"},
                             replacement="<{label}>")
    assert redactor.redact("Ann filed JIRA-42, a@b.io") == "<NAME> filed <TICKET>, a@b.io"
    assert "TICKET" in repr(redactor)


def test_first_listed_pattern_wins_at_the_same_place():
    both = {"LONG": r"abc\d+", "SHORT": r"abc"}
    assert RegexRedactor(both).redact("abc123") == "[LONG]"
    assert RegexRedactor(dict(reversed(both.items()))).redact("abc123") == "[SHORT]123"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"patterns": {"BAD": "("}}, "'BAD' is not a valid regular expression"),
    ({"patterns": {"G": r"(?P<x>a)"}}, "named groups"),
    ({"patterns": {}}, "at least one pattern"),
    ({"replacement": "[{kind}]"}, "only use the field {label}"),
])
def test_bad_arguments_are_value_errors(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("{", r"\{").replace("}", r"\}")
                       .replace("(", r"\(")):
        RegexRedactor(**kwargs)


def test_redactor_returns_a_new_document_with_the_rest_unchanged():
    original = Document("d", "src", "mail me: x@y.org", title="T", metadata={"k": 1})
    redacted = RegexRedactor()(original)
    assert redacted == dataclasses.replace(original, text="mail me: [EMAIL]")
    assert redacted.hash != original.hash
    assert original.text == "mail me: x@y.org"


def test_chunk_offsets_refer_to_the_sanitised_text():
    redacted = RegexRedactor()(Document("d", "s", "Ask bob@example.com. He knows."))
    chunks = SentenceChunker(max_chars=20, overlap=0).chunk(redacted)
    assert [c.text for c in chunks] == ["Ask [EMAIL].", "He knows."]
    assert all(redacted.text[c.start:c.end] == c.text for c in chunks)


PII_PIECES = ["1", "23", "456", "7890", " ", "-", ".", "(", ")", "+", "/", ":", "@", "a", "Bc",
              "x.org", "DE89", "WEST", "\n", "[", "]", "_"]
pii_like = st.lists(st.sampled_from(PII_PIECES), max_size=40).map("".join)


@given(st.one_of(pii_like, st.text(st.characters(exclude_categories=("Cs",)), max_size=200)))
@settings(max_examples=500, deadline=None)
def test_redaction_is_idempotent(text):
    """Nothing a pattern matches is left after one pass, and replacements match nothing."""
    redactor = RegexRedactor()
    once = redactor.redact(text)
    assert redactor.redact(once) == once


def test_apply_sanitizer_sync_async_and_wrong_results():
    document = Document("d", "s", "x@y.io")

    async def async_redact(doc: Document) -> Document:
        await asyncio.sleep(0)
        return RegexRedactor()(doc)

    assert asyncio.run(apply_sanitizer(RegexRedactor(), document)).text == "[EMAIL]"
    assert asyncio.run(apply_sanitizer(async_redact, document)).text == "[EMAIL]"
    assert asyncio.run(apply_sanitizer(lambda d: d, document)) is document
    with pytest.raises(TypeError, match="must return the"):
        asyncio.run(apply_sanitizer(lambda d: d.text, document))


def test_docstring_examples():
    assert doctest.testmod(sanitize).failed == 0

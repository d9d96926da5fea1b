"""A date that does not parse never makes a document vanish silently from date-scoped
searches: it is a warning event, counted in the summary, listed by verify(), and the
document is still ingested with the raw value kept."""

from __future__ import annotations

import datetime as dt

import pytest

from trails.ingest import Document, DocumentWarning, ingest, ingest_all
from trails.ingest.dates import date_created, date_problems
from trails.testing import fresh_context


@pytest.mark.parametrize("raw", ["not-a-date", "2024-13-45", "yesterday", "2024/05/01", 2024])
def test_a_bad_date_is_a_warning_and_the_document_stays(tmp_path, raw):
    (tmp_path / "a.md").write_text(f"---\ndate: {raw}\n---\nRails memo.\n")
    with fresh_context() as ctx:
        events = list(ingest(tmp_path, ctx=ctx))
        warnings = [e for e in events if isinstance(e, DocumentWarning)]
        assert len(warnings) == 1 and "date" in warnings[0].message
        assert str(raw) in warnings[0].message and "ISO 8601" in warnings[0].message
        assert ctx.kg.query("ASK { ?d a trails:Document ; meta:date ?v }")  # kept, raw
        assert not ctx.kg.query("ASK { ?d schema:dateCreated ?v }")
        report = ctx.verify()
        assert report.ok and len(report.unparsed_dates) == 1
        assert "warning: 1 documents with a date that does not parse" in report.summary()
        stats = ingest_all(tmp_path, ctx=ctx)
        assert len(stats.warnings) == 1 and "1 warning" in stats.summary()


@pytest.mark.parametrize("raw, expected", [
    ("2024-05-01", dt.date(2024, 5, 1)),
    ("2024-05-01T10:20:30", dt.datetime(2024, 5, 1, 10, 20, 30, tzinfo=dt.UTC)),  # UTC
    ("2024-05-01T10:20:30Z", dt.datetime(2024, 5, 1, 10, 20, 30, tzinfo=dt.UTC)),
    ("2024-05-01 10:20:30+02:00",
     dt.datetime(2024, 5, 1, 10, 20, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))),
    (" 2024-05-01 ", dt.date(2024, 5, 1)),
])
def test_iso_dates_in_every_form_parse(raw, expected):
    assert date_created({"date": raw}) == expected
    assert date_problems({"date": raw}) == []


def test_good_dates_give_no_warning():
    with fresh_context() as ctx:
        events = list(ingest([Document("a", "mem", "text", metadata={
            "date": dt.date(2024, 1, 2), "created": "2024-01-02"})], ctx=ctx))
        assert not [e for e in events if isinstance(e, DocumentWarning)]
        assert ctx.verify().unparsed_dates == []


@pytest.mark.parametrize("created", ["2023-01-01", "2024-01-02T00:00:00Z"])
def test_two_date_keys_that_disagree_are_a_warning_naming_the_one_used(created):
    with fresh_context() as ctx:
        events = list(ingest([Document("a", "mem", "text", metadata={
            "date": "2024-01-02", "created": created})], ctx=ctx))
        (warning,) = [e for e in events if isinstance(e, DocumentWarning)]
        assert "date: 2024-01-02" in warning.message and f"created: {created[:10]}" in warning.message
        assert "is created's" in warning.message

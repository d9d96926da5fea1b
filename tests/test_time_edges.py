"""Times at the edges: moments at the ends of the calendar, datetimes without an offset,
and the audit's ``as_of`` whatever the process's time zone."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trails import retrieve
from trails.context import Context
from trails.errors import InvalidArgumentError
from trails.ingest import Document, DocumentFailed, ingest, ingest_all
from trails.rank.recency import RecencyDecay
from trails.vector.embedders.mock import MockEmbedder

UTC = dt.UTC
WEST, EAST = dt.timezone(dt.timedelta(hours=-12)), dt.timezone(dt.timedelta(hours=14))


def context(retention: dict[str, str] | None = None) -> Context:
    base = Context.memory(MockEmbedder(dim=16))
    return Context(base.kg, base.vectors, base.embedder, retention=retention)


def documents(ctx: Context) -> list[str]:
    return ctx.kg.query("SELECT ?d WHERE { ?d a trails:Document }").column("d")


# -- the ends of the calendar -----------------------------------------------------------------

@pytest.mark.parametrize("now", [dt.datetime(9999, 12, 31, 23, tzinfo=WEST),
                                 dt.datetime(1, 1, 1, 0, tzinfo=EAST)])
def test_a_now_outside_the_utc_calendar_is_refused_by_name(now):
    with context() as ctx:
        with pytest.raises(InvalidArgumentError, match="now=.*years 1 to 9999"):
            retrieve("x", ctx, now=now)
        with pytest.raises(InvalidArgumentError, match="now=.*years 1 to 9999"):
            ctx.prune_expired(now=now, dry_run=True)


@pytest.mark.parametrize("value", ["9999-12-31T23:00:00-12:00", "0001-01-01T00:00:00+14:00",
                                   dt.datetime(9999, 12, 31, 23, tzinfo=WEST)])
def test_an_expiry_outside_the_utc_calendar_fails_that_document_alone(value):
    with context() as ctx:
        events = list(ingest([Document("bad", "bad.md", "text", metadata={"expires": value}),
                              Document("good", "good.md", "text")], ctx=ctx))
        failed = [e for e in events if isinstance(e, DocumentFailed)]
        assert [e.source for e in failed] == ["bad.md"]
        assert "expires" in failed[0].reason and "9999" in failed[0].reason
        assert documents(ctx) == ["trails://local/doc/good"]


def test_a_retention_rule_running_past_the_year_9999_keeps_the_document():
    with context(retention={"tmp": "P999999D"}) as ctx:
        assert ingest_all([Document("far", "far", "text", metadata={"date": "9000-01-01"}),
                           Document("near", "near", "text", metadata={"date": "2000-01-01"})],
                          ctx=ctx, scope="tmp").failed == 0
        rows = ctx.kg.query("SELECT ?d ?e WHERE { ?d trails:expires ?e }").rows
        # 2000-01-01 + 999,999 days is 4737-11-27; 9000-01-01 + that lies past 9999.
        assert [(row["d"], row["e"]) for row in rows] == [
            ("trails://local/scope/tmp/doc/near", dt.datetime(4737, 11, 27, tzinfo=UTC))]
        assert ctx.prune_expired(now=dt.datetime(9999, 12, 31, tzinfo=UTC), dry_run=True)[0].iri \
            .endswith("/near")


# -- a datetime without an offset -------------------------------------------------------------

SINCE = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d "
         "FILTER(?d >= ?since) }")
BEFORE = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d "
          "FILTER(?d < ?since) }")


@pytest.mark.parametrize("source", ["python", "text", "front matter"])
def test_a_date_without_an_offset_is_utc_for_filters_as_for_retention(tmp_path, source):
    """Five hours after midnight UTC: XSD leaves a dateTime without a zone incomparable with
    one within 14 hours of it, so both filters dropped it; read as UTC (as retention reads
    it), it is on one side of the boundary."""
    with context() as ctx:
        if source == "front matter":
            (tmp_path / "memo.md").write_text("---\ndate: 2024-01-01 05:00:00\n---\nRail memo.\n")
            assert ingest_all(tmp_path, ctx=ctx).failed == 0
        else:
            value = dt.datetime(2024, 1, 1, 5) if source == "python" else "2024-01-01T05:00:00"
            assert ingest_all([Document("memo", "memo", "Rail memo.", metadata={"date": value})],
                              ctx=ctx).failed == 0
        since = {"since": dt.datetime(2024, 1, 1, tzinfo=UTC)}
        after = retrieve("rail memo", ctx, mode="hybrid", sparql_filter=SINCE, bindings=since)
        before = retrieve("rail memo", ctx, mode="hybrid", sparql_filter=BEFORE, bindings=since)
        assert (len(after), len(before)) == (1, 0)
        assert after[0].date == dt.datetime(2024, 1, 1, 5, tzinfo=UTC)
        (written,) = ctx.kg.query("SELECT ?d WHERE { ?doc schema:dateCreated ?d }").column("d")
        assert written == dt.datetime(2024, 1, 1, 5, tzinfo=UTC)


# -- the audit's as_of, whatever the process's time zone ---------------------------------------

@pytest.fixture
def exotic_zone(monkeypatch):
    """The process in UTC+14 (its local midnight is 10:00 UTC the day before)."""
    time = pytest.importorskip("time")
    if not hasattr(time, "tzset"):
        pytest.skip("no time.tzset on this platform")
    monkeypatch.setenv("TZ", "Pacific/Kiritimati")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_as_of_is_recorded_in_utc_and_replayed_at_that_exact_moment(tmp_path, exotic_zone):
    from trails import replay

    expiry = dt.datetime(2030, 6, 1, tzinfo=UTC)
    at_expiry = dt.datetime(2030, 6, 1, 14, tzinfo=EAST)  # the same instant, in UTC+14
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as ctx:
        ingest_all([Document("a", "a", "pump seal notice", metadata={"expires": "2030-06-01"}),
                    Document("b", "b", "pump seal report")], ctx=ctx)
        before = retrieve("pump seal", ctx, k=5, now=at_expiry - dt.timedelta(microseconds=1))
        at = retrieve("pump seal", ctx, k=5, now=at_expiry)
        assert {h.document for h in before} == {"trails://local/doc/a", "trails://local/doc/b"}
        assert {h.document for h in at} == {"trails://local/doc/b"}  # expired at its moment
        ctx.audit.fold()
        assert ctx.audit.get(at.run_id).as_of == "2030-06-01T00:00:00+00:00"
        assert ctx.audit.get(before.run_id).as_of == "2030-05-31T23:59:59.999999+00:00"
        for run, expected in ((before.run_id, before), (at.run_id, at)):
            report = replay(ctx, run)
            assert report.identical and report.same == [h.iri for h in expected]
        assert [e.expires for e in ctx.prune_expired(now=at_expiry, dry_run=True)] == [expiry]
        assert ctx.prune_expired(now=at_expiry - dt.timedelta(microseconds=1),
                                 dry_run=True) == []


# -- invariants --------------------------------------------------------------------------------

OFFSETS = st.integers(min_value=-14 * 60, max_value=14 * 60).map(
    lambda minutes: dt.timezone(dt.timedelta(minutes=minutes)))
INSTANT = dt.datetime(2030, 6, 1, 12, tzinfo=UTC)
GRAPH_DOCUMENTS = "SELECT ?d WHERE { ?d a trails:Document }"


@settings(max_examples=15, deadline=None)
@given(shifts=st.lists(st.integers(min_value=-2, max_value=2), min_size=1, max_size=5),
       zones=st.lists(OFFSETS, min_size=5, max_size=5), now_zone=OFFSETS,
       now_shift=st.integers(min_value=-2, max_value=2))
def test_every_path_agrees_on_what_is_expired_at_a_moment(shifts, zones, now_zone, now_shift):
    """Expiries a microsecond apart around one instant, written in any offset: each path
    (ranking, a filter's candidates, graph mode, prune's dry run) treats a document as gone
    exactly when its expiry is at or before ``now``."""
    tick = dt.timedelta(microseconds=1)
    expiries = {f"d{n}": (INSTANT + shift * tick).astimezone(zones[n])
                for n, shift in enumerate(shifts)}
    now = (INSTANT + now_shift * tick).astimezone(now_zone)
    live = {f"trails://local/doc/{name}" for name, moment in expiries.items() if moment > now}
    with context() as ctx:
        ingest_all([Document(name, name, "gasket notice", metadata={"expires": moment})
                    for name, moment in expiries.items()], ctx=ctx)
        for options in ({"mode": "vector"}, {"mode": "hybrid"},
                        {"mode": "hybrid", "sparql_filter": GRAPH_DOCUMENTS},
                        {"mode": "graph", "sparql_filter": GRAPH_DOCUMENTS}):
            hits = retrieve("gasket notice", ctx, k=10, now=now, **options)
            assert {h.document or h.iri for h in hits} == live, options
        gone = {e.iri for e in ctx.prune_expired(now=now, dry_run=True)}
        assert gone == {f"trails://local/doc/{name}" for name in expiries} - live


@settings(max_examples=30, deadline=None)
@given(value=st.one_of(
    st.dates(min_value=dt.date(1, 1, 1), max_value=dt.date(9999, 12, 31)),
    st.datetimes(min_value=dt.datetime(2, 1, 1), max_value=dt.datetime(9998, 12, 31),
                 timezones=OFFSETS)))
def test_a_date_survives_ingest_the_graph_and_the_hit(value):
    with context() as ctx:
        assert ingest_all([Document("a", "a", "flange memo", metadata={"date": value})],
                          ctx=ctx).failed == 0
        (hit,) = retrieve("flange memo", ctx, k=1)
        (written,) = ctx.kg.query("SELECT ?d WHERE { ?doc schema:dateCreated ?d }").column("d")
        assert hit.date == value and written == value
        assert type(hit.date) is type(value) and type(written) is type(value)
        if isinstance(value, dt.datetime):
            assert hit.date.utcoffset() == value.utcoffset()


@pytest.mark.parametrize("zone", [dt.timezone(dt.timedelta(minutes=19, seconds=32)),
                                  dt.timezone(dt.timedelta(hours=15))])
def test_a_datetime_whose_offset_xsd_cannot_write_is_written_as_that_instant_in_utc(zone):
    """Amsterdam's local mean time (+00:19:32, what zoneinfo gives for 1900) and offsets past
    ±14:00 made an invalid xsd:dateTime, which every date filter dropped."""
    value = dt.datetime(1900, 1, 1, 12, tzinfo=zone)
    with context() as ctx:
        assert ingest_all([Document("old", "old", "Boiler memo.", metadata={"date": value})],
                          ctx=ctx).failed == 0
        before = ("SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . ?doc schema:dateCreated ?d "
                  "FILTER(?d < ?until) }")
        hits = retrieve("boiler memo", ctx, mode="hybrid", sparql_filter=before,
                        bindings={"until": dt.datetime(2000, 1, 1, tzinfo=UTC)})
        assert [h.document for h in hits] == ["trails://local/doc/old"]
        (written,) = ctx.kg.query("SELECT ?d WHERE { ?doc schema:dateCreated ?d }").column("d")
        assert written == value and written.utcoffset() == dt.timedelta(0)


# -- moments outside the UTC calendar, given where a time is read ------------------------------

def test_recency_ranks_documents_dated_beyond_the_utc_calendar():
    """xsd:dateTime holds 9999-12-31T23:00:00-12:00 (after the year 9999 in UTC) and
    0001-01-01T00:30:00+14:00 (before the year 1): every search with recency raised a raw
    OverflowError once such a document was among its hits. The first counts as today (a date
    in the future does), the second as older than any horizon (the floor)."""
    with context() as ctx:
        ingest_all([Document("late", "late", "Glaciers retreat.",
                             metadata={"date": "9999-12-31T23:00:00-12:00"}),
                    Document("early", "early", "Glaciers grow.",
                             metadata={"date": "0001-01-01T00:30:00+14:00"})], ctx=ctx)
        hits = retrieve("glaciers", ctx, steps=[RecencyDecay(floor=0.25)])
        factors = {hit.document.rsplit("/", 1)[1]: hit.components["recency"] for hit in hits}
        assert factors == {"late": 1.0, "early": 0.25}


@pytest.mark.parametrize("now", [dt.datetime(9999, 12, 31, 23, tzinfo=WEST),
                                 dt.datetime(1, 1, 1, 0, tzinfo=EAST)])
def test_a_recency_now_outside_the_utc_calendar_is_refused_by_name(now):
    with pytest.raises(InvalidArgumentError, match="now=.*years 1 to 9999"):
        RecencyDecay(now=now)


@pytest.mark.parametrize("option", ["since", "until"])
@pytest.mark.parametrize("moment", [dt.datetime(9999, 12, 31, 23, tzinfo=WEST),
                                    dt.datetime(1, 1, 1, 0, tzinfo=EAST)])
def test_an_audit_listing_bound_outside_the_utc_calendar_is_refused_by_name(option, moment):
    with context() as ctx, pytest.raises(InvalidArgumentError,
                                         match=f"{option}=.*years 1 to 9999"):
        ctx.audit.activities(**{option: moment})


def test_an_audit_listing_limit_past_what_the_graph_counts_lists_every_run(tmp_path):
    """A limit beyond 2**64 - 1 was pasted as it was, and SPARQL refused the query as one
    that "does not parse"; it lists every run, as any limit above their number does."""
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=16)) as ctx:
        for _ in range(3):
            retrieve("x", ctx)
        ctx.audit.fold()
        assert len(ctx.audit.activities(limit=10**30)) == 3 == len(ctx.audit.activities(limit=3))

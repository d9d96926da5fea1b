"""require_tls: a remote component refuses plain http:// to another machine unless allowed,
so queries, documents and API keys never cross a network in clear by accident."""

from __future__ import annotations

import pytest

from trails.errors import ConfigurationError, InvalidArgumentError
from trails.kg import SparqlEndpointGraph
from trails.resilience import Resilience

ELSEWHERE = ["http://h:1/query", "http://search.example.org/sparql", "HTTP://10.0.0.7/q",
             "http://[2001:db8::1]:7878/query", "http://localhost.evil.example/q",
             "http://127.0.0.1.example.org/q"]
THIS_MACHINE = ["http://localhost:7878/query", "http://127.0.0.1:9/q", "http://127.8.9.10/q",
                "http://[::1]:7878/query", "http://app.localhost/q", "https://h:1/query",
                "https://search.example.org/sparql"]


@pytest.mark.parametrize("url", ELSEWHERE)
def test_plain_http_to_another_machine_is_refused_naming_the_url_and_the_ways_on(url):
    with pytest.raises(ConfigurationError) as caught:
        SparqlEndpointGraph(url)
    message = str(caught.value)
    assert url in message and "https://" in message and "require_tls" in message


@pytest.mark.parametrize("url", THIS_MACHINE)
def test_https_and_this_machine_need_nothing(url):
    SparqlEndpointGraph(url).close()


@pytest.mark.parametrize("url", ELSEWHERE)
def test_a_trusted_network_is_allowed_in_the_policy(url):
    allowed = Resilience.from_settings({"require_tls": False})
    SparqlEndpointGraph(url, resilience=allowed).close()
    assert allowed.settings() == {"require_tls": False}  # what trails.json records
    SparqlEndpointGraph(url, resilience={"require_tls": False}).close()


def test_a_separate_update_url_is_checked_too():
    with pytest.raises(ConfigurationError, match="http://h/update"):
        SparqlEndpointGraph("https://h/query", update_url="http://h/update")


def test_the_other_remote_components_check_their_urls(monkeypatch):
    pytest.importorskip("openai")
    from trails.vector.embedders.openai import OpenAIEmbedder

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with pytest.raises(ConfigurationError, match="embeddings endpoint"):
        OpenAIEmbedder(dim=8, base_url="http://gpu-box:8000/v1")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://gpu-box:8000/v1")
    with pytest.raises(ConfigurationError, match="embeddings endpoint"):
        OpenAIEmbedder(dim=8)
    OpenAIEmbedder(dim=8, resilience={"require_tls": False})
    pytest.importorskip("qdrant_client")
    from trails.vector.stores.qdrant import QdrantStore

    for where in ({"url": "http://qdrant.internal:6333"}, {"host": "qdrant.internal"}):
        with pytest.raises(ConfigurationError, match="Qdrant server"):
            QdrantStore(collection="c", dim=2, **where)


def test_require_tls_takes_a_boolean_only():
    with pytest.raises(InvalidArgumentError, match="require_tls"):
        Resilience.from_settings({"require_tls": "no"})


def test_a_backends_policy_is_recorded_and_reopened_from_trails_json(tmp_path):
    """What a user chose for a remote graph (TLS allowed on a trusted network, a throttle)
    goes into trails.json with the backend, and the part reopened from it has the same."""
    from trails.backends import describe_graph, open_graph
    from trails.config import PartConfig

    chosen = {"require_tls": False, "max_rps": 5.0, "attempts": 2}
    kg = SparqlEndpointGraph("http://graph.internal:7878/query", resilience=chosen)
    part = describe_graph(kg, tmp_path)
    kg.close()
    assert part.settings["resilience"] == chosen
    stored = PartConfig.model_validate_json(part.model_dump_json())  # as trails.json holds it
    again = open_graph(stored, tmp_path)
    try:
        assert again.resilience == Resilience.from_settings(chosen)
    finally:
        again.close()
    plain = describe_graph(SparqlEndpointGraph("https://graph.example.org/query"), tmp_path)
    assert "resilience" not in plain.settings  # the defaults are not written out


# PostgreSQL speaks no URL scheme: libpq's sslmode says whether a connection may run in clear
# (its default, prefer, falls back to one), so a DSN to another machine needs require or verify-*.
PG_ELSEWHERE = ["postgresql://trails@db.internal:5432/kb", "host=10.0.0.7 dbname=kb",
                "postgresql://trails@db.internal/kb?sslmode=prefer",
                "host=db.internal sslmode=disable dbname=kb", "host=/tmp,db.internal dbname=kb",
                "host=localhost hostaddr=10.0.0.7 dbname=kb"]
PG_ENCRYPTED_OR_HERE = ["postgresql://trails@db.internal/kb?sslmode=require",
                        "host=db.internal sslmode=verify-full dbname=kb",
                        "host=/var/run/postgresql dbname=kb", "dbname=kb",
                        "postgresql://trails@localhost:5999/kb", "host=127.0.0.1 port=5999",
                        "host=::1 port=5999"]


def pg_store(dsn: str, **kwargs):
    pytest.importorskip("psycopg")
    from trails.vector.stores.pgvector import PgVectorStore

    return PgVectorStore(dsn, dim=2, connect_timeout=1,
                         resilience={"attempts": 1, **kwargs.pop("resilience", {})}, **kwargs)


@pytest.mark.parametrize("dsn", PG_ELSEWHERE)
def test_postgres_in_clear_to_another_machine_is_refused_before_connecting(dsn, monkeypatch):
    monkeypatch.delenv("PGSSLMODE", raising=False)
    with pytest.raises(ConfigurationError) as caught:
        pg_store(dsn + " password=topsecret" if "://" not in dsn else dsn)
    message = str(caught.value)
    assert "sslmode=require" in message and "require_tls" in message
    assert "topsecret" not in message


@pytest.mark.parametrize("dsn", PG_ENCRYPTED_OR_HERE)
def test_postgres_with_tls_or_on_this_machine_gets_to_connect(dsn, monkeypatch):
    """Past the check, nothing listens there: the server is unavailable, not refused."""
    from trails.errors import EndpointUnavailableError

    monkeypatch.delenv("PGSSLMODE", raising=False)
    monkeypatch.setenv("PGPORT", "5999")
    monkeypatch.setenv("PGHOST", "/nonexistent-socket-dir")
    with pytest.raises(EndpointUnavailableError):
        pg_store(dsn)


def test_postgres_tls_from_the_environment_or_allowed_in_the_policy(monkeypatch):
    from trails.errors import EndpointUnavailableError

    dsn = "host=db.internal port=5999 dbname=kb"
    monkeypatch.setenv("PGSSLMODE", "require")
    with pytest.raises(EndpointUnavailableError):
        pg_store(dsn)
    monkeypatch.setenv("PGSSLMODE", "allow")
    with pytest.raises(ConfigurationError, match="sslmode=allow"):
        pg_store(dsn)
    monkeypatch.delenv("PGSSLMODE")
    monkeypatch.setenv("PGHOST", "db.internal")  # libpq's host when the DSN names none
    with pytest.raises(ConfigurationError, match="require_tls"):
        pg_store("dbname=kb")
    with pytest.raises(EndpointUnavailableError):
        pg_store(dsn, resilience={"require_tls": False})

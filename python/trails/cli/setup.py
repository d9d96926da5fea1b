"""``trails init``: create a context directory and record what it is made of."""

from __future__ import annotations

import enum
import os
from pathlib import Path
from typing import Optional

import typer

from trails.backends import open_graph, open_vectors
from trails.cli._common import (
    DEFAULT_MODEL,
    MAX_DIM,
    context,
    cut_short,
    db_option,
    has_context,
    make_embedder,
)
from trails.cli.init_options import (
    NO_REMOTE,
    audit_with,
    pairs,
    record_policy,
    remote,
    resilience_option,
    with_policy,
)
from trails.cli.output import print_json, visible
from trails.config import AuditConfig, PartConfig, Scalar, Setting, read_config
from trails.context import Context
from trails.errors import ConfigurationError, DimensionMismatchError
from trails.ingest.expiry import check_retention
from trails.ingest.minting import check_base_iri, expand_predicates
from trails.ingest.payload import check_payload_fields
from trails.kg.base import KnowledgeGraph
from trails.kg.remote.connection import SPARQL_AUTH_ENV
from trails.registry import GRAPHS, VECTOR_STORES
from trails.vector.embedders.base import Embedder
from trails.vector.stores.base import VectorStore
from trails.vector.stores.pgvector.core import DSN_ENV as PG_DSN_ENV
from trails.vector.stores.qdrant.store import QDRANT_DIR, QDRANT_KEY_ENV

__all__ = ["GraphBackend", "VectorBackend", "init"]

# sqlite-vec's own limit on a vector column's dimensions.
SQLITE_VEC_MAX_DIM = 8192

# The registry's names: a backend added there is a choice here.
GraphBackend = enum.Enum(  # type: ignore[misc]  # mypy reads only literal members
    "GraphBackend", {n: n for n in GRAPHS}, type=str)
VectorBackend = enum.Enum(  # type: ignore[misc]  # mypy reads only literal members
    "VectorBackend", {n: n for n in VECTOR_STORES}, type=str)


def init(
    ctx: typer.Context,
    model: Optional[str] = typer.Option(  # noqa: UP045 - typer reads the annotation at runtime
        None, "--model", envvar="TRAILS_MODEL", metavar="MODEL",
        help=f"Embedder of a new context: {DEFAULT_MODEL} (default), a sentence-transformers "
             "model directory, openai:MODEL (OpenAI's API or a compatible server; key from "
             "$OPENAI_API_KEY), or mock / mock:DIM (deterministic, for tests)."),
    base_iri: Optional[str] = typer.Option(  # noqa: UP045
        None, "--base-iri", metavar="IRI", help="Base of minted IRIs (default trails://local/)."),
    graph: Optional[GraphBackend] = typer.Option(  # noqa: UP045
        None, "--graph", help="oxigraph: embedded in the directory (default); sparql: a SPARQL "
        "1.1 endpoint given by --endpoint."),
    endpoint: Optional[str] = typer.Option(  # noqa: UP045
        None, "--endpoint", metavar="URL", help="The endpoint's query URL (--graph sparql). "
        f"Credentials: ${SPARQL_AUTH_ENV} holds an Authorization header value."),
    update_endpoint: Optional[str] = typer.Option(  # noqa: UP045
        None, "--update-endpoint", metavar="URL",
        help="Its update URL (default: the query URL with /query replaced by /update)."),
    sparql_dialect: Optional[str] = typer.Option(  # noqa: UP045
        None, "--sparql-dialect", metavar="NAME", help="standard (default) or virtuoso "
        "(Virtuoso 7, query URL .../sparql) for --graph sparql."),
    vectors: Optional[VectorBackend] = typer.Option(  # noqa: UP045
        None, "--vectors", help="sqlite-vec: embedded in the directory (default); qdrant: a "
        "Qdrant server (--qdrant-url) or a local Qdrant folder (--qdrant-path); pgvector: "
        "PostgreSQL (--pg-dsn)."),
    qdrant_url: Optional[str] = typer.Option(  # noqa: UP045
        None, "--qdrant-url", metavar="URL",
        help=f"A Qdrant server (--vectors qdrant); its API key from ${QDRANT_KEY_ENV}."),
    qdrant_path: Optional[Path] = typer.Option(  # noqa: UP045
        None, "--qdrant-path", metavar="DIR",
        help=f"A local Qdrant folder (--vectors qdrant; default: {QDRANT_DIR}/ in the context)."),
    qdrant_collection: str = typer.Option(
        "trails", "--qdrant-collection", metavar="NAME", help="The Qdrant collection."),
    pg_dsn: Optional[str] = typer.Option(  # noqa: UP045
        None, "--pg-dsn", metavar="DSN",
        help="A PostgreSQL database with pgvector (--vectors pgvector), e.g. "
             "postgresql://user@host:5432/db; recorded without its password, which comes from "
             f"$PGPASSWORD or ${PG_DSN_ENV} (the whole DSN) on every open."),
    pg_table: str = typer.Option(
        "trails", "--pg-table", metavar="NAME", help="The store's PostgreSQL table."),
    openai_base_url: Optional[str] = typer.Option(  # noqa: UP045
        None, "--openai-base-url", metavar="URL",
        help="An OpenAI-compatible server for --model openai:MODEL (default: OpenAI)."),
    openai_dim: Optional[int] = typer.Option(  # noqa: UP045
        None, "--openai-dim", min=1, max=MAX_DIM, metavar="N", help="Shorter text-embedding-3 vectors, or "
        "the output size of a compatible server's own model."),
    map_metadata: list[str] = typer.Option(
        [], "--map-metadata", metavar="KEY=PREDICATE",
        help="Write metadata KEY with PREDICATE (an IRI or CURIE, e.g. author=dcterms:creator) "
             "instead of meta:KEY (repeatable; recorded, also on an existing context)."),
    retention: list[str] = typer.Option(
        [], "--retention", metavar="SCOPE=PERIOD",
        help="Documents of SCOPE expire PERIOD (ISO 8601 days, e.g. tmp=P30D) after their date "
             "(repeatable; recorded, also on an existing context, beside the rules it holds)."),
    payload: Optional[str] = typer.Option(  # noqa: UP045
        None, "--payload", metavar="KEYS",
        help="Document metadata the vector store may hold, comma-separated (e.g. "
             "title,source,date,author; default none: it stays in the graph, and hits read "
             "it from there). Recorded, also on an existing context: then run "
             "`trails verify --repair` to rewrite the vectors already stored. \"\" allows none."),
    resilience: list[str] = typer.Option(
        [], "--resilience", metavar="NAME=VALUE",
        help="A resilience setting of each remote part (the SPARQL endpoint, a Qdrant server, "
             "PostgreSQL, an OpenAI-compatible endpoint), e.g. max_rps=5, attempts=4, "
             "deadline=60, require_tls=false (repeatable; recorded, also on an existing "
             "context; docs/resilience.md names them all)."),
    security_level: list[str] = typer.Option(
        [], "--security-level", metavar="SCOPE=LEVEL",
        help="The security level of SCOPE (e.g. hr=protected): every audit record of a search "
             "that reads SCOPE names it, and `trails audit --level LEVEL` lists them "
             "(repeatable; recorded, also on an existing context, beside the levels it holds)."),
    digest_level: list[str] = typer.Option(
        [], "--digest-level", metavar="LEVEL",
        help="Searches that read a scope of LEVEL keep only the query's SHA-256 in the audit "
             "trail, and logs never show their text (repeatable; recorded)."),
    as_json: bool = typer.Option(
        False, "--json", help="Print only JSON: {created, directory, graph, vectors, embedder, "
        "base_iri}, with metadata_predicates, retention, payload, resilience and audit when "
        "they were given "
        "(and payload_stale_vectors: true when stored vectors may hold other fields)."),
) -> None:
    """Create a context directory: the graph, the vector store and the embedder it records.

    Reopening restores all three (remote ones included), so later commands need none of
    these options. Running init on an existing context changes nothing (and fails if an
    option names something else than what it records). An init cut short (killed before it
    wrote trails.json) is finished by running it again. Secrets are never recorded: they are
    read from the environment each time.

    Example:

    ```
    trails --db ./kb init                  # the local all-MiniLM-L6-v2
    trails --db ./scratch init --model mock:32
    trails --db ./kb init --vectors qdrant --qdrant-url http://localhost:6333 \\
        --graph sparql --endpoint http://localhost:7878/query \\
        --model openai:text-embedding-3-small
    PGPASSWORD=... trails --db ./kb init --vectors pgvector \\
        --pg-dsn "postgresql://trails@db.internal:5432/kb?sslmode=require"
    ```
    """
    db = db_option(ctx)
    if base_iri is not None:
        check_base_iri(base_iri, "--base-iri", given=True)  # before anything is made
    mapping = pairs(map_metadata)
    expand_predicates(mapping)  # a predicate that is no IRI: refused before the context is made
    rules = check_retention(pairs(retention, "--retention", "SCOPE=PERIOD"))
    fields = None if payload is None else list(check_payload_fields(
        [f.strip() for f in payload.split(",") if f.strip()], "--payload"))
    policy = resilience_option(resilience)
    levels = pairs(security_level, "--security-level", "SCOPE=LEVEL")
    audit_with(AuditConfig(), levels, digest_level)  # a bad name: refused before anything
    graph_part = with_policy(_graph_part(graph, endpoint, update_endpoint, sparql_dialect),
                              policy)
    vectors_part = with_policy(
        _pg_part(pg_dsn, pg_table) if vectors is not None and vectors.value == "pgvector"
        else _vectors_part(vectors, qdrant_url, qdrant_path, qdrant_collection), policy)
    if pg_dsn is not None and (vectors is None or vectors.value != "pgvector"):
        raise ConfigurationError("--pg-dsn applies to --vectors pgvector")
    if has_context(db):
        _check_same(db, model, base_iri, graph_part, vectors_part)
        with context(db, read_only=True) as opened:
            if model is not None:
                _check_model(db, opened, make_embedder(
                    model, openai_base_url=openai_base_url, openai_dim=openai_dim))
            found = _made(opened, db, created=False)
            rules = {**opened.retention, **rules} if rules else {}
        if policy:
            record_policy(db, policy)
        _report(found, _record(db, mapping, rules, fields, levels, digest_level, policy),
                as_json=as_json)
        return
    if db.exists() and (not db.is_dir() or not cut_short(db)):
        raise ConfigurationError(f"{db} exists and is not an empty directory; choose a new one")
    remote_model = (model or "").startswith("openai:")
    if policy and not (remote_model or remote(graph_part) or remote(vectors_part)):
        raise ConfigurationError(NO_REMOTE)
    embedder = make_embedder(model or DEFAULT_MODEL, openai_base_url=openai_base_url,
                             openai_dim=openai_dim, resilience=policy if remote_model else None)
    if vectors_part is None and embedder.dim > SQLITE_VEC_MAX_DIM:
        raise ConfigurationError(
            f"the embedded sqlite-vec store holds vectors of at most {SQLITE_VEC_MAX_DIM} "
            f"dimensions, and {embedder.identity.describe()} makes {embedder.dim}; use "
            "--vectors qdrant, or a smaller --openai-dim")
    try:
        with _create(db, embedder, graph_part, vectors_part, base_iri) as opened:
            made = _made(opened, db, created=True)
    except DimensionMismatchError as exc:  # a creation cut short, begun with another model
        raise ConfigurationError(
            f"{db} holds a context whose creation was cut short (trails.json is missing), "
            f"begun with another model: {exc}. Finish it with `init --model` naming the model "
            f"it was begun with, or remove {db} (it holds no documents if only init ran "
            "there) and init again") from exc
    _report(made, _record(db, mapping, rules, fields, levels, digest_level, policy),
            as_json=as_json)


def _record(db: Path, mapping: dict[str, str], rules: dict[str, str],
            fields: list[str] | None, levels: dict[str, str],
            digest_levels: list[str], policy: dict[str, Scalar]) -> dict[str, object]:
    """Record a metadata mapping, retention rules, a payload allowlist and security levels
    given to init (each only if given); what was recorded, with the resilience ``policy``
    the remote parts were given (``payload_stale_vectors`` when vectors stored before the
    allowlist may hold other fields)."""
    recorded: dict[str, object] = {"resilience": policy} if policy else {}
    if levels or digest_levels:
        config = read_config(db)
        audit = audit_with(config.audit if config else AuditConfig(), levels, digest_levels)
        with context(db, audit=audit) as opened:
            recorded["audit"] = opened.audit.settings.model_dump(
                include={"levels", "digest_levels"})
    if mapping:
        with context(db, metadata_predicates=mapping) as opened:
            recorded["metadata_predicates"] = dict(opened.metadata_predicates)
    if rules:
        with context(db, retention=rules) as opened:
            recorded["retention"] = dict(opened.retention)
    if fields is not None:
        # Vectors written before keep their payload until ``verify --repair`` rewrites it.
        with context(db, payload=fields) as opened:
            recorded["payload"] = list(opened.payload_fields)
            if opened.vectors.count():
                recorded["payload_stale_vectors"] = True
    return recorded


def _graph_part(choice: GraphBackend | None, endpoint: str | None,
                update_endpoint: str | None, dialect: str | None = None) -> PartConfig | None:
    """The graph the options name; None for the embedded default."""
    name = choice.value if choice is not None else ("sparql" if endpoint else "oxigraph")
    if name != "sparql":
        if endpoint or update_endpoint or dialect:
            raise ConfigurationError("--endpoint, --update-endpoint and --sparql-dialect apply "
                                     "to --graph sparql")
        return None
    if not endpoint:
        raise ConfigurationError("--graph sparql needs --endpoint URL (the query URL)")
    settings: dict[str, Setting] = {"query_url": endpoint, "update_url": update_endpoint}
    if dialect is not None:
        settings["dialect"] = dialect
    return PartConfig(backend="sparql", settings=settings)


def _vectors_part(choice: VectorBackend | None, url: str | None,
                  path: Path | None, collection: str) -> PartConfig | None:
    """The vector store the options name; None for the embedded default."""
    given = url is not None or path is not None
    name = choice.value if choice is not None else ("qdrant" if given else "sqlite-vec")
    if name != "qdrant":
        if given:
            raise ConfigurationError("--qdrant-url and --qdrant-path apply to --vectors qdrant")
        return None
    if url is not None and path is not None:
        raise ConfigurationError("pass one of --qdrant-url (a server) and --qdrant-path (a "
                                 "local folder), not both")
    where = {"url": url} if url is not None else {"path": str(path.resolve()) if path else None}
    return PartConfig(backend="qdrant", settings={"collection": collection, **where})


def _pg_part(dsn: str | None, table: str) -> PartConfig:
    """``--vectors pgvector``: the DSN given, else ``$TRAILS_PG_DSN``."""
    if dsn is None and not os.environ.get(PG_DSN_ENV):
        raise ConfigurationError(
            f"--vectors pgvector needs --pg-dsn postgresql://user@host:5432/db (or "
            f"${PG_DSN_ENV})")
    return PartConfig(backend="pgvector", settings={"dsn": dsn, "table": table})


def _create(db: Path, embedder: Embedder, graph: PartConfig | None,
            vectors: PartConfig | None, base_iri: str | None) -> Context:
    """A new context; remote or relocated parts are opened here and recorded by the context."""
    kg: KnowledgeGraph | None = None
    store: VectorStore | None = None
    try:
        kg = None if graph is None else open_graph(graph, db)
        store = None if vectors is None else open_vectors(vectors, db, dim=embedder.dim)
        return context(db, embedder=embedder, base_iri=base_iri, kg=kg, vectors=store)
    except BaseException:
        for part in (store, kg):
            if part is not None:
                part.close()
        raise


def _check_same(db: Path, model: str | None, base_iri: str | None,
                graph: PartConfig | None, vectors: PartConfig | None) -> None:
    recorded = read_config(db)
    if recorded is None:  # pragma: no cover - has_context checked the file exists
        return
    if base_iri is not None and base_iri != recorded.base_iri:
        raise ConfigurationError(f"{db} was created with base IRI {recorded.base_iri}, not "
                                 f"{base_iri}; drop --base-iri or choose another --db")
    for kind, asked, made in (("graph", graph, recorded.graph),
                              ("vectors", vectors, recorded.vectors)):
        if asked is not None and asked.backend != made.backend:
            raise ConfigurationError(f"{db} was created with --{kind} {made.backend}, not "
                                     f"{asked.backend}; drop --{kind} or choose another --db")


def _check_model(db: Path, opened: Context, asked: Embedder) -> None:
    recorded = opened.embedder.identity
    if not asked.identity.compatible_with(recorded):
        raise ConfigurationError(f"{db} was created with {recorded.describe()}, not "
                                 f"{asked.identity.describe()}; drop --model or choose "
                                 "another --db")


def _parts(opened: Context) -> dict[str, str]:
    return {"graph": GRAPHS.name_of(type(opened.kg)) or type(opened.kg).__name__,
            "vectors": VECTOR_STORES.name_of(type(opened.vectors)) or type(opened.vectors).__name__,
            "embedder": opened.embedder.identity.describe()}


def _made(opened: Context, db: Path, *, created: bool) -> dict[str, object]:
    """What init made (or found already there)."""
    return {"created": created, "directory": str(db), **_parts(opened),
            "base_iri": opened.base_iri}


def _report(made: dict[str, object], recorded: dict[str, object], *, as_json: bool) -> None:
    """Say what init made and recorded: one JSON document with ``--json`` (stdout holds
    nothing else), else a line each."""
    if as_json:
        print_json({**made, **recorded})
        return
    parts = "graph {graph}, vectors {vectors}, embedder {embedder}".format(**made)
    if made["created"]:
        typer.echo(visible(f"created a trails context in {made['directory']}: {parts}, base "
                           f"IRI {made['base_iri']}"))
    else:
        typer.echo(visible(f"{made['directory']} already holds a trails context ({parts})"))
    for name, what in (("metadata_predicates", "metadata mapping"),
                       ("retention", "retention"), ("payload", "vector payload allowlist"),
                       ("resilience", "resilience policy of the remote parts"),
                       ("audit", "audit security levels")):
        if name in recorded:
            value = recorded[name]
            shown = (", ".join(value) or "none") if isinstance(value, list) else value
            typer.echo(visible(f"{what} recorded: {shown}"))
    if recorded.get("payload_stale_vectors"):
        typer.echo("vectors stored before may hold other fields: run `trails verify` to list "
                   "them, `trails verify --repair` to remove them")

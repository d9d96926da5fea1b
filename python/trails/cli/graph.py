"""``trails load`` and ``trails export``: your own RDF into the graph and the graph out."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import pyoxigraph as ox
import typer

from trails.cli._common import db_option, open_context
from trails.cli.output import print_json, visible
from trails.errors import ConfigurationError
from trails.kg.export_paths import OwnFiles, refuse_own_file
from trails.kg.loads import loaded_before, refuse_emptied, replacing, target_graph
from trails.kg.rdfio import FORMAT_NAMES, rdf_format, read_quads
from trails.kg.rdfwrite import write_quads
from trails.kg.reserved import AUDIT_GRAPH_IRI
from trails.scopes import DEFAULT_SCOPE, check_known_scopes, normalize_scopes

__all__ = ["export", "load"]


def load(
    ctx: typer.Context,
    files: list[Path] = typer.Argument(..., exists=True, dir_okay=False, metavar="FILE",
                                       help="RDF files (.ttl .trig .nt .nq .n3 .rdf .owl .jsonld)."),
    scope: Optional[str] = typer.Option(  # noqa: UP045 - typer reads the annotation at runtime
        None, "--scope", metavar="SCOPE",
        help="Put the triples in this scope's graph (default: the default scope; files that "
             "name graphs of their own keep them, and refuse --scope)."),
    format: Optional[str] = typer.Option(  # noqa: UP045
        None, "--format", metavar="FORMAT",
        help=f"One of {', '.join(FORMAT_NAMES)} (default: from each file's suffix)."),
    base_iri: Optional[str] = typer.Option(  # noqa: UP045
        None, "--base-iri", metavar="IRI", help="Resolve relative IRIs in the files against this."),
    replace: bool = typer.Option(
        False, "--replace", help="Replace what each file loaded with --replace into its scope "
        "before: triples and labels taken out of the file go (run trails link after it to "
        "link again)."),
    allow_empty: bool = typer.Option(
        False, "--allow-empty", help="With --replace: let a file that holds no triples now "
        "remove every triple it loaded before (without it, such a file is refused: emptied or "
        "cut short by mistake, more likely)."),
    as_json: bool = typer.Option(
        False, "--json", help="Print only JSON: {files: [{file, quads}], quads}."),
) -> None:
    """Load RDF files into the graph: an ontology, facts about documents, links.

    All the files load in one transaction: a syntax error names the file, line and column,
    and nothing of any file is loaded (exit 1). Prints the quads each file held. The audit
    graph (urn:trails:audit) is written by trails alone: a file with triples in it is
    refused, and nothing is loaded (exit 1). A file loaded with --replace is recorded, so that
    after it changes, --replace again takes out what it no longer holds (ADR 0051): load an
    ontology you will edit with --replace from the first time. A file that holds no triples
    now is refused by --replace when it loaded some before (exit 1, nothing changed): add
    --allow-empty to remove them on purpose.

    Example:

    ```
    trails --db ./kb load ontology.ttl facts.nq
    trails --db ./kb load legal-facts.ttl --scope legal
    trails --db ./kb load ontology.ttl --replace && trails --db ./kb link
    ```
    """
    if allow_empty and not replace:
        raise ConfigurationError("--allow-empty lets a --replace remove what an emptied file "
                                 "loaded before; add --replace, or leave --allow-empty out")
    with open_context(ctx, write=True) as opened:
        parsed = [(file, read_quads(file, format, scope, base_iri=base_iri)) for file in files]
        for file, quads in parsed if replace and not allow_empty else ():
            if not quads:  # emptied by mistake, more likely than meant to remove it all
                refuse_emptied(str(file), loaded_before(
                    opened.kg.query, str(file.resolve()), target_graph(quads, scope)))
        if replace:
            opened.kg.update(" ;\n".join(
                replacing(quads, str(file.resolve()), target_graph(quads, scope), str(file))
                for file, quads in parsed))
        else:
            together = write_quads((q for _, quads in parsed for q in quads),
                                   ox.RdfFormat.N_QUADS, None)
            opened.kg.load((together or "").encode("utf-8"), format="nquads")
    if as_json:
        print_json({"files": [{"file": str(file), "quads": len(quads)} for file, quads in parsed],
                    "quads": sum(len(quads) for _, quads in parsed)})
        return
    for file, quads in parsed:
        typer.echo(visible(f"{file}: {len(quads)} quads loaded"))


def export(
    ctx: typer.Context,
    format: Optional[str] = typer.Option(  # noqa: UP045
        None, "--format", metavar="FORMAT",
        help=f"One of {', '.join(FORMAT_NAMES)} (default: from the -o suffix, else trig)."),
    scope: Optional[str] = typer.Option(  # noqa: UP045
        None, "--scope", metavar="SCOPE",
        help="Only this scope's triples (without it: every graph, or the default scope in a "
             "triple format)."),
    output: Optional[Path] = typer.Option(  # noqa: UP045
        None, "--output", "-o", metavar="FILE", help="Write here instead of standard output."),
    audit: bool = typer.Option(
        False, "--audit", help="Also the audit trail's graph (urn:trails:audit), which no load "
        "takes back: for a record of it, not for a copy to load."),
    as_json: bool = typer.Option(
        False, "--json", help="Print only JSON: {format, scope, output, left_out, data} (data: "
        "the RDF text, null with --output)."),
) -> None:
    """Export the graph as RDF (read-only): every graph as TriG, N-Quads or JSON-LD (the
    audit trail's only with --audit), or one scope in any format.

    A triple format (turtle, ntriples, n3, rdfxml) without --scope holds the default scope;
    the scopes it leaves out are named on stderr, and so is the audit trail when it is left
    out.

    Example:

    ```
    trails --db ./kb export -o backup.nq
    trails --db ./kb export --format turtle --scope legal
    ```
    """
    fmt = rdf_format(format, output) if (format or output) else ox.RdfFormat.TRIG
    with open_context(ctx) as opened:
        if output is not None:  # as kg.dump refuses it, whatever class the graph is
            refuse_own_file(output, OwnFiles.of(db_option(ctx), [opened.kg, opened.vectors]))
        known = opened.kg.scopes()
        if scope is not None:
            check_known_scopes(normalize_scopes(scope), known)
        text = opened.kg.dump(output, format=fmt.file_extension, scope=scope, audit=audit)
        audited = opened.kg.query(f"ASK {{ GRAPH <{AUDIT_GRAPH_IRI}> {{ ?s ?p ?o }} }}") is True
    left_out = [s for s in known if s != DEFAULT_SCOPE]
    if scope is not None or fmt.supports_datasets:
        left_out = []
    if scope is None and fmt.supports_datasets and audited and not audit:
        left_out = [AUDIT_GRAPH_IRI]
    if as_json:
        print_json({"format": fmt.file_extension, "scope": scope,
                    "output": None if output is None else str(output), "left_out": left_out,
                    "data": text})
        return
    if left_out == [AUDIT_GRAPH_IRI]:
        typer.echo(f"note: left out: the audit trail ({AUDIT_GRAPH_IRI}), which no load takes "
                   "back (--audit to include it; trails audit lists it)", err=True)
    elif left_out:
        typer.echo(f"note: {fmt.name} holds one graph, so this is the default scope; left out: "
                   f"{', '.join(left_out)} (--scope NAME for one, --format trig for all)",
                   err=True)
    if text is not None:
        typer.echo(text, nl=False)


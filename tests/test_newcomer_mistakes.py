"""The first mistakes someone new to trails makes, each answered by one line that names the
mistake and its fix: ``--db`` after the command, ``--db`` naming the documents' folder or a
file, a ``trails sparql`` whose ``--bind`` was forgotten, a JSON Lines file with a line that
is no JSON, a ``Document`` without its id, ``Context.open`` on the folder of documents.
"""

from __future__ import annotations

import copy
import json
import pickle
import re
from pathlib import Path

import pytest

from _cli import run_trails
from trails import MockEmbedder, retrieve
from trails.audit.records import started_now
from trails.context import Context
from trails.errors import ConfigurationError, InvalidArgumentTypeError, TrailsError
from trails.ingest import Document, ingest_all
from trails.service.requests import record_sparql
from trails.testing import fresh_context

DATES = "SELECT ?doc WHERE { ?doc schema:dateCreated ?c FILTER(?c >= ?since) }"


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    """A context holding two dated notes, made from the folder ``notes``."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("---\ndate: 2024-03-05\n---\nThe drug lowered blood pressure.")
    (notes / "b.md").write_text("---\ndate: 2023-01-10\n---\nThe pump failed in building 3.")
    db = tmp_path / "kb"
    assert run_trails("--db", db, "init", "--model", "mock:16").returncode == 0
    assert run_trails("--db", db, "ingest", notes).returncode == 0
    return db


def _one_error_line(result) -> str:
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize(("command", "where"), [
    (["ingest", "notes"], "ingest"), (["query", "pumps"], "query"), (["stats"], "stats"),
    (["audit"], "audit"), (["audit", "show", "0123"], "audit show")])
def test_db_after_the_command_says_it_goes_before(kb, command, where):
    line = _one_error_line(run_trails(*command, "--db", kb))
    assert line == f"Error: --db goes before the command: trails --db DIR {where} ..."


def test_another_unknown_option_still_gets_clicks_suggestions(kb):
    line = _one_error_line(run_trails("--db", kb, "query", "pumps", "--bnid", "x=1"))
    assert "No such option: --bnid" in line and "--bind" in line


def test_db_naming_the_documents_folder_says_to_make_the_context_elsewhere(kb):
    notes = kb.parent / "notes"
    line = _one_error_line(run_trails("--db", notes, "query", "pumps"))
    assert line == (f"Error: {notes} holds no trails context (it holds other files: if they "
                    f"are your documents, make the context elsewhere: `trails --db ./kb init`, "
                    f"then `trails --db ./kb ingest {notes}`)")
    assert sorted(p.name for p in notes.iterdir()) == ["a.md", "b.md"]  # nothing made there


def test_db_naming_a_file_says_it_is_no_context_directory(kb):
    note = kb.parent / "notes" / "a.md"
    line = _one_error_line(run_trails("--db", note, "stats"))
    assert line.startswith(f"Error: {note} is a file, not a trails context directory: ")
    assert f"`trails --db DIR ingest {note}`" in line


def test_db_naming_a_new_directory_still_says_to_init_it(tmp_path):
    line = _one_error_line(run_trails("--db", tmp_path / "new", "stats"))
    assert line == (f"Error: {tmp_path / 'new'} holds no trails context; create it with "
                    f"`trails --db {tmp_path / 'new'} init`")


def test_sparql_with_a_forgotten_bind_is_an_error_not_zero_rows(kb):
    line = _one_error_line(run_trails("--db", kb, "sparql", DATES))
    assert line.startswith("Error: ?since is used in the filter but never bound")
    assert "--bind since=" in line


def test_sparql_that_does_not_parse_says_so_before_any_unbound_variable(kb):
    """A missing ')' leaves ?x in a FILTER that never closes: the mistake is the syntax,
    said with its place, as `trails query --sparql` says it, not "?x is never bound"."""
    text = "SELECT ?d WHERE { ?d a trails:Document . FILTER(?x > 3 }"
    for command in (["sparql", text], ["query", "x", "--sparql", text.replace("?d", "?iri")]):
        line = _one_error_line(run_trails("--db", kb, *command))
        assert "does not parse: at line 1, column " in line and "never bound" not in line


def test_a_query_the_terminal_could_not_decode_is_named_as_a_search_names_it(kb):
    """Bytes that are no UTF-8 reach Python as lone surrogates (a Latin-1 terminal's "é"):
    said where they are, as `trails query` says it, not as a codec's failure."""
    line = _one_error_line(run_trails("--db", kb, "sparql",
                                      'SELECT ?s WHERE { ?s ?p "caf\udce9" }'))
    assert line.startswith("Error: QUERY_OR_FILE holds a lone surrogate '\\udce9' at offset 28")
    assert "codec" not in line


def test_sparql_with_the_bind_given_answers(kb):
    result = run_trails("--db", kb, "sparql", DATES, "--bind", "since=2024-01-01", "--json")
    assert result.returncode == 0, result.stderr
    assert '"trails://local/doc/a.md"' in result.stdout
    assert "b.md" not in result.stdout


def test_sparql_with_a_variable_bound_only_inside_optional_still_runs(kb):
    query = ("SELECT ?doc WHERE { ?doc schema:dateCreated ?c "
             "OPTIONAL { ?doc schema:author ?a } FILTER(!BOUND(?a)) }")
    result = run_trails("--db", kb, "sparql", query, "--json")
    assert result.returncode == 0, result.stderr
    assert "a.md" in result.stdout and "b.md" in result.stdout


def test_a_jsonl_line_that_is_no_json_says_so_and_the_others_are_ingested(tmp_path):
    (tmp_path / "r.jsonl").write_text('{"id": "a", "text": "Fine."}\nnot json\n'
                                      '{"id": "b", "text": "Also fine.",}\n')
    with fresh_context() as ctx:
        stats = ingest_all(tmp_path, ctx=ctx)
    assert stats.ingested == 1
    assert [reason for _, reason in stats.failures] == [
        ("line 2 is not JSON (Expecting value at column 1); each line of a .jsonl file "
         "holds one JSON object"),
        ("line 3 is not JSON (Expecting property name enclosed in double quotes at column "
         "34); each line of a .jsonl file holds one JSON object"),
    ]


@pytest.mark.parametrize(("given", "missing"), [
    ({"text": "hello"}, "id=, source="),
    ({"id": "a", "text": "hello"}, "source="),
    ({"source": "s", "text": "hello"}, "id="),
    ({"id": "a", "source": "s"}, "text="),
])
def test_a_document_without_its_id_source_or_text_is_a_trails_error(given, missing):
    with pytest.raises(InvalidArgumentTypeError) as raised:
        Document(**given)
    assert isinstance(raised.value, TrailsError) and isinstance(raised.value, TypeError)
    assert str(raised.value).startswith(f"Document(...) needs {missing}: id= names it")


def test_a_document_given_positionally_copies_and_pickles_as_before():
    document = Document("a", "s", "hello", metadata={"k": 1})
    assert (document.id, document.source, document.text) == ("a", "s", "hello")
    assert copy.deepcopy(document) == document
    assert pickle.loads(pickle.dumps(document)) == document


def test_sparql_binding_an_iri_as_a_string_notes_how_to_bind_the_iri(kb):
    query = "SELECT ?c WHERE { ?doc schema:dateCreated ?c }"
    result = run_trails("--db", kb, "sparql", query, "--bind", "doc=trails://local/doc/a.md",
                        "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"head": {"vars": ["c"]}, "results": {"bindings": []}}
    assert ("note: binding 'doc' is the string 'trails://local/doc/a.md', which never matches "
            "an IRI; to match the resource bind trails.kg.IRI('trails://local/doc/a.md') "
            "(--bind doc=<trails://local/doc/a.md>)") in result.stderr.splitlines()
    bound = run_trails("--db", kb, "sparql", query, "--bind", "doc=<trails://local/doc/a.md>",
                       "--json")
    assert "2024-03-05" in bound.stdout and "note:" not in bound.stderr


def test_sparql_comparing_dates_with_a_datetime_notes_the_types(kb):
    result = run_trails("--db", kb, "sparql", DATES, "--bind", "since=2024-01-01T00:00:00Z")
    assert result.returncode == 0, result.stderr
    assert "0 rows" in result.stdout
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1, result.stderr
    assert "?c holds xsd:date values" in notes[0]
    assert "?since is bound to an xsd:dateTime" in notes[0]


def test_sparql_that_finds_nothing_for_no_such_reason_says_nothing_more(kb):
    result = run_trails("--db", kb, "sparql", "SELECT ?d WHERE { ?d schema:name 'nobody' }")
    assert result.returncode == 0
    assert result.stderr == ""


@pytest.mark.parametrize(("command", "words"), [
    (["query", "how", "do", "we", "deploy?"], "how do we deploy?"),
    (["sparql", "SELECT", "?d", "WHERE", "{", "?d", "a", "trails:Document", "}"],
     "SELECT ?d WHERE { ?d a trails:Document }"),
])
def test_a_question_or_query_left_unquoted_is_refused_saying_to_quote_it(kb, command, words):
    """The shell splits an unquoted question into words; click's "Got unexpected extra
    argument(s)" leaves a newcomer guessing, so the line says to quote it, as it was typed."""
    line = _one_error_line(run_trails("--db", kb, *command))
    where, argument = command[0], "TEXT" if command[0] == "query" else "QUERY_OR_FILE"
    assert line == (f"Error: trails {where} takes one {argument}, and got {len(command) - 1} "
                    f"words: quote it, trails --db DIR {where} '{words}' "
                    f"(see 'trails {where} --help')")


@pytest.mark.parametrize(("option", "meant"), [
    (["--limit", "3"], "-k"), (["--top-k", "3"], "-k"), (["-n", "3"], "-k"),
    (["--threshold", "0.5"], "--min-score"), (["--where", "x"], "--sparql"),
    (["--scopes", "alpha"], "--scope"), (["--params", "a=1"], "--bind"),
])
def test_an_option_named_as_other_libraries_name_it_is_refused_naming_trails_own(
        kb, option, meant):
    """The names retrieve() knows from other libraries (top_k, limit, threshold, where...)
    are known to `trails query` too: the line names the option meant, not --help or --why."""
    line = _one_error_line(run_trails("--db", kb, "query", "x", *option))
    assert line == (f"Error: No such option: {option[0]}; did you mean {meant}? "
                    "(see 'trails query --help')")


def test_query_without_its_question_says_what_text_is_and_what_graph_mode_takes(kb):
    line = _one_error_line(run_trails("--db", kb, "query", "--mode", "graph", "--sparql", DATES))
    assert line == ("Error: Missing argument 'TEXT': the question, in quotes (--mode graph, "
                    "which ranks nothing, takes \"\"): trails --db DIR query \"how do we "
                    "deploy?\" (see 'trails query --help')")
    query = "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc }"
    answered = run_trails("--db", kb, "query", "", "--mode", "graph", "--sparql", query,
                          "--json")
    assert answered.returncode == 0, answered.stderr
    assert sorted(hit["document"] for hit in json.loads(answered.stdout)["hits"]) == [
        "trails://local/doc/a.md", "trails://local/doc/b.md"]


def test_load_given_a_document_says_to_ingest_it(kb):
    note = kb.parent / "notes" / "a.md"
    line = _one_error_line(run_trails("--db", kb, "load", note))
    assert line.startswith(f"Error: '{note}' is a document, not RDF: ingest it to search it "
                           "(`trails ingest`, ingest_all() in Python); load reads RDF (")


def test_the_suffixes_load_calls_documents_are_those_ingestion_reads():
    from trails.ingest.loaders import KNOWN_SUFFIXES
    from trails.kg.rdfio import DOCUMENT_SUFFIXES
    assert sorted(DOCUMENT_SUFFIXES) == sorted(KNOWN_SUFFIXES)


def test_export_to_a_document_suffix_still_says_the_suffix_names_no_rdf_format(kb, tmp_path):
    line = _one_error_line(run_trails("--db", kb, "export", "-o", tmp_path / "out.txt"))
    assert "cannot tell the RDF format of" in line and "is a document" not in line


def test_context_open_on_a_folder_of_documents_refuses_and_writes_nothing(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("a note")
    (notes / "sub").mkdir()
    with pytest.raises(ConfigurationError) as caught:
        Context.open(notes, embedder=MockEmbedder(dim=8))
    message = str(caught.value)
    assert "notes holds files that are not a trails context (a.md, sub)" in message
    assert "notes-trails" in message  # a place beside it, outside the folder to ingest
    assert sorted(p.name for p in notes.iterdir()) == ["a.md", "sub"]


def test_a_document_named_like_trails_own_files_is_still_someones_file(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "trails-notes.md").write_text("what trails is")
    with pytest.raises(ConfigurationError, match="not a trails context \\(trails-notes.md\\)"):
        Context.open(notes, embedder=MockEmbedder(dim=8))
    assert [p.name for p in notes.iterdir()] == ["trails-notes.md"]


def test_context_open_on_an_empty_or_hidden_only_folder_creates_the_context(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "hidden").mkdir()
    (tmp_path / "hidden" / ".DS_Store").write_bytes(b"\0")
    for name in ("empty", "hidden", "new/nested"):
        Context.open(tmp_path / name, embedder=MockEmbedder(dim=8)).close()
        assert (tmp_path / name / "trails.json").is_file()


def test_a_file_put_into_an_existing_context_does_not_lock_it_out(tmp_path):
    Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)).close()
    (tmp_path / "kb" / "README.txt").write_text("what this context holds")
    with Context.open(tmp_path / "kb") as ctx:
        assert ctx.vectors.count() == 0
    with Context.open(tmp_path / "kb", read_only=True) as ctx:
        assert ctx.read_only


@pytest.mark.parametrize("given", ["file", "absolute", "moved"])
def test_delete_given_a_documents_file_names_the_iri_to_delete(kb, given, monkeypatch):
    """``trails delete notes/a.md`` said only "not a document of this context", though the
    context holds the document read from that file, under another name (its IRI)."""
    monkeypatch.chdir(kb.parent)
    path = {"file": "notes/a.md", "absolute": str(kb.parent / "notes" / "a.md"),
            "moved": str(kb.parent / "notes" / "a.md")}[given]
    if given == "moved":  # the file as ingest recorded it, since moved away
        (kb.parent / "notes" / "a.md").rename(kb.parent / "a-moved.md")
    line = _one_error_line(run_trails("--db", kb, "delete", path))
    assert f"{path} is the file of trails://local/doc/a.md" in line
    assert f"trails --db {kb} delete trails://local/doc/a.md" in line
    stats = json.loads(run_trails("--db", kb, "stats", "--json").stdout)
    assert stats["documents"] == 2  # nothing deleted


def test_delete_of_an_unknown_name_still_says_how_to_list_documents(kb):
    line = _one_error_line(run_trails("--db", kb, "delete", "notes/zzz.md"))
    assert "not a document of this context: notes/zzz.md" in line
    assert "is the file of" not in line


@pytest.mark.parametrize("command", [["sparql", DATES], ["query", "pumps", "--sparql", DATES]])
def test_a_variable_bound_twice_is_refused_not_the_last_value_silently(kb, command):
    """--bind since=... --bind since=... answered with the last value alone, as if the first
    had never been given (which reads like "either")."""
    line = _one_error_line(run_trails("--db", kb, *command, "--bind", "since=2023-01-01",
                                      "--bind", "since=2024-01-01"))
    assert "--bind since is given twice" in line
    assert "VALUES" in line


@pytest.mark.parametrize("command", [["sparql"], ["query", "pumps", "--sparql"]])
def test_a_folder_given_as_the_query_says_it_is_a_folder(kb, command):
    """A folder's name was read as the query's text: 'does not parse: at line 1, column 6'."""
    line = _one_error_line(run_trails("--db", kb, *command, kb.parent / "notes"))
    assert "is a folder, not a query file" in line


LATIN_1 = 'SELECT ?doc WHERE { ?doc schema:name "caf\xe9" }'.encode("latin-1")


@pytest.mark.parametrize("command", [["sparql"], ["query", "pumps", "--sparql"]])
@pytest.mark.parametrize("where", ["file", "stdin"])
def test_a_query_that_is_no_utf8_names_the_byte_from_a_file_or_stdin(kb, command, where):
    """From stdin it was "'utf-8' codec can't encode character '\\udce9'" (or a lone
    surrogate "in sparql_filter"), from a file the codec's own words."""
    query = kb.parent / "latin.rq"
    query.write_bytes(LATIN_1)
    given = ("-", LATIN_1) if where == "stdin" else (str(query), None)
    line = _one_error_line(run_trails("--db", kb, *command, given[0], input=given[1]))
    named = "stdin" if where == "stdin" else str(query)
    assert f"{named} is not UTF-8 text (byte 0xe9 at offset 41)" in line
    assert "surrogate" not in line and "codec" not in line


@pytest.mark.parametrize("command", [["sparql"], ["query", "pumps", "--sparql"]])
@pytest.mark.parametrize("where", ["file", "stdin"])
def test_a_query_saved_with_a_byte_order_mark_runs(kb, command, where):
    """A UTF-8 BOM (Windows editors write one) made the query fail to parse; the service
    already skips it."""
    text = "\ufeffSELECT ?doc WHERE { ?doc schema:dateCreated ?c }"
    query = kb.parent / "bom.rq"
    query.write_text(text, encoding="utf-8")
    given = ("-", text.encode("utf-8")) if where == "stdin" else (str(query), None)
    out = run_trails("--db", kb, *command, given[0], "--json", input=given[1])
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert len(answer if command == ["sparql"] else answer["hits"]) == 2


@pytest.mark.parametrize("command", [["stats"], ["query", "pumps"], ["init"]])
def test_an_empty_db_is_refused_not_read_as_the_working_directory(kb, monkeypatch, command):
    """`--db "$KB"` with KB unset named the working directory: inside a context it answered
    from it, elsewhere it said ". holds no trails context"."""
    monkeypatch.chdir(kb)
    line = _one_error_line(run_trails("--db", "", *command))
    assert "--db is empty" in line
    monkeypatch.chdir(kb.parent)
    assert "--db is empty" in _one_error_line(run_trails("--db", " ", *command))


def test_audit_for_a_scope_nothing_holds_or_names_says_so(kb, tmp_path):
    """`trails audit --scope defualt` listed the SPARQL queries confined to no scope (which
    match any --scope) as if they were that scope's runs, and said nothing of the name."""
    query = "SELECT ?s WHERE { ?s ?p ?o } LIMIT 1"
    with Context.open(kb) as ctx:  # a query confined to no scope, recorded as served
        assert record_sparql(ctx, "svc", query, [], ctx.kg.query(query), started_now())
    assert run_trails("--db", kb, "query", "pumps").returncode == 0
    listed = run_trails("--db", kb, "audit", "--scope", "defualt", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [run["kind"] for run in json.loads(listed.stdout)] == ["sparql"]
    assert "note: no scope 'defualt' holds anything now, and no run listed names it" in \
        listed.stderr
    assert "(the scopes now: default)" in listed.stderr
    right = run_trails("--db", kb, "audit", "--scope", "default", "--json")
    assert "note:" not in right.stderr
    assert "search" in [run["kind"] for run in json.loads(right.stdout)]


def test_a_query_of_the_default_scope_when_the_documents_are_in_others_says_where(tmp_path):
    """Documents ingested with --scope, then a query without one: 0 hits and not a word,
    though every document is one --scope away."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("The pump failed in building 3.")
    db = tmp_path / "kb"
    assert run_trails("--db", db, "init", "--model", "mock:16").returncode == 0
    assert run_trails("--db", db, "ingest", notes, "--scope", "team").returncode == 0
    for options in ([], ["--json"]):
        answer = run_trails("--db", db, "query", "pumps", *options)
        assert answer.returncode == 0, answer.stderr
        said = " ".join((answer.stderr if "--json" in options else answer.stdout).split())
        assert ("the default scope, which a search naming no scope reads, holds no documents; "
                "this context's are in the scope team (scope='team', --scope team)") in said
    found = run_trails("--db", db, "query", "pumps", "--scope", "team")
    assert "holds no documents" not in found.stderr and "pump failed" in found.stdout


def test_retrieve_without_a_scope_names_the_scopes_holding_the_documents():
    ctx = fresh_context()
    ingest_all([Document("a", "mem", "The pump failed in building 3.")], ctx=ctx, scope="team")
    empty = retrieve("pumps", ctx)
    assert not empty
    assert ("the default scope, which a search naming no scope reads, holds no documents; "
            "this context's are in the scope team (scope='team', --scope team)") in empty.notes
    found = retrieve("pumps", ctx, scope="team")
    assert found and not any("holds no documents" in note for note in found.notes)
    ingest_all([Document("b", "mem", "Minutes of the board.")], ctx=ctx)  # the default's own
    none_here = retrieve("zebra", ctx, mode="graph",
                         sparql_filter="SELECT ?iri WHERE { ?iri schema:position 99 }")
    assert not none_here and not any("holds no documents" in n for n in none_here.notes)


@pytest.mark.parametrize("directory, read_only, said", [
    (None, False, "a context's directory is a path (str or Path), got NoneType"),
    (123, False, "got int 123"),
    ("", False, "an empty string; name one"),
    ("kb", "no", "read_only must be True or False, got str 'no'"),
    ("kb", 1, "read_only must be True or False, got int 1"),
])
def test_context_open_refuses_arguments_of_the_wrong_kind(tmp_path, monkeypatch, directory,
                                                           read_only, said):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(TrailsError, match=re.escape(said)):
        Context.open(directory, read_only=read_only, embedder=MockEmbedder(dim=8))
    assert list(tmp_path.iterdir()) == []  # nothing made, the working directory included


@pytest.mark.parametrize("base", ["https://example.org/kb", "urn:x:kb"])
def test_a_base_iri_given_without_a_final_slash_or_hash_is_refused_naming_the_fix(tmp_path,
                                                                                   base):
    said = "does not end in / or #, so the IRIs minted under it would run on from it"
    with pytest.raises(TrailsError, match=re.escape(said)) as caught:
        Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8), base_iri=base)
    assert f"give {base + '/'!r}" in str(caught.value)
    assert not (tmp_path / "kb").exists()
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8), base_iri=base + "/") as ctx:
        with pytest.raises(TrailsError, match="does not end in / or #"):
            ingest_all([Document("a", "mem", "text")], ctx=ctx, base_iri=base)
        assert ctx.vectors.count() == 0
        ingest_all([Document("a", "mem", "text")], ctx=ctx)
        assert ctx.kg.select_iris("SELECT ?d WHERE { ?d a trails:Document }") == [
            f"{base}/doc/a"]
    refused = run_trails("--db", tmp_path / "kb2", "init", "--model", "mock:8",
                         "--base-iri", base)
    assert refused.returncode == 1 and "does not end in / or #" in refused.stderr


@pytest.mark.parametrize("base", ["https://example.org/kb", "urn:x:kb"])
def test_an_in_memory_context_refuses_a_base_iri_without_a_final_slash_or_hash(base):
    # Context.memory takes the base from its caller, as Context.open does: without the
    # final / the documents' IRIs ran on from it (https://example.org/kbdoc/a).
    with pytest.raises(TrailsError, match="does not end in / or #") as caught:
        Context.memory(MockEmbedder(dim=8), base_iri=base)
    assert f"give {base + '/'!r}" in str(caught.value)
    parts = fresh_context()  # a context built from parts takes its base from its caller too
    with pytest.raises(TrailsError, match="does not end in / or #"):
        Context(parts.kg, parts.vectors, parts.embedder, base_iri=base)
    with Context.memory(MockEmbedder(dim=8), base_iri=base + "#") as ctx:
        ingest_all([Document("a", "mem", "text")], ctx=ctx)
        assert ctx.kg.select_iris("SELECT ?d WHERE { ?d a trails:Document }") == [
            f"{base}#doc/a"]


def test_arguments_given_in_the_wrong_order_are_refused_naming_the_order():
    # retrieve(ctx, "q") said only "got Context"; replay("run", ctx) raised an AttributeError
    # from its inside ("'str' object has no attribute 'audit'").
    import asyncio

    from trails import aretrieve, replay

    ctx = fresh_context()
    ingest_all([Document("a", "mem", "alpha beta")], ctx=ctx)
    for swapped in (lambda: retrieve(ctx, "alpha"),
                    lambda: asyncio.run(aretrieve(ctx, "alpha"))):
        with pytest.raises(InvalidArgumentTypeError,
                           match=r"got a Context: the question goes first, "
                                 r"retrieve\(query, ctx\)"):
            swapped()
    run = retrieve("alpha", ctx).run_id or "0" * 32
    with pytest.raises(InvalidArgumentTypeError,
                       match=r"^replay\(\) takes the context first: replay\(ctx, run\)$"):
        replay(run, ctx)
    with pytest.raises(InvalidArgumentTypeError,
                       match=r"^replay\(\) takes a trails Context first .*got str$"):
        replay("kb", run)


def test_a_directory_under_the_home_directory_is_opened_there(tmp_path, monkeypatch):
    # Context.open("~/kb") made a directory named "~" in the working directory, where the
    # next Context.open("~/kb") from elsewhere found nothing (and `rm -rf ~` removes home).
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    with Context.open("~/kb", embedder=MockEmbedder(dim=8)) as ctx:
        ingest_all([Document("a", "mem", "alpha")], ctx=ctx)
    assert list((tmp_path / "work").iterdir()) == []
    assert (tmp_path / "home" / "kb" / "trails.json").is_file()
    with Context.open("~/kb", embedder=MockEmbedder(dim=8), read_only=True) as again:
        assert again.vectors.count() == 1


@pytest.mark.parametrize("make", [
    lambda model: Context.memory(model),
    lambda model: fresh_context(embedder=model),
    lambda model: Context.open("kb", embedder=model),
])
def test_an_embedder_class_given_for_an_embedder_is_refused_naming_the_fix(tmp_path,
                                                                          monkeypatch, make):
    # MockEmbedder (the class) passed the Embedder protocol check and failed deep inside
    # with "dim ... got property" or a pydantic ValidationError.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidArgumentTypeError,
                       match=r"got the class MockEmbedder: make one, MockEmbedder\(\.\.\.\)"):
        make(MockEmbedder)
    assert list(tmp_path.iterdir()) == []


def test_an_embedder_class_given_to_retrieve_is_refused_naming_the_fix():
    # It passed the protocol check and failed as "the embedder makes <property object>-d
    # vectors".
    ctx = fresh_context()
    with pytest.raises(InvalidArgumentTypeError,
                       match=r"got the class MockEmbedder: make one, MockEmbedder\(\.\.\.\)"):
        retrieve("alpha", ctx, embedder=MockEmbedder)


@pytest.mark.parametrize("duplicate", [copy.copy, copy.deepcopy, pickle.dumps])
def test_a_context_is_never_copied_or_pickled_and_says_what_to_do_instead(tmp_path,
                                                                         duplicate):
    # copy.copy made a second Context over the same open stores and writer lock (closing
    # either closed both); deepcopy and pickle failed on a lock or a lambda inside.
    with Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8)) as ctx:
        ingest_all([Document("a", "mem", "alpha")], ctx=ctx)
        with pytest.raises(InvalidArgumentTypeError,
                           match=r"^a Context holds open stores and is not copied or pickled: "
                                 r"share this one \(threads may\), or open the directory "
                                 r"again in another process: Context\.open\("):
            duplicate(ctx)
        assert retrieve("alpha", ctx)  # still open and whole


def test_a_long_documents_repr_shows_the_start_of_its_text_and_its_length():
    # A loader's documents printed in a notebook showed every character of every text.
    text = "River deltas. " * 10_000
    shown = repr(Document("a.md", "a.md", text, metadata={"author": "Ann"}))
    assert len(shown) < 400
    assert shown.startswith("Document(id='a.md', source='a.md', text='River deltas. River")
    assert f"… ({len(text)} characters)" in shown and "'author': 'Ann'" in shown
    short = Document("b", "b.md", "Short.")
    assert "text='Short.'" in repr(short) and "characters" not in repr(short)


@pytest.mark.parametrize(("given", "said"), [
    ({"kg": "oxigraph"}, "kg must be a KnowledgeGraph"),
    ({"vectors": "sqlite-vec"}, "vectors must be a VectorStore"),
    ({"metadata_predicates": ["author"]}, "metadata_predicates must map metadata keys"),
    ({"metadata_predicates": {"author": "dc terms"}}, "which is no absolute IRI"),
    ({"audit": "yes"}, "audit must be True, False, an AuditConfig or None"),
    ({"on_ingest": 5}, "on_ingest takes a callable or a list of callables; got int"),
])
def test_a_part_or_setting_of_the_wrong_kind_is_refused_before_a_context_is_made(
        tmp_path, given, said):
    # kg="oxigraph" wrote a trails.json recording a graph of type str, then failed closing
    # it; vectors="sqlite-vec" and metadata_predicates=["author"] failed inside
    # (AttributeError) after the directory was made; audit="yes" was taken as true.
    with pytest.raises(TrailsError, match=re.escape(said)):
        Context.open(tmp_path / "kb", embedder=MockEmbedder(dim=8), **given)
    assert not (tmp_path / "kb").exists()

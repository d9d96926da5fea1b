"""The examples of the README, of docs/*.md and of every ``trails <command> --help`` (docs/cli.md)
run as written, page by page, in a fresh directory.

A page's ```python blocks run in order in one namespace; its shell blocks (```bash, ```console,
or an unlabelled fence of ``trails`` lines) run line by line through the ``trails`` command in
this process (tests/_cli.py), each line expected to exit 0. Blocks depending on earlier blocks
of the same page run after them. Every fenced block of a page is either run, or not code (JSON,
TOML, Turtle, SPARQL, a proxy's configuration, a tree), or preceded by ``<!-- not run: why -->``:
nothing is skipped silently. docs/compliance.md and docs/designs.md have tests of their own
(test_compliance_doc.py, test_designs_doc.py).

What the pages take for granted is here, made small: the folders and files their commands name
(notes/, docs/, adr/, ontology.ttl, filter.rq...), a context ``./kb`` made with the mock
embedder (so ``Context.open("./kb")`` and ``trails --db kb`` run without the packaged model),
and, for blocks that use ``ctx`` without making it, an in-memory context holding ``b.md``.
"""

from __future__ import annotations

import datetime
import re
import shlex
import textwrap
from pathlib import Path

import pytest

from _cli import run_trails
from conftest import ROOT
from trails.ingest import Document, ingest_all
from trails.testing import fresh_context

PAGES = ["README.md", "docs/retrieval.md", "docs/ingestion.md", "docs/graph.md",
         "docs/service.md", "docs/mcp.md", "docs/retention.md", "docs/resilience.md",
         "docs/embedders.md", "docs/security.md", "docs/scale.md", "docs/tracing.md",
         "docs/cli.md", "docs/testing.md", "docs/architecture.md"]
# Pages whose every example needs a server (or that have none): their blocks are still checked
# to be marked, so a new example there runs unless it says why not.
NOTHING_TO_RUN = {"docs/security.md", "docs/mcp.md", "docs/scale.md", "docs/tracing.md",
                  "docs/architecture.md"}
# A fence may be indented (inside a list item): its block is read dedented.
FENCE = re.compile(r"^( {0,3})```(\w*)\n(.*?)^\1```", re.MULTILINE | re.DOTALL)
NOT_RUN = re.compile(r"<!-- not run: [^>]+ -->\s*\Z")
NOT_CODE = {"json", "toml", "turtle", "sparql", "nginx", "caddyfile", "text"}
SHELL = {"bash", "console", "sh"}
# Lines of a run shell block (docs/cli.md's help examples cannot carry a comment) that name what
# a fresh directory cannot have. Each rule says why; a page must still run lines of its own.
SKIPPED_LINES = [
    (re.compile(r"\.\.\."), "a placeholder (a run id, a password) the reader fills in"),
    (re.compile(r"\bRUN\b"), "a placeholder for a run id"),
    (re.compile(r"https?://|postgresql://|openai:"), "a server: Qdrant, SPARQL, PostgreSQL, OpenAI"),
    (re.compile(r"^trails (?:--db \S+ )?(?:serve|mcp)\b"), "starts a server"),
    (re.compile(r"^trails eval\b"), "needs a BEIR dataset"),
    (re.compile(r"--level protected"), "needs scopes given security levels (trails init)"),
]
# The packaged model is not what these examples are about: the mock embedder stands in for it.
MODEL = ("--model all-MiniLM-L6-v2", "--model mock:32")
ENV = {"TRAILS_MODEL": "mock:32", "COLUMNS": "200", "TRAILS_DB": None}

FILES = {
    "notes/deploy.md": "---\ntitle: Deploy\ndate: 2024-06-01\n---\n# Deploy\n\n"
                       "We deploy with make release. Release notes follow.\n",
    "notes/old.md": "# Old\n\nOld notes.\n",
    "notes/drafts/wip.md": "A draft.\n",
    "README.md": "# Project\n\nHow to deploy.\n",
    "docs/a.md": "---\ntitle: A\ndate: 2024-06-01\n---\n# A\n\nResults are kept exact.\n",
    "docs/b.md": "# B\n\nRails routing.\n",
    "docs/old.md": "# Old\n\nEvidence of failure.\n",
    "adr/0001-exact.md": "# Exact ranking\n\nOnly candidates are ranked.\n",
    "notes.jsonl": '{"id": "n1", "text": "A note on seals."}\n',
    "policies/leave.md": "---\nexpires: 2025-01-31\n---\nA leave policy.\n",
    "scratch/todo.md": "---\ndate: 2024-01-01\n---\nA scratch note.\n",
    "ontology.ttl": "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
                    '<https://example.org/release> rdfs:label "release" .\n',
    "legal-facts.ttl": '<https://example.org/ruling> <https://example.org/court> "high" .\n',
    "facts.nq": '<https://example.org/a> <https://example.org/p> "v" <https://example.org/g> .\n',
    "filter.rq": "SELECT ?iri WHERE { ?iri schema:isPartOf ?doc . "
                 "?doc schema:dateCreated ?created . FILTER(?created >= ?since) }\n",
}


def blocks(page: str) -> list[tuple[int, str, str, bool]]:
    """(line, language, code, marked not run) of each fenced block of ``page``."""
    text = (ROOT / page).read_text(encoding="utf-8")
    found = []
    for fence in FENCE.finditer(text):
        line = text.count("\n", 0, fence.start()) + 1
        language, code = fence.group(2), textwrap.dedent(fence.group(3))
        if page == "docs/cli.md" and "Example" in code:  # a help text: its Example lines
            code = "\n".join(x[2:] for x in code.split("Example")[-1].split("╭")[0].splitlines()
                             if x.startswith("  "))
            language = "bash"
        found.append((line, language, code, bool(NOT_RUN.search(text[:fence.start()]))))
    return found


def kind(language: str, code: str) -> str:
    """python, shell, or prose: what a block is."""
    if language == "python" or language in SHELL:
        return "shell" if language in SHELL else "python"
    lines = [x for x in code.splitlines() if x.strip() and not x.startswith("#")]
    if language == "" and lines and all(x.startswith(("trails ", "    ")) for x in lines):
        return "shell"
    assert language in NOT_CODE or language == "", f"a ```{language} block: run it or mark it"
    return "prose"


def commands(code: str) -> list[str]:
    """The command lines of a shell block: continuations joined, heredocs written out."""
    lines, out = code.splitlines(), []
    while lines:
        line = lines.pop(0)
        while line.endswith("\\"):
            line = line[:-1] + " " + lines.pop(0).strip()
        heredoc = re.fullmatch(r"cat > (\S+) <<'(\w+)'", line.strip())
        if heredoc:
            body = []
            while (next_line := lines.pop(0)) != heredoc.group(2):
                body.append(next_line)
            Path(heredoc.group(1)).write_text("\n".join(body) + "\n")
            continue
        if line.strip() and not line.lstrip().startswith("#"):
            out.append(line.strip())
    return out


def run_line(line: str) -> list[str]:
    """Run one shell line (``a && b``, ``a || b``); returns the commands it ran."""
    words = shlex.split(line.replace(*MODEL), comments=True)
    ran, ok, joiner = [], True, None
    while words:
        cut = next((i for i, w in enumerate(words) if w in ("&&", "||")), len(words))
        command, words = words[:cut], words[cut:]
        if joiner is None or (joiner == "&&") == ok:
            assert command[0] == "trails", f"not a trails command: {line}"
            done = run_trails(*command[1:], env=ENV)
            ok = done.returncode == 0
            ran.append(" ".join(command))
            assert ok or "||" in words, (line, done.stdout[-1500:], done.stderr[-1500:])
            # an example whose filter admits nothing of what the examples ingest shows nothing
            assert "nothing matched" not in done.stdout + done.stderr, (line, done.stdout[-1500:])
        joiner = words.pop(0) if words else None
    return ran


def given_ctx():
    """The context a fragment's ``ctx`` stands for: in memory, holding b.md."""
    ctx = fresh_context(dim=32)
    ingest_all([Document("b.md", "b.md", "Rails routing, kept exact.",
                         metadata={"title": "B", "date": "2024-06-01"})], ctx=ctx)
    return ctx


@pytest.mark.parametrize("page", PAGES)
def test_the_pages_examples_run_as_written(page, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for name, content in FILES.items():
        if name.startswith("scratch/") and page != "docs/retention.md":
            continue  # docs/cli.md makes a context ./scratch
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content)
    for db in ("kb", "./kb"):
        assert run_trails("--db", db, "init", "--model", "mock:32", env=ENV).returncode == 0
    ctx = given_ctx()
    namespace: dict[str, object] = {}
    ran, skipped = [], []
    try:
        for line, language, code, not_run in blocks(page):
            what = kind(language, code)
            if not_run or what == "prose":
                continue
            where = f"{page}:{line}"
            if what == "python":
                namespace.update(ctx=ctx, datetime=datetime)
                exec(compile(code, where, "exec"), namespace)  # noqa: S102 - the page's own code
                ran.append(where)
                continue
            for command in commands(code):
                why = next((why for rule, why in SKIPPED_LINES if rule.search(command)), None)
                if why:
                    skipped.append((command, why))
                else:
                    ran += run_line(command)
    finally:
        ctx.close()
        capsys.readouterr()
    if page not in NOTHING_TO_RUN:
        assert ran, f"{page}: no example ran (skipped: {skipped})"


# The pages a user relies on: every link, ADR and module they name must lead somewhere.
USER_PAGES = PAGES + ["docs/compliance.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")
ADR = re.compile(r"\bADR[ -]?0*(\d+)\b")
MODULE = re.compile(r"`(?:python/)?(?:trails/)?((?:[a-z_]+/)*[a-z_]+\.py)`")
DEFINED_IN = re.compile(r"`(\w+)`\s+in\s+`(?:python/)?trails/((?:[a-z_]+/)*[a-z_]+\.py)`")


def anchor(heading: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("page", USER_PAGES)
def test_every_link_and_adr_of_the_page_resolves(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    base = (ROOT / page).parent
    broken = []
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, fragment = target.partition("#")
        file = (base / path) if path else ROOT / page
        if not file.exists():
            broken.append(target)
        elif fragment and file.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", file.read_text(encoding="utf-8"), re.MULTILINE)
            if fragment not in {anchor(h) for h in headings}:
                broken.append(target)
    broken += [f"ADR {n}" for n in ADR.findall(text)
               if not list((ROOT / "adr").glob(f"{int(n):04d}-*.md"))]
    assert not broken, f"{page} links to what is not there: {broken}"


@pytest.mark.parametrize("page", USER_PAGES)
def test_every_module_the_page_names_exists(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    package = ROOT / "python" / "trails"
    missing = []
    for module in set(MODULE.findall(text)):
        if module.startswith(("tests/", "benchmarks/", "studies/", "examples/")):
            if not (ROOT / module).exists():
                missing.append(module)
        elif not (package / module).exists() and not list(package.rglob(module)) and not any(
                (ROOT / folder / module).exists() for folder in ("tests", "benchmarks")):
            missing.append(module)
    # "`name` in `trails/x/y.py`": the module defines the name.
    for name, module in DEFINED_IN.findall(text):
        source = package / module
        if not source.exists() or not re.search(rf"^\s*(?:def|class) {name}\b|^{name}\b\s*[:=]",
                                                source.read_text(), re.MULTILINE):
            missing.append(f"{name} in {module}")
    assert not missing, f"{page} names modules that are not there: {missing}"


def test_the_readme_gives_two_set_up_commands_that_run_the_demo_and_the_tests():
    """The README's set-up block is exactly `make demo` and `make test`, both Makefile targets:
    the demo runs the main job on the embedded defaults, the tests are the whole suite."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    (block,) = FENCE.findall(section)
    lines = [x.split("#")[0].strip() for x in block[2].splitlines() if x.strip()]
    assert lines == ["make demo", "make test"], lines
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    demo = re.search(r"^demo:.*\n\t(.+)$", makefile, re.MULTILINE)
    assert demo and demo.group(1).strip() == "$(PY) examples/demo.py"
    script = (ROOT / "examples" / "demo.py").read_text(encoding="utf-8")
    # the embedded defaults: a context directory opened with no graph, store or embedder given
    assert re.search(r"Context\.open\(target\)", script), "the demo must use the defaults"
    test = re.search(r"^test:(?:.*\\\n)*.*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert test and re.search(r"\$\(PYTEST\) -n \$\(WORKERS\) \$\(DIST\) -q", test.group(1))
    (pytest_line,) = [x for x in test.group(1).splitlines() if "$(PYTEST)" in x]
    assert " -m " not in pytest_line, "make test runs the whole suite, no marker left out"


def test_the_prefixes_docs_retrieval_says_are_predeclared_are_those_of_the_graph():
    from trails.kg import PREFIXES

    text = (ROOT / "docs" / "retrieval.md").read_text(encoding="utf-8")
    said = re.search(r"The prefixes (.+?) are\s+predeclared", text, re.DOTALL)
    assert said, "docs/retrieval.md no longer lists the predeclared prefixes"
    assert set(re.findall(r"`(\w+)`", said.group(1))) == set(PREFIXES)


def test_architecture_names_every_module_and_every_top_level_name():
    """docs/architecture.md says where each module sits and what it does, and lists the
    names ``import trails`` gives: a module or a name added is added there too."""
    import trails

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    package = ROOT / "python" / "trails"
    unnamed = [str(path.relative_to(package)) for path in sorted(package.rglob("*.py"))
               if path.stem not in ("__init__", "__main__")
               and not re.search(rf"(?<![\w.]){re.escape(path.stem)}(?:\.py)?(?!\w)", text)]
    assert not unnamed, f"modules docs/architecture.md does not name: {unnamed}"
    said = re.search(r"\(`trails\.__all__`, (\d+)\s+names\):(.+?)\. The parts", text, re.DOTALL)
    assert said, "docs/architecture.md no longer lists trails.__all__"
    assert int(said.group(1)) == len(trails.__all__)
    assert set(re.findall(r"`(\w+)`", said.group(2))) == set(trails.__all__)

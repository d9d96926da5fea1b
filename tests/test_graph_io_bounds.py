"""What ``load`` parses is bounded: XML entities, literal size, total size (issue: a 750-byte
RDF/XML "billion laughs" aborted the process; a literal over 16 MiB was a raw MemoryError).

The hostile inputs run in a subprocess, so a crash or an abort shows as a failure rather than
taking the test run with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from trails.errors import RdfLimitError, RdfSyntaxError, TrailsError
from trails.kg import rdfio
from trails.testing import fresh_context

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
EX = "http://example.org/"
MIB = 1 << 20


def rdfxml(body: str, entities: str = "") -> str:
    doctype = f"<!DOCTYPE rdf:RDF [\n{entities}\n]>\n" if entities else ""
    return (f'<?xml version="1.0"?>\n{doctype}<rdf:RDF xmlns:rdf="{RDF}" xmlns:ex="{EX}">\n'
            f"{body}\n</rdf:RDF>\n")


def laughs(levels: int = 9, width: int = 10) -> str:
    """The classic: each entity is ``width`` of the one before."""
    lines = ['<!ENTITY lol0 "lol">']
    lines += [f'<!ENTITY lol{i} "{f"&lol{i - 1};" * width}">' for i in range(1, levels + 1)]
    return rdfxml(f'<rdf:Description rdf:about="{EX}s"><ex:p>&lol{levels};</ex:p>'
                  "</rdf:Description>", "\n".join(lines))


def quadratic(size: int = 200_000, references: int = 50_000) -> str:
    """No nesting: one large entity referenced many times."""
    refs = "&big;" * references
    return rdfxml(f'<rdf:Description rdf:about="{EX}s"><ex:p>{refs}</ex:p></rdf:Description>',
                  f'<!ENTITY big "{"x" * size}">')


LOAD = textwrap.dedent("""
    import json, sys
    from trails.errors import TrailsError
    from trails.testing import fresh_context
    with fresh_context(dim=8) as ctx:
        before = len(ctx.kg)
        try:
            ctx.kg.load(open(sys.argv[1], "rb").read(), format=sys.argv[2])
            print(json.dumps({"loaded": len(ctx.kg) - before}))
        except TrailsError as exc:
            print(json.dumps({"error": type(exc).__name__, "message": str(exc),
                              "added": len(ctx.kg) - before}))
""")


def load_in_a_subprocess(tmp_path: Path, text: str | bytes, fmt: str) -> dict[str, object]:
    path = tmp_path / "input"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
    out = subprocess.run([sys.executable, "-c", limit + LOAD, str(path), fmt],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("text", [
    pytest.param(laughs(), id="billion-laughs"),
    pytest.param(laughs(levels=6, width=40), id="wide-laughs"),
    pytest.param(laughs(levels=30, width=2), id="deep-laughs"),
    pytest.param(quadratic(), id="quadratic-blowup"),
    pytest.param(rdfxml(f'<rdf:Description rdf:about="{EX}&lol9;"/>',
                        "\n".join(['<!ENTITY lol0 "lol">'] + [
                            f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">'
                            for i in range(1, 10)])), id="in-an-attribute"),
])
def test_xml_entities_that_expand_past_the_bound_are_refused_before_parsing(tmp_path, text):
    assert len(text.encode()) < 1_000_000
    answer = load_in_a_subprocess(tmp_path, text, "rdfxml")
    assert answer["error"] == "RdfLimitError" and answer["added"] == 0, answer
    assert "entit" in str(answer["message"]) and "nothing was loaded" in str(answer["message"])


@pytest.mark.parametrize("entities", [
    '<!ENTITY a "&a;">',
    '<!ENTITY a "&b;">\n<!ENTITY b "&a;">',
    '<!ENTITY % p "x">',
    f'<!ENTITY ext SYSTEM "file://{Path(__file__).resolve()}">',
    '<!ENTITY pub PUBLIC "-//X//EN" "http://example.org/x.dtd">',
])
def test_entities_that_refer_to_themselves_or_to_files_are_refused(entities):
    text = rdfxml(f'<rdf:Description rdf:about="{EX}s"><ex:p>&a;</ex:p></rdf:Description>',
                  entities)
    with fresh_context(dim=8) as ctx:
        before = len(ctx.kg)
        with pytest.raises(RdfLimitError, match="nothing was loaded"):
            ctx.kg.load(text.encode(), format="rdfxml")
        assert len(ctx.kg) == before


def test_namespace_entities_of_an_ordinary_owl_file_still_load():
    entities = "\n".join(f'<!ENTITY {name} "{iri}">' for name, iri in [
        ("owl", "http://www.w3.org/2002/07/owl#"), ("ex", EX),
        ("rdfs", "http://www.w3.org/2000/01/rdf-schema#")])
    classes = "\n".join(f'<owl:Class rdf:about="&ex;C{i}"><rdfs:subClassOf rdf:resource='
                        f'"&owl;Thing"/><rdfs:label>C&amp;{i}</rdfs:label></owl:Class>'
                        for i in range(2000))
    text = rdfxml(classes, entities).replace(
        "<rdf:RDF ", '<rdf:RDF xmlns:owl="http://www.w3.org/2002/07/owl#" '
        'xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#" ')
    with fresh_context(dim=8) as ctx:
        assert ctx.kg.load(text.encode(), format="rdfxml") == 6000
        assert ctx.kg.query(f"ASK {{ <{EX}C7> rdfs:subClassOf <http://www.w3.org/2002/07/"
                            "owl#Thing> }") is True
        [row] = ctx.kg.query(f'SELECT ?l WHERE {{ <{EX}C7> rdfs:label ?l }}')
        assert row["l"] == "C&7"


def _big_literal(fmt: str, size: int) -> bytes:
    value = "x" * size
    if fmt == "rdfxml":
        return rdfxml(f'<rdf:Description rdf:about="{EX}s"><ex:p>{value}</ex:p>'
                      "</rdf:Description>").encode()
    if fmt == "jsonld":
        return json.dumps({"@id": f"{EX}s", f"{EX}p": value}).encode()
    return f'<{EX}s> <{EX}p> "{value}" .\n'.encode()


@pytest.mark.parametrize("fmt", ["turtle", "ntriples", "nquads", "trig", "jsonld", "rdfxml"])
def test_a_literal_past_the_bound_is_a_limit_error_in_every_format(fmt):
    with fresh_context(dim=8) as ctx:
        before = len(ctx.kg)
        with pytest.raises(RdfLimitError, match="literal") as raised:
            ctx.kg.load(_big_literal(fmt, 17 * MIB), format=fmt)
        assert f"{rdfio.MAX_LITERAL_CHARS:,}" in str(raised.value)
        assert len(ctx.kg) == before
        assert ctx.kg.load(_big_literal(fmt, 1000), format=fmt) == 1


def test_input_past_the_total_bound_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(rdfio, "MAX_RDF_BYTES", 1000)
    small = f'<{EX}s> <{EX}p> "ok" .\n'
    big = small * 100
    (tmp_path / "big.nt").write_text(big)
    (tmp_path / "small.nt").write_text(small)
    with fresh_context(dim=8) as ctx:
        before = len(ctx.kg)
        for source in (tmp_path / "big.nt", big.encode(), big):
            with pytest.raises(RdfLimitError, match="1,000 bytes"):
                ctx.kg.load(source, format="ntriples")
        assert len(ctx.kg) == before
        assert ctx.kg.load(tmp_path / "small.nt") == 1


def test_entities_expanding_past_the_total_bound_are_refused(monkeypatch):
    monkeypatch.setattr(rdfio, "MAX_RDF_BYTES", 5000)
    text = rdfxml(f'<rdf:Description rdf:about="{EX}s"><ex:p>{"&e;" * 100}</ex:p>'
                  "</rdf:Description>", f'<!ENTITY e "{"y" * 100}">')
    with fresh_context(dim=8) as ctx, pytest.raises(RdfLimitError, match="expanded"):
        ctx.kg.load(text.encode(), format="rdfxml")


def test_a_limit_error_is_an_rdf_syntax_error_and_a_trails_error():
    assert issubclass(RdfLimitError, RdfSyntaxError) and issubclass(RdfLimitError, TrailsError)


@pytest.mark.parametrize("name, text", [
    ("laughs.rdf", laughs()),
    ("long.ttl", _big_literal("turtle", 17 * MIB).decode()),
    ("long.rdf", _big_literal("rdfxml", 17 * MIB).decode()),
])
def test_trails_load_refuses_them_in_one_line_with_exit_1(tmp_path, name, text):
    db = tmp_path / "kb"
    env = dict(os.environ)
    run = [sys.executable, "-m", "trails.cli", "--db", str(db)]
    init = subprocess.run([*run, "init", "--model", "mock:8"], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert init.returncode == 0, init.stderr
    (tmp_path / name).write_text(text)
    out = subprocess.run([*run, "load", str(tmp_path / name)], capture_output=True, text=True,
                         env=env, timeout=300, check=False)
    assert out.returncode == 1, (out.returncode, out.stderr[-2000:])
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "nothing was loaded" in lines[0], out.stderr[-2000:]


def _one(value: str) -> list:
    import pyoxigraph as ox

    return [ox.Quad(ox.NamedNode(f"{EX}s"), ox.NamedNode(f"{EX}p"), ox.Literal(value))]


@pytest.mark.parametrize("value, fmt", [
    ("東" * (6 * MIB), "nquads"),   # 6 Mi characters, 18 MiB of UTF-8
    ("東" * (6 * MIB), "turtle"),
    ("x" * (9 * MIB), "jsonld"),    # the JSON-LD reader holds half as much
])
def test_an_export_that_load_could_not_read_back_is_refused(tmp_path, value, fmt):
    """A graph holding a value load cannot read back was exported without a word, and the
    backup failed only when it was restored."""
    import pyoxigraph as ox

    from trails.errors import ConfigurationError
    from trails.kg import OxigraphGraph

    # What the export would have been does not load: the refusal is not overcautious.
    written = ox.serialize(_one(value), format=rdfio.FORMATS[fmt])
    with pytest.raises(RdfLimitError):
        OxigraphGraph().load(written, format=fmt)
    kg = OxigraphGraph()
    kg.extend(_one(value))
    backup = tmp_path / f"backup.{fmt}"
    backup.write_text("old")
    with pytest.raises(ConfigurationError, match="could never be loaded again"):
        kg.dump(backup, format=fmt)
    assert backup.read_text() == "old"  # the last good export is kept
    assert not list(tmp_path.glob(".backup*"))
    with pytest.raises(ConfigurationError, match=f"{EX}s"):
        kg.dump(format=fmt)


def test_a_value_that_fits_exports_and_loads_back():
    from trails.kg import OxigraphGraph

    kg = OxigraphGraph()
    kg.extend(_one("x" * (9 * MIB)))  # over what JSON-LD reads back, within N-Quads
    target = OxigraphGraph()
    assert target.load(kg.dump(format="nquads").encode(), format="nquads") == 1
    assert list(target.store) == list(kg.store)

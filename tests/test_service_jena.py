"""Apache Jena's SPARQL client (`arq.rsparql`, Debian's libapache-jena-java) against a live
service, with and without keys. Skips without Jena (`make jena` installs it).

Debian's Jena 4.5 moves its bundled Xerces classes to the package ``xerces`` but leaves their
message files under ``org/apache/jena/ext/xerces``; the classes cannot start without them, so
the test copies them where the classes look. Several logging bindings are installed side by
side in ``/usr/share/java``; the ones that loop or conflict stay off the class path.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import zipfile
from pathlib import Path

import httpx
import pytest

from service_support import ALPHA_DOCS, BETA_DOCS, keys, live_server, seeded_context
from trails.service.app import create_app

pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(not Path("/usr/share/java/jena-arq.jar").exists()
                                 or shutil.which("java") is None,
                                 reason="Apache Jena not installed (make jena)")]

JARS = Path("/usr/share/java")
_LEFT_OUT = re.compile(r"log4j-over-slf4j|slf4j-(log4j12|jcl|jdk14|simple|reload4j)|jcl-over|"
                       r"maven3-slf4j|logback|-\d[\d.]*\.jar$")
TEXTS = "SELECT ?t WHERE { ?c <https://schema.org/text> ?t } ORDER BY ?t"


@pytest.fixture(scope="module")
def classpath(tmp_path_factory) -> str:
    extra = tmp_path_factory.mktemp("jena-resources")
    prefix = "org/apache/jena/ext/xerces/"
    with zipfile.ZipFile(JARS / "jena-core.jar") as jar:
        for name in jar.namelist():
            if name.startswith(prefix) and not name.endswith((".class", "/")):
                target = extra / "xerces" / name[len(prefix):]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(jar.read(name))
    jars = [str(j) for j in sorted(JARS.glob("*.jar")) if not _LEFT_OUT.search(j.name)]
    return ":".join([str(extra), *jars])


def _rsparql(classpath: str, service: str, query: str, tmp_path: Path) -> str:
    file = tmp_path / "query.rq"
    file.write_text(query)
    done = subprocess.run(["java", "-cp", classpath, "arq.rsparql", "--service", service,
                           "--query", str(file), "--results", "CSV"],
                          capture_output=True, text=True, timeout=120, check=False)
    return done.stdout + done.stderr


def _ready(base: str) -> None:
    deadline = time.monotonic() + 30
    while httpx.get(base + "/health/ready").status_code != 200:
        assert time.monotonic() < deadline, "never ready"
        time.sleep(0.02)


def test_jena_queries_a_service_without_keys_with_and_without_a_dataset(classpath, tmp_path):
    ctx = seeded_context(tmp_path / "kb")
    try:
        with live_server(create_app(ctx, None)) as base:
            _ready(base)
            everything = _rsparql(classpath, base + "/sparql", TEXTS, tmp_path)
            assert all(text in everything
                       for text in [*ALPHA_DOCS.values(), *BETA_DOCS.values()]), everything
            beta = _rsparql(classpath, base + "/sparql?default-graph-uri=urn%3Atrails%3Ascope"
                            "%3Abeta", TEXTS, tmp_path)
            assert all(text in beta for text in BETA_DOCS.values()), beta
            assert not any(text in beta for text in ALPHA_DOCS.values()), beta
    finally:
        ctx.close()


def test_jena_reports_a_401_from_a_service_with_keys_without_crashing(classpath, tmp_path):
    ctx = seeded_context(tmp_path / "kb")
    try:
        with live_server(create_app(ctx, keys())) as base:
            _ready(base)
            output = _rsparql(classpath, base + "/sparql", TEXTS, tmp_path)
    finally:
        ctx.close()
    assert "401" in output, output
    assert "Exception in thread" not in output, output  # the client read the challenge
    assert not any(text in output for text in ALPHA_DOCS.values())

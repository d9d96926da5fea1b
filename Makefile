# The two commands a newcomer needs: `make demo` and `make test`. Each sets itself up.
# `make test-fast` is the everyday tier of the tests (docs/testing.md).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# `make test` first type-checks python/trails (strict mypy, [tool.mypy] in pyproject.toml) and
# stops when that fails; `make typecheck` runs it alone, `make test TYPECHECK=0` skips it.
TYPECHECK ?= 1

.PHONY: demo test test-fast typecheck bench clean virtuoso chromium jena

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# The CPU build of torch first: a plain `torch` requirement may pull a multi-GB CUDA build.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[all,dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

# The cache stays inside the virtualenv, which `make clean` removes and git ignores.
typecheck: $(STAMP)
	$(PY) -m mypy --cache-dir $(VENV)/.mypy_cache

# Virtuoso 7 for the graph tests on a second SPARQL server (they skip without `virtuoso-t`):
# installed from Debian's packages when missing, as root with apt-get only; otherwise this says
# why not and the tests skip. `make test VIRTUOSO=0` leaves it alone.
VIRTUOSO ?= 1
virtuoso:
	@if command -v virtuoso-t >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" != 0 ]; then \
		echo "virtuoso-t not found and not root: the Virtuoso tests skip (install: apt-get install -y virtuoso-opensource)"; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
		echo "virtuoso-t not found and no apt-get: the Virtuoso tests skip"; \
	else \
		echo "installing virtuoso-opensource for the Virtuoso tests"; \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q virtuoso-opensource) >/dev/null \
			|| echo "apt-get could not install virtuoso-opensource: the Virtuoso tests skip"; \
	fi

# Debian's chromium and chromium-driver for the display tests, which render each object's HTML
# in a real headless browser (they skip without them): installed as root with apt-get when
# missing, as for Virtuoso. `make test CHROMIUM=0` leaves it alone.
CHROMIUM ?= 1
chromium:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" != 0 ]; then \
		echo "chromium not found and not root: the browser display tests skip (install: apt-get install -y chromium chromium-driver)"; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
		echo "chromium not found and no apt-get: the browser display tests skip"; \
	else \
		echo "installing chromium and chromium-driver for the browser display tests"; \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver) >/dev/null \
			|| echo "apt-get could not install chromium: the browser display tests skip"; \
	fi

# Debian's Apache Jena for the SPARQL client tests (`arq.rsparql` against `trails serve`; they
# skip without it): installed as root with apt-get when missing, as for Virtuoso.
# `make test JENA=0` leaves it alone.
JENA ?= 1
jena:
	@if [ -f /usr/share/java/jena-arq.jar ]; then :; \
	elif [ "$$(id -u)" != 0 ]; then \
		echo "Jena not found and not root: the Jena client tests skip (install: apt-get install -y libapache-jena-java)"; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
		echo "Jena not found and no apt-get: the Jena client tests skip"; \
	else \
		echo "installing libapache-jena-java for the Jena client tests"; \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q libapache-jena-java) >/dev/null \
			|| echo "apt-get could not install libapache-jena-java: the Jena client tests skip"; \
	fi

# Bytecode is written (whatever PYTHONDONTWRITEBYTECODE says), and the package compiled first:
# the suite starts hundreds of Python processes (the CLI, killed writers), each of which would
# otherwise compile every module of trails again, and pytest keeps its rewritten test modules.
PYTEST := PYTHONDONTWRITEBYTECODE= $(PY) -m pytest
# pytest-xdist workers: two, the cores the suite's time limits are set for. A machine with
# more cores runs `make test WORKERS=4` (or WORKERS=logical: one worker per core). worksteal:
# each worker starts with a contiguous half (a module's shared server starts once) and an idle
# worker takes tests from the other's end, so no worker idles through a long last test.
WORKERS ?= 2
DIST := --dist worksteal
# pytest exits 5 when it collects nothing: that is a broken suite, never a pass. The 25 slowest
# tests are listed at the end, so a run shows where the suite's time goes.
test: $(STAMP) $(if $(filter 1,$(TYPECHECK)),typecheck) $(if $(filter 1,$(VIRTUOSO)),virtuoso) $(if $(filter 1,$(JENA)),jena) \
		$(if $(filter 1,$(CHROMIUM)),chromium)
	$(PY) -m compileall -q python >/dev/null
	$(PYTEST) -n $(WORKERS) $(DIST) -q --durations=25; status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi; exit $$status

# The everyday tier (docs/testing.md): no test marked slow (the real model, large data), none
# that starts a server, drives a browser or is about real processes (kills, Ctrl-C); each
# property test with at most 10 examples (hypothesis profile `fast`); no type check.
# `make test` runs everything.
FAST_TIER := not slow and not server and not browser and not process
test-fast: $(STAMP)
	$(PY) -m compileall -q python >/dev/null
	HYPOTHESIS_PROFILE=fast $(PYTEST) -n $(WORKERS) $(DIST) -q -m "$(FAST_TIER)"; status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi; exit $$status

bench: $(STAMP)
	$(PY) benchmarks/hybrid.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build python/*.egg-info

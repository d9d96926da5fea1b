# The two commands a newcomer needs: `make demo` and `make test`. Each sets itself up.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# `make test` first type-checks python/trails (strict mypy, [tool.mypy] in pyproject.toml) and
# stops when that fails; `make typecheck` runs it alone, `make test TYPECHECK=0` skips it.
TYPECHECK ?= 1

.PHONY: demo test typecheck bench clean

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

# pytest exits 5 when it collects nothing: that is a broken suite, never a pass.
test: $(STAMP) $(if $(filter 1,$(TYPECHECK)),typecheck)
	$(PY) -m pytest -n 2 -q; status=$$?; \
	if [ $$status -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi; exit $$status

bench: $(STAMP)
	$(PY) benchmarks/hybrid.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build python/*.egg-info

# Prism: `make demo` sets everything up and runs the main job; `make test` runs the tests.
PYTHON ?= $(shell command -v python3.12 2>/dev/null || echo python3)
VENV := .venv
PY := $(VENV)/bin/python
PROGRAM ?= swiglu

.PHONY: demo test lint venv bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev]"
	touch $@

venv: $(VENV)/.installed

demo: venv
	$(PY) -m prism demo $(PROGRAM)

test: venv
	$(PY) -m pytest -q -n 2

lint: venv
	$(VENV)/bin/ruff check prism tests bench scripts
	$(VENV)/bin/mypy

bench: venv
	$(PY) -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

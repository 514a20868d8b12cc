# `make render` and `make test` work on a fresh machine with only Python and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: render test lint bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) install -e '.[test]'
	touch $@

render: $(VENV)/.installed
	$(BIN)/gpuconf render clusters -o rendered

lint: $(VENV)/.installed-test
	$(BIN)/ruff check gpuconf tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

# Two workers: the suite is mostly waiting on processes and sockets, and CI has two cores.
test: lint
	$(BIN)/python -m pytest -n 2

bench: $(VENV)/.installed
	$(BIN)/python bench/render.py
	$(BIN)/python bench/node.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

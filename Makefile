# Two entry points for a fresh machine (Python >= 3.11 and make):
#   make demo   sets up .venv with the demo extras and runs `ragmeter demo`
#   make test   sets up .venv with the test extras, runs the lint and type gate (ruff, mypy) and
#               the whole test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip

.PHONY: demo test test-slow bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(VENV)/.demo-stamp: pyproject.toml | $(BIN)/python
	$(PIP) install -q -e '.[demo]'
	touch $@

$(VENV)/.test-stamp: pyproject.toml | $(BIN)/python
	$(PIP) install -q -e '.[demo,pandas,test]'
	touch $@

demo: $(VENV)/.demo-stamp
	$(BIN)/ragmeter demo

test: $(VENV)/.test-stamp
	$(BIN)/ruff check src tests benchmarks tools examples
	$(BIN)/ruff format --check src tests benchmarks tools examples
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n 2 -p no:cacheprovider -m "not slow"
	$(BIN)/python tools/check_import_time.py --limit 0.3

# Checks too slow for the everyday suite (the MiniLM SciFact reproduction encodes 5,183
# abstracts, about 4.5 min on 2 cores); CI runs them after `make test`.
test-slow: $(VENV)/.test-stamp
	$(BIN)/python -m pytest -q -p no:cacheprovider -m slow

bench: $(VENV)/.test-stamp
	$(BIN)/python benchmarks/bench_metrics.py

clean:
	rm -rf $(VENV) .pytest_cache .ragmeter-cache

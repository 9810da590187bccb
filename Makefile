# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_OUT ?= out/demo

.PHONY: demo test install lint bench bench-quick clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# The demo needs raypipe alone; the tests add their extras (torch, megatron-core, ...).
$(VENV)/.base: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

# mosaicml-streaming reads the mds shards back; its declared dependencies pin numpy < 2.2
# and a torchvision with no CPU wheel beside torch 2.13, and its MDS reader needs neither:
# it is installed alone, the few modules that reader imports come with the test extra.
$(VENV)/.installed: $(VENV)/.base
	$(BIN)/pip install -q -e ".[test]"
	$(BIN)/pip install -q --no-deps mosaicml-streaming==0.13.0
	touch $@

install: $(VENV)/.installed

# Tests and benchmarks also cover the optional semantic dedup of fine-tuning data.
$(VENV)/.semantic: $(VENV)/.installed
	$(BIN)/pip install -q -e ".[test,semantic]"
	touch $@

## Run the main job end to end on the bundled sample corpus (local Ray, local output).
demo: $(VENV)/.base
	$(BIN)/raypipe run examples/demo.yaml --set output.path=$(DEMO_OUT)

## Install and run the test suite.
test: $(VENV)/.semantic
	$(BIN)/ruff check raypipe tests bench jobs scripts
	$(BIN)/pytest -q

lint: install
	$(BIN)/ruff check raypipe tests bench jobs scripts
	$(BIN)/ruff format --check raypipe tests bench jobs

## Benchmarks beside peers and ceilings (reads ../shared/data); writes BENCHMARKS.md.
bench: $(VENV)/.semantic
	$(BIN)/python -m bench run

bench-quick: $(VENV)/.semantic
	$(BIN)/python -m bench run --quick

clean:
	rm -rf out $(VENV)

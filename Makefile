# memsearch: two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The CPU build of torch, installed before anything else so that sentence-transformers
# never pulls a multi-GB CUDA build. GPU users: see README, "Using a GPU".
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed

export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: setup run test bench dist-check clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q $(TORCH)
	$(BIN)/python -m pip install -q -e '.[dev,bench]'
	touch $(STAMP)

run: setup
	$(BIN)/memsearch validate examples/memory
	$(BIN)/memsearch ls examples/memory
	$(BIN)/memsearch index examples/memory
	$(BIN)/memsearch search examples/memory "which warehouse did we choose for Atlas and why" -k 3

test: setup
	$(BIN)/python -m pytest -q

bench: setup
	TORCH='$(TORCH)' $(BIN)/python -m benchmarks all --peers setup

# Build the wheel, install it into a fresh virtualenv outside the checkout (CPU torch first) and
# run the CLI on a copy of examples/memory: packaging cannot rot (.ci/run calls it after `make test`).
dist-check:
	PYTHON='$(PYTHON)' TORCH='$(TORCH)' .ci/dist-check

clean:
	rm -rf $(VENV) examples/memory/.memsearch .pytest_cache

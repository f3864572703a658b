# memsearch: two commands set everything up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The CPU build of torch, installed before anything else so that sentence-transformers
# never pulls a multi-GB CUDA build. GPU users: see docs/install.md, "A GPU, or a network".
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed
# Where `make install` links the command: PREFIX/bin/memsearch.
PREFIX ?= $(HOME)/.local

export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: setup run install uninstall test test-fast lint docs bench dist-check clean

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

# A link to the venv's entry point (its shebang names the venv's python), so `memsearch` works from any
# shell, and from GUI clients given its absolute path; the clone must stay where it is.
install: setup
	mkdir -p '$(PREFIX)/bin'
	ln -sfn '$(abspath $(BIN))/memsearch' '$(PREFIX)/bin/memsearch'
	@echo "memsearch -> $(PREFIX)/bin/memsearch"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "note: $(PREFIX)/bin is not on PATH: add it to your shell's profile";; esac

# Removes the link only when it is this clone's.
uninstall:
	if [ "$$(readlink '$(PREFIX)/bin/memsearch')" = '$(abspath $(BIN))/memsearch' ]; then rm '$(PREFIX)/bin/memsearch'; fi

# The whole suite; it builds the documentation strictly once (tests/repo/test_docs.py).
test: setup lint
	$(BIN)/python -m pytest -q

# The tests that load no model and start no process (under a minute or two): `pytest -m "not slow"`.
test-fast: setup lint
	$(BIN)/python -m pytest -q -m "not slow"

# ruff: pycodestyle, pyflakes and import order (pyproject.toml, [tool.ruff]).
lint: setup
	$(BIN)/ruff check memsearch tests benchmarks
	@! grep -rnE '^(<<<<<<<|>>>>>>>)( |$$)|^=======$$' --include='*.py' --include='*.md' --include='*.toml' --include='*.yml' \
		--exclude-dir=.venv --exclude-dir=.git --exclude-dir=site . || { echo "merge conflict markers (above)"; exit 1; }

# The documentation (docs/, mkdocs.yml), strictly: a broken link or anchor fails. Output: site/ (ignored).
docs: setup
	$(BIN)/mkdocs build --strict --quiet

bench: setup
	TORCH='$(TORCH)' $(BIN)/python -m benchmarks all --peers setup

# Build the wheel, install it into a fresh virtualenv outside the checkout (CPU torch first) and
# run the CLI on a copy of examples/memory: packaging cannot rot (.ci/run calls it after `make test`).
dist-check:
	PYTHON='$(PYTHON)' TORCH='$(TORCH)' .ci/dist-check

clean:
	rm -rf $(VENV) examples/memory/.memsearch .pytest_cache site

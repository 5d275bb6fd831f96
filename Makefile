# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench clean sweep-deps browser-deps test-browser

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test,lint]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m tpufleet.demo

test: $(STAMP)
	$(BIN)/python -m pytest -q tests tpufleet

# All three checks run (and report) even when an earlier one fails; the target fails if any did.
lint: $(STAMP)
	@status=0; \
	$(BIN)/ruff check . || status=1; \
	$(BIN)/ruff format --check . || status=1; \
	$(BIN)/mypy || status=1; \
	exit $$status

# Optional: Dask for `tpufleet sweep --cluster` and the local cluster (sweeps also run serially without it).
sweep-deps: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,lint,sweep]'

# Optional: Debian's Chromium for the HTML report tests (they skip, saying why, without it). Needs root or sudo.
browser-deps:
	command -v chromium >/dev/null || ( \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null )

test-browser: browser-deps $(STAMP)
	$(BIN)/python -m pytest -q tests -m browser

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py
	$(BIN)/python benchmarks/bench_collective.py
	$(BIN)/python benchmarks/bench_sweep.py --sweep
	$(BIN)/python benchmarks/bench_simulate.py
	$(BIN)/python benchmarks/bench_goodput.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info

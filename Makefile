# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench soak soak-pg clean sweep-deps browser-deps test-browser lock test-latest db-deps

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Exact versions with their hashes from the committed lock (`make lock` refreshes it), then tpufleet itself.
$(STAMP): pyproject.toml requirements.lock | $(BIN)/python
	$(BIN)/python -m pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m tpufleet.demo

# Both cores (pytest-xdist; an idle worker takes queued tests from the busy one, so the long ones do not finish
# last on one core); the ten slowest tests are listed at the end.
# Derandomized (the `ci` Hypothesis profile): the same examples every run, so the suite's outcome and its time
# depend on nothing but the code; TPUFLEET_HYPOTHESIS_PROFILE=dev (new examples each run) or nightly searches more.
test: $(STAMP)
	TPUFLEET_HYPOTHESIS_PROFILE=$${TPUFLEET_HYPOTHESIS_PROFILE:-ci} \
	$(BIN)/python -m pytest -q -n $${TPUFLEET_TEST_WORKERS:-auto} --dist worksteal --durations=10 tests tpufleet

# Refresh the locks from pyproject.toml's ranges (pip-tools, in a venv of its own).
LOCK_BIN := .venv-lock/bin
# `make test` covers the server and the PostgreSQL backend: their extras are in the main lock.
LOCKED_EXTRAS := --extra test --extra lint --extra serve --extra postgres
COMPILE := $(LOCK_BIN)/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links
lock:
	test -x $(LOCK_BIN)/pip-compile || ( $(PYTHON) -m venv .venv-lock && $(LOCK_BIN)/python -m pip install --quiet pip-tools )
	$(COMPILE) --upgrade $(LOCKED_EXTRAS) -o requirements.lock pyproject.toml
	$(COMPILE) --upgrade $(LOCKED_EXTRAS) --extra sweep --extra columnar --extra bench -o requirements-sweep.lock pyproject.toml

# The suite against the newest versions pyproject.toml allows, in a venv of its own (CI reports, never fails, on it).
test-latest:
	test -x .venv-latest/bin/python || $(PYTHON) -m venv .venv-latest
	.venv-latest/bin/python -m pip install --quiet --upgrade --upgrade-strategy eager -e '.[test,lint,serve,postgres]'
	.venv-latest/bin/python -m pytest -q -n $${TPUFLEET_TEST_WORKERS:-auto} -p no:cacheprovider tests tpufleet

# Every check runs (and reports) even when an earlier one fails; the target fails if any did. import-linter keeps
# the layers (.importlinter); tools/check_core_io.py keeps file access out of the core; tools/check_function_lengths.py
# keeps functions short (60 lines, 40 in the command-line shell).
lint: $(STAMP)
	@status=0; \
	$(BIN)/ruff check . || status=1; \
	$(BIN)/ruff format --check . || status=1; \
	$(BIN)/mypy || status=1; \
	$(BIN)/lint-imports || status=1; \
	$(BIN)/python tools/check_core_io.py || status=1; \
	$(BIN)/python tools/check_function_lengths.py || status=1; \
	$(BIN)/python tools/check_module_lengths.py || status=1; \
	exit $$status

# Optional: Dask for `tpufleet sweep --cluster` and the local cluster (sweeps also run serially without it), PyArrow,
# Numba and ISA-L for goodput-report's large logs, and DuckDB and Polars, the baselines of `make bench`.
# Then goodput-report's compiled loop and accounting helpers are built ahead of time into one module (about 8 s,
# once: a report of a large log then never imports Numba), and compiled into Numba's cache (about 10 s, once) for
# where that module cannot be used (TPUFLEET_PREBUILT=0, no C compiler); the first large report would pay for each.
sweep-deps: $(STAMP)
	$(BIN)/python -m pip install --quiet --require-hashes -r requirements-sweep.lock
	@$(BIN)/python -c "from tpufleet.state import prebuiltcache as p; p.install() or print('note: the kernels are not \
	built ahead of time (see _tpufleet_kernels_*.failed in their cache, if any): Numba loads them for each large report')"
	@$(BIN)/python -c "from tpufleet.goodput import compiledaccount as c; c.prepared() or print('warning: the compiled \
	loop could not be compiled: goodput-report reads large logs with msgspec (the same answers, slower)')"

# Optional: Debian's PostgreSQL server for the database backend's tests (they start their own server in a
# temporary directory; without it they skip, saying why). Needs root or sudo.
db-deps:
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || ( \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null )

# Optional: Debian's Chromium for the HTML report tests (they skip, saying why, without it). Needs root or sudo.
browser-deps:
	command -v chromium >/dev/null || ( \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null )

test-browser: browser-deps $(STAMP)
	$(BIN)/python -m pytest -q tests -m browser

bench: $(STAMP) sweep-deps
	$(BIN)/python benchmarks/run_all.py
	$(BIN)/python benchmarks/bench_collective.py
	$(BIN)/python benchmarks/bench_sweep.py --sweep
	$(BIN)/python benchmarks/bench_simulate.py
	$(BIN)/python benchmarks/bench_goodput.py
	$(BIN)/python benchmarks/bench_input_memory.py
	$(BIN)/python benchmarks/bench_generations.py
	$(BIN)/python benchmarks/bench_everyday.py
	$(BIN)/python benchmarks/bench_import.py
	$(BIN)/python benchmarks/bench_inprocess.py
	$(BIN)/python benchmarks/bench_compound.py
	$(BIN)/python benchmarks/bench_rescue.py
	$(BIN)/python benchmarks/bench_pg.py
	$(BIN)/python benchmarks/bench_serve.py

# 10,000 `import k8s --apply` runs against flapping nodes (20-40 minutes): state.json stays bounded.
soak: $(STAMP)
	$(BIN)/python benchmarks/soak_import.py --runs $${SOAK_RUNS:-10000}

# 12 writer processes for 60 s against a throwaway PostgreSQL server (about 2 minutes): serials consecutive, the
# journal complete, no cube or port used twice.
soak-pg: $(STAMP)
	$(BIN)/python benchmarks/soak_pg.py

clean:
	rm -rf $(VENV) .venv-lock .venv-latest .pytest_cache .mypy_cache .ruff_cache build *.egg-info

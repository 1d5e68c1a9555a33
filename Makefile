# Set-up is part of every target: a fresh machine needs only `make demo` or `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# axe-core for the console's accessibility test: pinned, from npm, kept in the venv (never committed).
AXE    := $(VENV)/axe/node_modules/axe-core/axe.min.js

.PHONY: demo test lint typecheck unit unit-cpu integration notebooks bench wheel-check clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP)

$(AXE):
	npm install --silent --no-audit --no-fund --prefix $(VENV)/axe axe-core@4.11.0
	test -f $(AXE)

demo: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/hindsight-demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check langchain_hindsight hindsight_demo
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

# The unit tier: tests/unit_tests/ (a folder per subpackage; an integration test found there fails
# tests/unit_tests/repo/test_tiers.py), in one process: its budget is CPU, and every xdist worker would start up
# and collect the whole tier again (make unit-cpu measures both; add -n auto for a shorter wall time on a machine
# with cores to spare). -m "not integration" leaves out the few sweep parameters marked integration.
unit: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/pytest tests/unit_tests -m "not integration"

# The unit tier's CPU time (summed over processes) and where it goes, next to the same tier on 2 xdist workers:
# benchmarks/results/unit_tier_cpu.{json,md}.
unit-cpu: $(STAMP)
	$(BIN)/python benchmarks/unit_tier_cpu.py

# The integration tier on INTEGRATION_WORKERS xdist workers, a test file per worker at a time (module-scoped
# fixtures are built once): each worker has its own temporary tree, embedded Postgres data directory and socket,
# and Chroma servers on free ports. The 25 slowest tests are listed at the end of every run.
INTEGRATION_WORKERS ?= 2
integration: $(STAMP) $(AXE)
	HF_HUB_OFFLINE=1 $(BIN)/pytest -m integration -n $(INTEGRATION_WORKERS) --dist loadfile --durations=25

test: lint typecheck unit integration

# Re-execute the notebooks in place (offline), so their committed outputs are regenerated, never edited by hand.
notebooks: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python notebooks/execute.py

wheel-check:
	bash .ci/wheel-check $(PYTHON)

bench: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache

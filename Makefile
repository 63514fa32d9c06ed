# Argora: two commands do all set-up on a fresh machine.
#   make demo   venv + migrations + demo data + web server + celery worker (embedded SQLite + filesystem broker)
#   make test   the whole suite on SQLite, then again on PostgreSQL + Redis + a real celery worker when they answer
#               (that second run leaves out the tests that cannot reach a database or broker: tests/conftest.py)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
REQ_HASH := $(shell cat requirements.txt requirements-dev.txt | sha256sum | cut -c1-12)
STAMP := $(VENV)/.installed-$(REQ_HASH)
# eslint for the static JS (package.json, package-lock.json): node_modules/ is installed by `npm ci` when the lock file
# changes, like the venv
NODE_STAMP := node_modules/.installed-$(shell cat package-lock.json 2>/dev/null | sha256sum | cut -c1-12)
PG_URL ?= postgres://postgres@127.0.0.1:5432/argora
REDIS_URL ?= redis://127.0.0.1:6379/15
# the 30 slowest tests are listed at the end of each half: where the time of the suite goes
PYTEST_ARGS ?= --durations=30
# test processes per half (pytest-xdist; a whole module stays in one process; tests/xdist_isolation.py gives each
# its own var/ folder, test database and Redis databases); TEST_PROCESSES=0: one process, as plain pytest
TEST_PROCESSES ?= 2
# ... except these modules, which run after, in one plain process: schemathesis gives every API operation's test the
# same node id, and pytest-xdist, which hands tests out by node id, would run one of them only
SERIAL_TESTS := tests/test_api_fuzz.py
XDIST := $(if $(filter 0,$(TEST_PROCESSES)),-p no:xdist,-n $(TEST_PROCESSES) --dist loadfile $(SERIAL_TESTS:%=--ignore=%))
SERIAL := $(if $(filter 0,$(TEST_PROCESSES)),true,$(PY) -m pytest -p no:xdist $(PYTEST_ARGS) $(SERIAL_TESTS))

.PHONY: venv node chromium test test-sqlite test-postgres check lint format demo migrate bench clean

venv: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	rm -f $(VENV)/.installed-*
	touch $@

node: $(NODE_STAMP)

$(NODE_STAMP): package.json package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "eslint (make check) needs Node.js >= 20.19 and npm"; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# Browser tests drive Debian's Chromium (Playwright never downloads a browser here).
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

test: venv chromium
	$(MAKE) --no-print-directory test-sqlite
	@if $(PY) scripts/services_up.py; then \
	  ARGORA_TESTS_DATABASE_ONLY=1 $(MAKE) --no-print-directory test-postgres; \
	else echo "PostgreSQL/Redis not reachable: suite ran on SQLite only"; fi

test-sqlite: venv
	env -u DATABASE_URL -u CELERY_BROKER_URL $(PY) -m pytest $(XDIST) $(PYTEST_ARGS)
	env -u DATABASE_URL -u CELERY_BROKER_URL $(SERIAL)

test-postgres: venv
	DATABASE_URL=$(PG_URL) CELERY_BROKER_URL=$(REDIS_URL) $(PY) -m pytest $(XDIST) $(PYTEST_ARGS)
	DATABASE_URL=$(PG_URL) CELERY_BROKER_URL=$(REDIS_URL) $(SERIAL)

# every module compiles, the layout rules hold (README "Layout"; the suite runs the same check), then the linters
# (README "Checks"; configured in pyproject.toml and eslint.config.js): ruff's rules and its formatting, mypy on the
# engine, eslint on the static JS. `make format` rewrites what ruff can fix by itself.
check: venv node
	$(PY) -m compileall -q argora corpus annotation ml mturk prolific scripts
	$(PY) scripts/check_layout.py
	$(MAKE) --no-print-directory lint

# all four run, whichever fails: one pass shows every finding
lint: venv node
	@status=0; for tool in "$(VENV)/bin/ruff check ." "$(VENV)/bin/ruff format --check ." "$(VENV)/bin/mypy" \
	  "npx --no-install eslint ."; do echo "== $$tool"; $$tool || status=1; done; exit $$status

format: venv
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

migrate: venv
	$(PY) manage.py migrate --noinput

demo: venv migrate
	$(PY) manage.py load_demo
	$(PY) manage.py run_demo

# `make bench`: every benchmark once, one after the other (never two at once), each printing ours, its named
# baseline and the ratio over interleaved repeats with the machine load; the whole output goes to
# var/bench/run-<UTC time>.txt. bench/RESULTS.md says which run its figures come from. UKP_ASPECT: the UKP ASPECT
# TSV for bench/quality.py (skipped, saying so, when missing).
UKP_ASPECT ?= ../shared/data/ukp_aspect/UKP_ASPECT.tsv
# ASPECT_SPANS: a labelled aspect-span folder for bench/silver.py's F1 on real data, by default one experiment split
# of the argument-aspect corpus (github.com/Leibniz-HBI/argument-aspect-corpus-v1) copied under var/data/
# (skipped, saying so, when missing).
ASPECT_SPANS ?= var/data/argument-aspect-corpus-v1/experiments/exp1_mw/corpora/conll_gold_token
BENCH_RUNS = \
	"bench/silver.py" \
	"bench/silver.py --data $(ASPECT_SPANS)" \
	"bench/silver.py --workers 1,2 --n 1000" \
	"bench/import_jsonl.py --rows 1000000 --repeat 2" \
	"bench/import_kialo.py" \
	"bench/agreement.py --repeat 3" \
	"bench/bws.py" \
	"bench/ranker.py" \
	"bench/allocation.py --db sqlite" \
	"bench/allocation.py --db postgres" \
	"bench/active_learning.py --seeds 13,14,15" \
	"bench/quality.py --data $(UKP_ASPECT) --max-train 480 --max-eval 300 --max-length 64 --seeds 1,2"

bench: venv
	@mkdir -p var/bench; log=var/bench/run-$$(date -u +%Y%m%dT%H%M%S).txt; \
	for run in $(BENCH_RUNS); do \
	  set -- $$run; \
	  if [ "$$1" = bench/quality.py ] && [ ! -f "$(UKP_ASPECT)" ]; then \
	    echo "== $$run: skipped ($(UKP_ASPECT) not found; set UKP_ASPECT=...)" | tee -a $$log; continue; fi; \
	  if [ "$$2" = --data ] && [ "$$1" = bench/silver.py ] && [ ! -e "$(ASPECT_SPANS)" ]; then \
	    echo "== $$run: skipped ($(ASPECT_SPANS) not found; set ASPECT_SPANS=...)" | tee -a $$log; continue; fi; \
	  echo "== $$run ($$(date -u +%H:%M:%S) UTC)" | tee -a $$log; \
	  $(PY) $$run 2>&1 | grep --line-buffered -v -e '^Remove reshape node' -e '^Fused ' -e '^Ignore MatMul' -e '^Quantization parameters' -e '^get_tensor_type' | tee -a $$log; \
	  [ $${PIPESTATUS[0]} -eq 0 ] || { echo "== $$run failed" | tee -a $$log; exit 1; }; \
	done; echo "== all done ($$(date -u +%H:%M:%S) UTC): $$log"

clean:
	rm -rf var/ .pytest_cache .ruff_cache

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
PG_URL ?= postgres://postgres@127.0.0.1:5432/argora
REDIS_URL ?= redis://127.0.0.1:6379/15
PYTEST_ARGS ?=

.PHONY: venv chromium test test-sqlite test-postgres check demo migrate bench clean

venv: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	rm -f $(VENV)/.installed-*
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
	env -u DATABASE_URL -u CELERY_BROKER_URL $(PY) -m pytest $(PYTEST_ARGS)

test-postgres: venv
	DATABASE_URL=$(PG_URL) CELERY_BROKER_URL=$(REDIS_URL) $(PY) -m pytest $(PYTEST_ARGS)

# the layout rules (README "Layout") and a compile of every module; the suite runs the same check
check: venv
	$(PY) -m compileall -q argora corpus annotation ml mturk prolific scripts
	$(PY) scripts/check_layout.py

migrate: venv
	$(PY) manage.py migrate --noinput

demo: venv migrate
	$(PY) manage.py load_demo
	$(PY) manage.py run_demo

bench: venv
	@for f in bench/*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf var/ .pytest_cache

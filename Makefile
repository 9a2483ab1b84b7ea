# Steady Queue developer commands. Run `make help` for the list.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

VENV ?= .venv
VENV_DJANGO52 ?= .venv-django52
DJANGO52 ?= Django>=5.2,<5.3
# Database for `make test`: sqlite, postgres or mysql.
DB ?= sqlite
# Extra pytest arguments, e.g. make test ARGS="-x tests/test_enqueue.py".
ARGS ?=
# pytest-xdist processes: a number, auto (one per CPU), or 0 to run in a single process.
# Most of the suite waits on subprocesses and browsers, so two run well on two cores.
JOBS ?= auto
PORT ?= 8000

.PHONY: help demo docs docs-test test test-faults test-slow-processes test-django52 lint format system-deps check-db bench bench-smoke

help:
	@echo "make demo                  set up and run the demo site with a worker, restarted on code changes (http://127.0.0.1:$(PORT)/)"
	@echo "make test [DB=sqlite|postgres|mysql] [ARGS=...] [JOBS=auto|N|0]"
	@echo "                           install what the tests need and run the whole suite"
	@echo "make test-faults [DB=...]  the fault suite (kill -9, SIGSTOP, a database restart), left out of make test"
	@echo "make test-slow-processes [DB=...]  only the process tests marked slow (1,000 batches, 500 durable jobs under kill -9)"
	@echo "make test-django52         run the suite on Django 5.2 with the django-tasks backport (SQLite)"
	@echo "make docs                  build the documentation site into site/ (mkdocs build --strict)"
	@echo "make docs-test [DB=...] [FRESH_VIRTUALENV=1|0]"
	@echo "                           build it, then run tests/docs (links, the pages' code, the tutorial)"
	@echo "make lint                  ruff check and ruff format --check"
	@echo "make format                ruff format and ruff check --fix"
	@echo "make bench [DB=...] [ARGS=...]  benchmark against django-tasks-db (bench/README.md)"
	@echo "make bench-smoke [DB=...]  the benchmark's tiny version (N=200), as CI runs it"

demo:
	scripts/ensure-venv $(VENV) demo
	$(VENV)/bin/python demo_site/run_demo.py --port $(PORT)

test: check-db system-deps
	scripts/ensure-venv $(VENV) test
	SQ_TEST_DB=$(DB) $(VENV)/bin/python -m pytest -n $(JOBS) $(ARGS)

# The fault suite (tests/faults, and the process tests marked slow: a batch's callbacks
# under kill -9), one scenario at a time. On PostgreSQL it runs against a private server
# it starts on another port, which it may restart mid-run.
test-faults: check-db system-deps
	scripts/ensure-venv $(VENV) test
	wrapper=(); if [ "$(DB)" = postgres ]; then wrapper=($(VENV)/bin/python -m tests.faults.private_postgres); fi; \
	SQ_TEST_DB=$(DB) "$${wrapper[@]}" $(VENV)/bin/python -m pytest -n 0 -m slow tests/faults tests/processes $(ARGS)

# The process tests marked slow only (a batch's callbacks over 1,000 runs, 500 durable jobs,
# under kill -9):
# for databases without a fault suite stage of their own in CI (MySQL/MariaDB).
test-slow-processes: check-db system-deps
	scripts/ensure-venv $(VENV) test
	SQ_TEST_DB=$(DB) $(VENV)/bin/python -m pytest -n 0 -m slow tests/processes $(ARGS)

test-django52: system-deps
	scripts/ensure-venv $(VENV_DJANGO52) test '$(DJANGO52)'
	$(VENV_DJANGO52)/bin/python -c 'import django, django_tasks; print(f"Django {django.get_version()} with the django-tasks backport")'
	SQ_TEST_DB=sqlite $(VENV_DJANGO52)/bin/python -m pytest -n $(JOBS) $(ARGS)

# The documentation site, offline, with every warning an error (a broken link, a missing
# anchor, a page left out of the nav).
docs:
	scripts/ensure-venv $(VENV) docs
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# tests/docs: the strict build, every internal link and anchor, the code of the how-to
# pages, and the tutorial followed step by step (marked slow, so `-m ''` selects it too),
# by default from a fresh virtualenv into which this checkout is pip-installed
# (FRESH_VIRTUALENV=0: the test virtualenv stands for it, no network needed).
FRESH_VIRTUALENV ?= 1
docs-test: check-db docs
	scripts/ensure-venv $(VENV) test
	SQ_TEST_DB=$(DB) SQ_DOCS_FRESH_VIRTUALENV=$(FRESH_VIRTUALENV) \
	  $(VENV)/bin/python -m pytest -n 0 -m '' tests/docs $(ARGS)

lint: system-deps
	scripts/ensure-venv $(VENV) dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: system-deps
	scripts/ensure-venv $(VENV) dev
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: check-db system-deps
	scripts/ensure-venv $(VENV) bench
	$(VENV)/bin/python bench/run.py --db $(DB) $(ARGS)

bench-smoke: check-db system-deps
	scripts/ensure-venv $(VENV) bench
	$(VENV)/bin/python bench/run.py --db $(DB) --smoke

system-deps:
	scripts/install-system-deps

check-db:
	@case "$(DB)" in sqlite|postgres|mysql) ;; \
	  *) echo "DB must be sqlite, postgres or mysql, not '$(DB)'" >&2; exit 2 ;; esac

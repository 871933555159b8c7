# verilearn — the two commands: `make demo` and `make test`.
# Everything a fresh machine needs is installed from here (apt packages, the venvs,
# the Docker daemon), so CI (`.ci/run` → `make test`) needs no other step.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
INSTALL_STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha256sum | cut -c1-12)
APT_PACKAGES := docker.io bubblewrap chromium chromium-driver openssl
export VERILEARN_HOME ?= $(CURDIR)/.verilearn
export DAGSTER_HOME ?= $(VERILEARN_HOME)/dagster

# `$(call apt_install,PKGS)`: install the apt packages of PKGS that are missing (CI and new
# machines), as root or through sudo; every mk/*.mk installs its packages through it.
define apt_install
missing=""; for p in $(1); do \
  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
if [ -n "$$missing" ]; then \
  echo "installing apt packages:$$missing"; \
  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
  $$SUDO apt-get update -qq; \
  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing >/dev/null; \
fi
endef

# Each mk/*.mk adds its own targets; a family appends its setup targets to TEST_DEPS.
TEST_DEPS :=
include $(sort $(wildcard mk/*.mk))

.PHONY: help demo test install system-deps dockerd lint check-defs ui bench clean

help:
	@echo "make demo   — install, materialize the default graph, print the report"
	@echo "make test   — install, start the real services, run the whole suite"
	@echo "make loop   — install training + vLLM, train (SFT) on the demo home, evaluate base vs trained"
	@echo "make ui     — open the Dagster UI on the same instance (http://127.0.0.1:3000)"
	@echo "make bench  — run the benchmarks"

$(VPY):
	$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), f"need Python 3.11, got {sys.version}"'
	$(PYTHON) -m venv $(VENV)

$(INSTALL_STAMP): pyproject.toml | $(VPY)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -e '.[dev,train]'
	rm -f $(VENV)/.installed-*
	touch $@

install: $(INSTALL_STAMP)

# apt packages are installed only when one is missing (CI and new machines).
system-deps:
	@$(call apt_install,$(APT_PACKAGES))

# Start dockerd when no daemon answers; the sandbox falls back to bubblewrap otherwise.
dockerd: system-deps
	@if docker info >/dev/null 2>&1; then echo "docker: daemon answers"; else \
	  echo "docker: starting dockerd"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  ( $$SUDO nohup dockerd >/tmp/verilearn-dockerd.log 2>&1 & ); \
	  for i in $$(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done; \
	  docker info >/dev/null 2>&1 || { echo "dockerd did not start:"; tail -20 /tmp/verilearn-dockerd.log; exit 1; }; \
	fi

demo: install system-deps dockerd $(filter-out cluster-deps,$(TEST_DEPS))
	$(VENV)/bin/verilearn demo

# lint-imports: the import contract of pyproject.toml ([tool.importlinter]), the layering
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

check-defs: install
	cd $(CURDIR) && $(VENV)/bin/dg check defs

# The suite runs as two pytest sessions side by side: a third of a serial run leaves the
# two cores idle (vLLM start-ups, containers, Celery and the demo waiting), so one session
# fills the other's gaps. Session 1 names its folders; session 2 is `tests` without them,
# so a new folder cannot be left out. Each prints its own report (and slowest tests) when
# it ends, whole (--output-sync); either failing, or collecting nothing (exit 5), fails.
TEST_SESSION_1 := tests/training tests/scale tests/llm tests/platform tests/reports \
	tests/gate tests/ingest tests/e2e
PYTEST := VERILEARN_REQUIRE_DOCKER=1 VERILEARN_REQUIRE_VLLM=1 VERILEARN_REQUIRE_BROWSER=1 \
	VERILEARN_TINY_MODEL=$(CURDIR)/$(TINY_MODEL_DIR) $(VENV)/bin/pytest -ra -q --durations=15

test: install system-deps dockerd vllm-env tiny-model $(TEST_DEPS) lint check-defs
	@echo "pytest: two sessions side by side; each prints its report when it ends"
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-session-1 test-session-2

.PHONY: test-session-1 test-session-2
test-session-1:
	@echo "== pytest session 1: $(TEST_SESSION_1)"
	$(PYTEST) $(TEST_SESSION_1)

test-session-2:
	@echo "== pytest session 2: tests without session 1's folders"
	$(PYTEST) tests $(addprefix --ignore=,$(TEST_SESSION_1))

ui: install
	$(VENV)/bin/dagster dev -m verilearn_assets.definitions -h 127.0.0.1 -p 3000

bench: install dockerd vllm-env tiny-model $(TEST_DEPS)
	$(VPY) benchmarks/sandbox.py
	$(VPY) benchmarks/questions.py
	$(VPY) benchmarks/reports.py
	$(VPY) benchmarks/episodes.py
	$(VPY) benchmarks/context_budget.py
	$(VPY) benchmarks/dafny.py
	$(VPY) benchmarks/refactor.py
	$(VPY) benchmarks/training.py
	$(VPY) benchmarks/grpo.py

clean: cluster-down
	rm -rf .verilearn .pytest_cache .ruff_cache

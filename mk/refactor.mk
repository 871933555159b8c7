# Refactor family (included from the top-level Makefile).
# bubblewrap and docker.io come with APT_PACKAGES; ast-grep comes from pyproject's pin.
.PHONY: refactor-deps bench-refactor

refactor-deps: install
	@$(VENV)/bin/ast-grep --version >/dev/null 2>&1 || { \
	  echo "ast-grep missing from $(VENV): pip install ast-grep-cli==0.51.1"; exit 1; }
	@command -v bwrap >/dev/null || { echo "bubblewrap missing: make system-deps"; exit 1; }

TEST_DEPS += refactor-deps

# jailed runner steps/s against a bare ast-grep + pytest subprocess per step
bench-refactor: install
	$(VPY) benchmarks/refactor.py

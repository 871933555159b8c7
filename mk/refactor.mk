# Refactor family (included from the top-level Makefile).
# bubblewrap and docker.io come with APT_PACKAGES; ast-grep comes from pyproject's pin.
.PHONY: refactor-deps refactor-toolchains bench-refactor

# The language test runners of the refactor jail (refactor/verify/toolchains.py): node --test,
# go test, javac/java (the jail's JavaTest runner), gcc + make. Rust: a rustup stable
# toolchain when there is one (mapped read-only as it is), else Debian's cargo.
REFACTOR_APT_PACKAGES := golang-go nodejs openjdk-17-jdk-headless gcc make

refactor-toolchains:
	@$(call apt_install,$(REFACTOR_APT_PACKAGES))
	@ls -d $${RUSTUP_HOME:-$$HOME/.rustup}/toolchains/stable-* >/dev/null 2>&1 || \
	  command -v cargo >/dev/null || { $(call apt_install,cargo); }

refactor-deps: install refactor-toolchains
	@$(VENV)/bin/ast-grep --version >/dev/null 2>&1 || { \
	  echo "ast-grep missing from $(VENV): pip install ast-grep-cli==0.51.1"; exit 1; }
	@command -v bwrap >/dev/null || { echo "bubblewrap missing: make system-deps"; exit 1; }

TEST_DEPS += refactor-deps

# jailed runner steps/s against a bare ast-grep + pytest subprocess per step (and per
# language: the language's own test runner)
bench-refactor: install refactor-toolchains
	$(VPY) benchmarks/refactor.py

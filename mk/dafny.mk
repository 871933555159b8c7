# The Dafny family's system packages (included from the top-level Makefile).
#
# Debian's `dafny` (2.3) brings mono, boogie and z3; `bubblewrap` jails the verifier. The
# z3 Dafny actually runs is the pinned `z3-solver==4.8.5.0` wheel's `bin/z3` (pyproject),
# which `make install` puts in .venv.
#
#   make dafny-deps   install the apt packages when missing, then check the toolchain
#   make bench-dafny  the verifier benchmark (benchmarks/dafny.py)

DAFNY_APT_PACKAGES := dafny z3 mono-runtime  # bubblewrap comes with APT_PACKAGES

.PHONY: dafny-deps

dafny-deps: install system-deps
	@$(call apt_install,$(DAFNY_APT_PACKAGES))
	$(VPY) -c 'from verilearn_assets.dafny.verify.toolchain import detect; print("dafny toolchain:", detect().versions)'

# `make demo` and `make bench` depend on the families' TEST_DEPS too: a clean machine's
# demo installs Dafny.
TEST_DEPS += dafny-deps

.PHONY: bench-dafny
# Pooled long-lived verifier vs one dafny CLI process per program (same run), cache hits.
bench-dafny: dafny-deps
	$(VPY) benchmarks/dafny.py

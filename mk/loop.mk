# `make loop`: the whole loop on the demo home — train -> serve -> evaluate (included from
# the top-level Makefile). Installs what training and serving need (the [train] extra, the
# vLLM CPU venv, the tiny base model), makes the demo home if it has no questions yet, runs
# a short LoRA SFT on its gated sft_dataset[train], then evaluates the base model and the
# trained one on the same test questions and prints both pass rates side by side. (ls of the
# model/adapter globs exits 2 when one matches nothing: pipefail must not stop the recipe.)
#
# The tiny base model has random weights, so both rates are expected to be ~0 here: this
# shows the plumbing end to end. The proof that training moves the pass rate is the
# memorization test (tests/training/test_loop_memorize.py) and benchmarks/training.py.
#
#   make loop [LOOP_HOME=.verilearn] [LOOP_STEPS=20] [LOOP_LIMIT=4] [LOOP_SPLIT=test]

LOOP_HOME  ?= .verilearn
LOOP_STEPS ?= 20
LOOP_LIMIT ?= 4
LOOP_SPLIT ?= test
LOOP_ENV    = VERILEARN_HOME=$(abspath $(LOOP_HOME)) DAGSTER_HOME=$(abspath $(LOOP_HOME))/dagster

.PHONY: loop

loop: install system-deps dockerd vllm-env tiny-model
	@mkdir -p $(LOOP_HOME)/dagster
	@if [ -d $(LOOP_HOME)/lake/sft_dataset ]; then echo "loop: demo home $(LOOP_HOME) is ready"; \
	  else $(LOOP_ENV) $(VENV)/bin/verilearn demo --families analysis; fi
	$(LOOP_ENV) $(VENV)/bin/verilearn train sft --max-steps $(LOOP_STEPS)
	$(LOOP_ENV) $(VENV)/bin/verilearn eval --model $(TINY_MODEL_DIR) --split $(LOOP_SPLIT) --limit $(LOOP_LIMIT)
	@model=$$( (ls -td $(LOOP_HOME)/runs/sft-*/model $(LOOP_HOME)/runs/sft-*/adapter 2>/dev/null || true) | head -1); \
	  test -n "$$model" || { echo "loop: no SFT run under $(LOOP_HOME)/runs"; exit 1; }; \
	  $(LOOP_ENV) $(VENV)/bin/verilearn eval --model $$model --split $(LOOP_SPLIT) --limit $(LOOP_LIMIT)
	@echo "loop: base vs trained, side by side:"
	$(LOOP_ENV) $(VENV)/bin/verilearn report --models --format markdown

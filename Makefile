# Two commands on a fresh machine:
#   make demo   # the main job (chain-of-embedding diagnosis) on the embedded demo model, then
#               # the audit report of every study (results/audit/report.html)
#   make test   # the test suite (offline; executes the notebooks)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TORCH_VERSION ?= 2.13.0
OUT ?= results/demo
AUDIT ?= results/audit

.PHONY: demo test install lint bench train-demo evaluate-demo clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	# torch first, pinned: an unpinned torch would pull a multi-GB CUDA build
	$(PY) -m pip install --quiet "torch==$(TORCH_VERSION)"
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

install: $(VENV)/.installed

demo: install
	$(VENV)/bin/interp diagnose --model demo --data demo --out $(OUT) --group-by counterfactual
	$(VENV)/bin/interp audit --model demo --data demo --out $(AUDIT) --no-progress

test: install
	OMP_NUM_THREADS=2 $(PY) -m pytest -q

lint: install
	$(VENV)/bin/ruff check interp interventions probes tests bench
	$(VENV)/bin/ruff format --check interp interventions probes tests bench

bench: install
	$(PY) bench/residual_stream.py
	$(PY) bench/chain_of_embedding.py
	$(PY) bench/generation.py
	$(PY) bench/decoding.py
	$(PY) bench/conflict.py
	$(PY) bench/drives.py
	$(PY) bench/ablation.py
	$(PY) bench/recall.py

train-demo: install
	$(PY) -m interp.demo.train --seed 0 --out interp/demo/checkpoint

evaluate-demo: install
	$(PY) -m interp.demo.evaluate

clean:
	rm -rf $(VENV) results .pytest_cache

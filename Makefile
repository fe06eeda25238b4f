# One virtual environment for everything; the CPU path pins torch==2.13.0 through the `cpu` extra,
# and the `partitioners` extra brings the KaMinPar and KaHIP baselines.
VENV ?= .venv
PYTHON := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: install run test bench bench-baselines bench-compare lint clean setup-baselines gpu-check

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --upgrade pip
	$(PYTHON) -m pip install --quiet -e ".[cpu,test,partitioners]"
	touch $@

run: install  ## install, then run the default benchmark (synthetic dataset, SPRING, p=4, 2 workers)
	$(PYTHON) -m gnnbench $(ARGS)

setup-baselines: install  ## torch-sparse with 64-bit METIS (PyG) and DistDGL's own venv, cached in $GNNBENCH_HOME
	$(PYTHON) -m gnnbench setup all

test: install  ## install, then run the whole test suite
	$(PYTHON) -m pytest $(PYTEST_ARGS)

bench: install  ## regression gates: quality + speed vs bench/baselines/*.json; JSON history in .benchmarks/
	mkdir -p .benchmarks
	$(PYTHON) -m pytest bench -m "not slow" --benchmark-json=.benchmarks/latest.json $(PYTEST_ARGS)

bench-baselines: install  ## accept the current figures as the new baselines (review the git diff)
	$(PYTHON) -m pytest bench -m "not slow" --update-baselines $(PYTEST_ARGS)

BASE ?=
bench-compare: install  ## A/B speed vs BASE (default: merge base with main), interleaved in one run; names each kernel credibly >1.2x slower
	$(PYTHON) -m bench.compare $(if $(BASE),--base $(BASE))

gpu-check: install  ## every training mode on CUDA (num_gpus=1) and the gpu-marked tests; writes docs/gpu.md
	$(PYTHON) scripts/gpu_check.py

lint: install
	$(VENV)/bin/ruff check gnnbench tests bench
	$(VENV)/bin/ruff format --check gnnbench tests bench

clean:
	rm -rf $(VENV) outputs multirun mlruns mlartifacts mlflow.db mlflow.db.lock reports

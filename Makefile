# One virtual environment for everything; the CPU path pins torch==2.13.0 through the `cpu` extra,
# and the `partitioners` extra brings the KaMinPar and KaHIP baselines.
VENV ?= .venv
PYTHON := $(VENV)/bin/python
PYTEST_ARGS ?=
# Test processes: the suite is mostly one core busy at a time (a job's startup, imports, one rank),
# so two workers take ~1.5x less wall time on 2 cores; tests marked `alone` still run alone.
TEST_WORKERS ?= 2

.PHONY: install run test bench bench-baselines bench-compare lint clean setup-baselines gpu-check wheelhouse

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install --quiet --upgrade pip
	$(PYTHON) -m pip install --quiet -c constraints.txt -e ".[cpu,test,partitioners]"
	touch $@

run: install  ## install, then run the default benchmark (synthetic dataset, SPRING, p=4, 2 workers)
	$(PYTHON) -m gnnbench $(ARGS)

setup-baselines: install  ## torch-sparse with 64-bit METIS (PyG) and DistDGL's own venv, cached in $GNNBENCH_HOME
	$(PYTHON) -m gnnbench setup all

test: install  ## install, then run the whole test suite
	$(PYTHON) -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

bench: install  ## regression gates: quality + speed vs bench/baselines/*.json; JSON history in .benchmarks/
	mkdir -p .benchmarks
	$(PYTHON) -m pytest bench -m "not slow" --benchmark-json=.benchmarks/latest.json $(PYTEST_ARGS)

bench-baselines: install  ## accept the current figures as the new baselines (review the git diff)
	$(PYTHON) -m pytest bench -m "not slow" --update-baselines $(PYTEST_ARGS)

BASE ?=
bench-compare: install  ## A/B speed vs BASE (default: merge base with main), interleaved in one run; names each kernel credibly >1.2x slower
	$(PYTHON) -m bench.compare $(if $(BASE),--base $(BASE))

IMAGE ?= docs/gpu_check_image.txt
wheelhouse: install  ## the wheels a CUDA machine without a package index lacks (its pip list: IMAGE), into ./wheelhouse
	$(PYTHON) -m gnnbench wheelhouse --present $(IMAGE) --out wheelhouse

# On the CUDA machine itself, with its own python3 and torch: no `install` (it would bring the CPU torch).
GPU_PYTHON ?= python3
gpu-check:  ## every training mode on CUDA and on the CPU (num_gpus=1), the gpu-marked tests; writes docs/gpu.md
	$(GPU_PYTHON) scripts/gpu_check.py $(if $(wildcard wheelhouse/*.whl),--wheelhouse wheelhouse)

lint: install
	$(VENV)/bin/ruff check gnnbench tests bench
	$(VENV)/bin/ruff format --check gnnbench tests bench

clean:
	rm -rf $(VENV) outputs multirun mlruns mlartifacts mlflow.db mlflow.db.lock reports

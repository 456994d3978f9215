# sparkext — build, test and demo. Every target installs what it needs.
#   make demo      run examples/quickstart.py (a local Spark job, plans before/after)
#   make test      mypy (config: pyproject.toml), then the test suite CI runs (fast; slow
#                  suites are in test-all)
#   make test-all  every suite, slow ones included
#   make test-compat  the compatibility suite on every Spark line (tools/compat.py)
#   make jar       the Scala shim for the venv's pyspark line, compiled offline with the
#                  compiler that pyspark ships (sparkext/jars/sparkext-shim-spark4.3_2.13.jar)
#   make jars      the shim for every supported line (sparkext/versions.py), each against its
#                  own Spark's jars (cached in ~/.cache/sparkext; fetched once from PyPI/Maven)
#   make jar-sbt   the venv's line through sbt (LINE=3.5_2.12 for another line)
#   make wheel     the wheel, carrying every line's jar
#   make fuzz      a long differential fuzz sweep: make fuzz N=10000 SEED=1 [SHARDS=4]
#                  (docs/fuzzing.md)

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
LINE   ?= $(shell $(PY) -c "import sparkext.versions as v, pyspark, pathlib; print(v.find(pyspark.__version__, v.scala_of(pathlib.Path(pyspark.__file__).parent / 'jars')).key)" 2>/dev/null)

.PHONY: all venv jar jars jar-sbt demo test test-all test-compat bench wheel clean fuzz

all: jar

$(STAMP): requirements-dev.txt setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	# (pip 26 repeats setuptools' notice about editable installs as a warning block, even
	# with --quiet: it says nothing about this project, and hid the demo's first lines)
	$(PY) -W "ignore:Editable installation" -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

venv: $(STAMP)

# build_jar.py skips a jar newer than its sources (and rebuilds one from another version).
jar: $(STAMP)
	$(PY) tools/build_jar.py --if-stale

jars: $(STAMP)
	$(PY) tools/build_jar.py --all --if-stale

jar-sbt: $(STAMP)
	$(PY) tools/sbt.py -DsparkLine=$(word 1,$(subst _, ,$(LINE))) -DscalaBinary=$(word 2,$(subst _, ,$(LINE))) package
	cp jvm-shim/target/sparkext-shim-spark$(LINE).jar sparkext/jars/

demo: jar
	$(PY) examples/quickstart.py

# mypy first: a type error fails the target before the suite's minutes are spent. The
# suite runs in two processes (pytest-xdist), each taking a whole test file at a time, so a
# module's fixtures are built once: 14.4 min instead of 18.3 on this 2-core machine.
test: jar
	$(PY) -m mypy
	$(PY) -m pytest -q -n 2 --dist loadfile tests --ignore=tests/compat && $(PY) -m pytest -q --doctest-modules sparkext

test-all: jar
	$(PY) -m pytest -q tests --ignore=tests/compat --run-slow

# One virtualenv per Spark line (cached under /root/.cache/sparkext/venvs/), each running
# tests/compat/ in a real session of that Spark with that line's jar. COMPAT_ARGS: e.g.
# --only spark4.2_2.13, --skip spark4.3_2.13, --wheel dist/sparkext-X.whl
test-compat: jars
	$(PY) tools/compat.py $(COMPAT_ARGS)

# SHARDS=K splits the N cases of one seed into K processes run side by side, each logging
# to $(FUZZ_LOGS)/seed<SEED>-shard<i>.log; then their SUMMARY lines are added up
# (python -m tests.fuzz.sweep --summarize LOG...). SHARDS=1 prints to the terminal.
N         ?= 10000
SEED      ?= 1
SHARDS    ?= 1
FUZZ_LOGS ?= .cache/fuzz
fuzz: jar
ifeq ($(SHARDS),1)
	nice -n 10 $(PY) -m tests.fuzz.sweep --n $(N) --seed $(SEED)
else
	mkdir -p $(FUZZ_LOGS)
	rm -f $(FUZZ_LOGS)/seed$(SEED)-shard*.log
	per=$$(( ($(N) + $(SHARDS) - 1) / $(SHARDS) )); \
	for i in $$(seq 0 $$(( $(SHARDS) - 1 ))); do \
	  start=$$(( i * per )); n=$$(( $(N) - start < per ? $(N) - start : per )); \
	  [ $$n -gt 0 ] || continue; \
	  nice -n 10 $(PY) -m tests.fuzz.sweep --seed $(SEED) --start $$start --n $$n \
	    > $(FUZZ_LOGS)/seed$(SEED)-shard$$i.log 2>&1 & \
	done; wait
	$(PY) -m tests.fuzz.sweep --summarize $(FUZZ_LOGS)/seed$(SEED)-shard*.log
endif

bench: jar
	$(PY) benchmarks/bridge_overhead.py

wheel: $(STAMP)
	$(PY) -m build --wheel --no-isolation --outdir dist .

clean:
	rm -rf jvm-shim/target jvm-shim/classes build dist *.egg-info sparkext/jars/*.jar

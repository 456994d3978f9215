# sparkext — build, test and demo. Every target installs what it needs.
#   make demo      run examples/quickstart.py (a local Spark job, plans before/after)
#   make test      the test suite CI runs (fast; slow suites are in test-all)
#   make test-all  every suite, slow ones included
#   make jar       the Scala shim, compiled offline with the compiler pyspark ships
#   make jar-sbt   the same jar through sbt (downloads sbt and Spark from Maven Central)
#   make fuzz      a long differential fuzz sweep: make fuzz N=10000 SEED=1 (docs/fuzzing.md)

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
JAR    := sparkext/jars/sparkext-shim.jar
SCALA_SRC := $(wildcard jvm-shim/src/main/scala/io/sparkext/*.scala)

.PHONY: all venv jar jar-sbt demo test test-all bench wheel clean fuzz

all: jar

$(STAMP): requirements-dev.txt setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

venv: $(STAMP)

$(JAR): $(SCALA_SRC) $(STAMP) tools/build_jar.py
	$(PY) tools/build_jar.py --out $(JAR)

jar: $(JAR)

jar-sbt: $(STAMP)
	$(PY) tools/sbt.py package
	cp jvm-shim/target/scala-2.13/sparkext-shim_2.13-*.jar $(JAR)

demo: $(JAR)
	$(PY) examples/quickstart.py

test: $(JAR)
	$(PY) -m pytest -q tests && $(PY) -m pytest -q --doctest-modules sparkext

test-all: $(JAR)
	$(PY) -m pytest -q tests --run-slow

N    ?= 10000
SEED ?= 1
fuzz: $(JAR)
	nice -n 10 $(PY) -m tests.fuzz.sweep --n $(N) --seed $(SEED)

bench: $(JAR)
	$(PY) benchmarks/bridge_overhead.py

wheel: $(JAR)
	$(PY) -m build --wheel --no-isolation --outdir dist .

clean:
	rm -rf jvm-shim/target jvm-shim/classes build dist *.egg-info $(JAR)

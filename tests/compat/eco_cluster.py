"""A Spark standalone cluster on this machine, from the installed pyspark: one master and
N workers, each its own JVM started with ``bin/spark-class`` (the pyspark package has no
``sbin/start-*.sh``), on loopback, free ports, temp folders, small memory.

    with Standalone(tmp_path, workers=2) as cluster:
        cluster.submit("job.py", ["arg"], conf={...})

Readiness is the master's JSON status page listing every worker ALIVE, polled against a
deadline. Each daemon runs in its own process group (a worker's executors are its
children): stopping sends SIGTERM to each group, then SIGKILL to what is left.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pyspark

import sparkext

SPARK_HOME = Path(pyspark.__file__).resolve().parent
HOST = "127.0.0.1"
READY_SECONDS = 180
#: For the daemons, drivers and executors: short-lived JVMs on a loaded 2-core machine
#: warm up faster with the C1 compiler alone.
JIT = "-XX:TieredStopAtLevel=1"
STOP_SECONDS = 30


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def tail(path: Path, lines: int = 30) -> str:
    text = path.read_text(errors="replace") if path.exists() else "(no output)"
    return f"--- {path.name} ---\n" + "\n".join(text.splitlines()[-lines:])


class Standalone:
    def __init__(self, workdir: Path, workers: int = 2, worker_memory: str = "1g"):
        self.workdir = workdir
        self.workers = workers
        self.worker_memory = worker_memory
        self.port, self.ui_port = free_port(), free_port()
        self.url = f"spark://{HOST}:{self.port}"
        self.procs: list[tuple[subprocess.Popen, Path]] = []
        conf_dir = workdir / "conf"  # empty: no spark-defaults.conf from elsewhere
        conf_dir.mkdir(parents=True, exist_ok=True)
        self.env = {
            **os.environ,
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_CONF_DIR": str(conf_dir),
            "SPARK_LOCAL_IP": HOST,
            "SPARK_DAEMON_MEMORY": "512m",
            "SPARK_DAEMON_JAVA_OPTS": JIT,
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            # The job imports the same sparkext as this test (the tree or an installed wheel).
            "PYTHONPATH": os.pathsep.join(p for p in (
                str(Path(sparkext.__file__).resolve().parent.parent),
                os.environ.get("PYTHONPATH", "")) if p),
        }

    def _start(self, name: str, args: list[str]) -> None:
        log = self.workdir / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([str(SPARK_HOME / "bin" / "spark-class"), *args],
                                    env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.procs.append((proc, log))

    def status(self) -> dict:
        """The master's status page (workers, running and completed applications)."""
        with urllib.request.urlopen(f"http://{HOST}:{self.ui_port}/json/", timeout=5) as r:
            return json.load(r)

    def start(self) -> Standalone:
        self._start("master", ["org.apache.spark.deploy.master.Master", "--host", HOST,
                               "--port", str(self.port), "--webui-port", str(self.ui_port)])
        for i in range(self.workers):
            work = self.workdir / f"worker-{i}"
            work.mkdir()
            self._start(f"worker-{i}", [
                "org.apache.spark.deploy.worker.Worker", "--host", HOST,
                "--port", str(free_port()), "--webui-port", str(free_port()),
                "--cores", "1", "--memory", self.worker_memory, "--work-dir", str(work),
                self.url])
        self._wait_until_ready()
        return self

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + READY_SECONDS
        alive = 0
        while time.monotonic() < deadline:
            dead = [log for proc, log in self.procs if proc.poll() is not None]
            if dead:
                raise AssertionError("a cluster daemon exited while starting:\n"
                                     + "\n".join(tail(log) for log in dead))
            try:
                workers = self.status()["workers"]
                alive = sum(w["state"] == "ALIVE" for w in workers)
            except (OSError, urllib.error.URLError, ValueError, KeyError):
                alive = 0  # the master's web server is not up yet
            if alive == self.workers:
                return
            time.sleep(0.2)
        raise AssertionError(f"{alive} of {self.workers} workers alive after "
                             f"{READY_SECONDS} s:\n"
                             + "\n".join(tail(log) for _, log in self.procs))

    def submit(self, app: Path, args: list[str], conf: dict[str, str], name: str,
               jars: list[str] = (), timeout: float = 300) -> subprocess.CompletedProcess:
        """``spark-submit --master spark://...`` in client mode; returns the finished run
        (output in ``.stdout``)."""
        command = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", self.url]
        if jars:
            command += ["--jars", ",".join(jars)]
        for key, value in conf.items():
            command += ["--conf", f"{key}={value}"]
        log = self.workdir / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([*command, str(app), *args], env=self.env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _stop_group(proc)
                code = None
        output = log.read_text(errors="replace")
        if code is None:
            raise AssertionError(f"{name}: still running after {timeout} s\n{tail(log)}")
        return subprocess.CompletedProcess(command, code, output)

    def stop(self) -> None:
        for proc, _ in reversed(self.procs):  # workers (and their executors) first
            _stop_group(proc)
        self.procs.clear()

    def __enter__(self) -> Standalone:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()


def _stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group ``proc`` leads, SIGKILL if it outlives the deadline;
    then SIGKILL to any member left behind (an executor whose worker is gone)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # the whole group has exited
    proc.wait()

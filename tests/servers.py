"""Real Spark servers for tests: a Spark Connect server started from the pyspark install.

    with ConnectServer(args=connect_server_args(), env={"PYTHONPATH": ...}) as server:
        spark = SparkSession.builder.remote(server.url).create()

The server is ``spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer``
(the wheel's ``bin/spark-submit``; the Connect server jar ships in pyspark's ``jars/``), on a
free loopback port. It starts in its own process group, so stopping it by its pid also ends
what it started (the rule worker included).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 30.0


def spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


def free_port() -> int:
    """A loopback port nobody listens on now (the server binds it a few seconds later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children_of(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (from /proc), nearest first."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                # comm, field 2, may hold spaces: the parent pid follows its closing paren.
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # the process ended while we read
        parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(0), [])
        found.extend(kids)
        todo.extend(kids)
    return found


def command_line(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode() for a in f.read().split(b"\0") if a]
    except OSError:
        return []


class ServerFailed(RuntimeError):
    """The server exited or did not listen in time; the message holds its log's tail."""


class ConnectServer:
    """One Spark Connect server: ``start()`` returns once its gRPC port accepts connections."""

    def __init__(self, args: list[str] = (), conf: dict[str, str] | None = None,
                 env: dict[str, str] | None = None, name: str = "sparkext-test",
                 log_dir: str | Path | None = None):
        self.port = free_port()
        self.url = f"sc://127.0.0.1:{self.port}"
        self.args = list(args)
        self.conf = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.shuffle.partitions": "2",
            **(conf or {}),
        }
        self.env = {**os.environ, **(env or {})}
        # A client-side setting would make the server's own pyspark act as a client.
        for key in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "PYSPARK_GATEWAY_PORT",
                    "PYSPARK_SUBMIT_ARGS"):
            self.env.pop(key, None)
        self.name = name
        fd, log_path = tempfile.mkstemp(prefix=f"{name}-", suffix=".log", dir=log_dir)
        os.close(fd)
        self.log_path = Path(log_path)
        self.process: subprocess.Popen | None = None
        self._strays: list[int] = []
        self._terminated = False

    def command(self) -> list[str]:
        conf = [a for k, v in self.conf.items() for a in ("--conf", f"{k}={v}")]
        return [str(spark_home() / "bin" / "spark-submit"), "--master", "local[2]",
                "--name", self.name, "--class", CONNECT_SERVER_CLASS, *conf, *self.args]

    def launch(self) -> ConnectServer:
        """Starts the JVM and returns at once (start several, then wait for each)."""
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(self.command(), stdout=log,
                                            stderr=subprocess.STDOUT, env=self.env,
                                            start_new_session=True)
        return self

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> ConnectServer:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerFailed(f"{self.name} exited with {self.process.returncode}:\n"
                                   f"{self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                    return self
            except OSError:
                # Not listening yet: wait for the process for a moment instead of spinning
                # (returns early if it exits).
                try:
                    self.process.wait(timeout=0.5)
                except subprocess.TimeoutExpired:
                    pass
        self.stop()
        raise ServerFailed(f"{self.name} did not listen on port {self.port} within "
                           f"{timeout:.0f} s:\n{self.log_tail()}")

    def start(self) -> ConnectServer:
        return self.launch().wait_ready()

    @property
    def pid(self) -> int:
        return self.process.pid

    def processes(self, marker: str) -> list[int]:
        """The server's descendants whose command line contains ``marker``."""
        return [p for p in children_of(self.pid) if marker in " ".join(command_line(p))]

    def log_tail(self, chars: int = 6000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:]

    def terminate(self) -> None:
        """SIGTERM to the server's process group and to any descendant that left it;
        returns at once (terminate several servers, then :meth:`stop` each)."""
        if self.process is None or self.process.poll() is not None or self._terminated:
            return
        self._terminated = True
        self._strays = children_of(self.pid)
        _signal_group(self.pid, signal.SIGTERM)
        for pid in self._strays:
            _signal(pid, signal.SIGTERM)

    def stop(self) -> None:
        """Terminates the server and waits for it; SIGKILL to what is still alive after
        ``STOP_TIMEOUT_S``."""
        if self.process is None:
            return
        self.terminate()
        try:
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _signal_group(self.pid, signal.SIGKILL)
            self.process.wait()
        for pid in self._strays:  # (seconds later: not yet a pid the system gave again)
            if os.path.exists(f"/proc/{pid}"):
                _signal(pid, signal.SIGKILL)
        self._strays = []

    def __enter__(self) -> ConnectServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass

"""A real Dask cluster on this machine, as ``dask scheduler`` and ``dask worker`` start one on two machines:
one scheduler process on 127.0.0.1 (a free port, read back from its ``--scheduler-file``) and worker
processes (one thread each, no nanny: one process per worker, which a test can kill). For
``benchmarks/sweep.py`` and the sweep's tests; everything it started is stopped when the ``with`` ends.

    with local_dask_cluster(2, tmp_path) as cluster:
        ... policy-scheduler sweep SPEC --executor dask --scheduler-address cluster.address
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

START_TIMEOUT = 60.0  # seconds for the scheduler, then the workers, to be up
#: Dask's statistical profiler samples a worker's threads every 10 ms: a quarter of a cell's time for the engine's
#: pure-Python cells (docs/sweep.md). Off, as the docs advise for sweep workers.
WORKER_ENV = {"DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False"}


@dataclass
class LocalDaskCluster:
    directory: Path
    address: str = ""
    scheduler: subprocess.Popen | None = None
    workers: list[subprocess.Popen] = field(default_factory=list)

    def _spawn(self, args: list[str], log: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        out = open(self.directory / log, "ab")  # noqa: SIM115  (closed with the process: the child owns it)
        try:
            return subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, cwd=self.directory, start_new_session=True,
                                    env={**os.environ, **WORKER_ENV, **(env or {})})
        finally:
            out.close()

    def start_scheduler(self) -> None:
        scheduler_file = self.directory / "scheduler.json"
        self.scheduler = self._spawn(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                      "--scheduler-file", str(scheduler_file)], "scheduler.log")
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.scheduler.poll() is not None:
                raise RuntimeError(f"dask scheduler exited ({self.scheduler.returncode}): {self.log('scheduler.log')}")
            try:
                self.address = json.loads(scheduler_file.read_text())["address"]
                return
            except (OSError, ValueError, KeyError):
                time.sleep(0.1)
        raise RuntimeError(f"dask scheduler not up after {START_TIMEOUT} s: {self.log('scheduler.log')}")

    def add_worker(self, wait: bool = True, env: dict[str, str] | None = None) -> subprocess.Popen:
        """One more worker process: one thread (the engine is pure Python), no nanny, no memory limit, no profiler;
        ``env`` added to its environment."""
        n = len(self.workers) + 1
        worker = self._spawn(["worker", self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                              "--memory-limit", "0", "--name", f"worker-{n}", "--local-directory",
                              str(self.directory / f"worker-{n}")], f"worker-{n}.log", env)
        self.workers.append(worker)
        if wait:
            self.wait_for_workers(sum(1 for w in self.workers if w.poll() is None))
        return worker

    def wait_for_workers(self, n: int, timeout: float = START_TIMEOUT) -> None:
        from distributed import Client

        with Client(self.address, timeout=timeout, set_as_default=False) as client:
            client.wait_for_workers(n, timeout=timeout)

    def kill(self, process: subprocess.Popen) -> None:
        """SIGKILL: the process dies at once, as a lost machine or an OOM kill would have it."""
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)

    def stop(self) -> None:
        """The workers first, then the scheduler: a worker told to close while its scheduler closes may wait on
        that connection for good (seen with distributed 2026.8), and is then killed."""
        for group in (self.workers, [self.scheduler]):
            running = [p for p in group if p is not None and p.poll() is None]
            for process in running:
                os.killpg(process.pid, signal.SIGTERM)
            for process in running:
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    print(f"dask_cluster: {' '.join(process.args[3:5])} ignored SIGTERM for 10 s: killed",
                          file=sys.stderr)
                    self.kill(process)

    def log(self, name: str) -> str:
        try:
            return (self.directory / name).read_text(errors="replace")[-2000:]
        except OSError:
            return ""


@contextmanager
def local_dask_cluster(workers: int, directory: Path) -> Iterator[LocalDaskCluster]:
    """A scheduler and ``workers`` workers, all up; all stopped when the block ends."""
    directory.mkdir(parents=True, exist_ok=True)
    cluster = LocalDaskCluster(directory)
    try:
        cluster.start_scheduler()
        for _ in range(workers):
            cluster.add_worker(wait=False)
        if workers:
            cluster.wait_for_workers(workers)
        yield cluster
    finally:
        cluster.stop()

"""``scheduler_perf.py`` with both schedulers serving HTTPS as deployed, and ``/metrics`` scraped over HTTPS once
a second by an authorized caller while they run: does serving cost scheduling, and how long does a scrape take?

Every scheduler ``scheduler_perf.py`` starts (ours, and the modern kube-scheduler of ``--version``) gets the
secure port on 127.0.0.1 with delegated authentication and authorization through the run's API server
(``--secure-port``, ``--bind-address``, ``--authentication-kubeconfig``, ``--authorization-kubeconfig``; ours keeps
its plain-HTTP health port, which the harness polls). A ServiceAccount ``scraper`` allowed ``get`` on
``/metrics`` only (as ``examples/deploy/prometheus/scrape.yaml`` grants Prometheus) is created on the run's
server, and a thread per scheduler process GETs ``/metrics`` with its token every ``--interval`` seconds over one
keep-alive connection (as Prometheus does), from the process's start to its end. ``--no-scrape`` runs the same
command lines without the scraper: the baseline.

Everything else is ``scheduler_perf.py``'s (its options pass through; its JSON lines on standard output, its table
on standard error). At the end, a table of the scrapes per run and scheduler: how many, how many not 200, and the
latency (request to the last byte of the body) p50 / p99 / max; ``--scrape-out FILE`` writes them as JSON lines.

    python benchmarks/scrape_load.py --workload SchedulingBasic,SchedulingPodAffinity --mode stream --repeat 2 \\
        > scrape.jsonl
    python benchmarks/scrape_load.py --no-scrape --workload SchedulingBasic,SchedulingPodAffinity --mode stream \\
        --repeat 2 > baseline.jsonl

Written beside ``scheduler_perf.py`` rather than into it (the harness is being changed by others); it replaces
``scheduler_perf``'s ``start_scheduler`` (the name it calls) for the length of the run.
"""

from __future__ import annotations

import argparse
import http.client
import json
import ssl
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as a script: make the repository root importable
    sys.path.insert(0, str(ROOT))

from benchmarks import faults  # noqa: E402
from benchmarks import scheduler_perf as perf  # noqa: E402
from benchmarks.faults import SchedulerProcess, Spawned, modern_config, ours_command, progress  # noqa: E402
from benchmarks.harness.daemon import free_port  # noqa: E402
from benchmarks.harness.envtest import binary as envtest_binary  # noqa: E402
from policy_scheduler.kube.client.kubeconfig import api_client  # noqa: E402
from policy_scheduler.kube.client.rest import ApiError, RestClient  # noqa: E402

NS = "default"
ACCOUNT = "scraper"
METRICS_READER = "scrape-load-metrics-reader"


@dataclass
class Scraper:
    """GET /metrics every ``interval`` seconds while ``child`` runs; latencies in seconds."""

    label: dict[str, Any]
    port: int
    token: str
    interval: float
    child: Spawned
    latencies: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    sizes: list[int] = field(default_factory=list)

    def start(self) -> Scraper:
        threading.Thread(target=self._run, name=f"scrape-{self.label['scheduler']}", daemon=True).start()
        return self

    def _run(self) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # the self-signed serving certificate
        connection: http.client.HTTPSConnection | None = None
        next_at = time.monotonic()
        while self.child.process is None or self.child.process.poll() is None:
            next_at += self.interval
            started = time.monotonic()
            try:
                if connection is None:
                    connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=context, timeout=10)
                connection.request("GET", "/metrics", headers={"Authorization": f"Bearer {self.token}"})
                response = connection.getresponse()
                body = response.read()
                key = str(response.status)
                if response.status == 200:
                    self.latencies.append(time.monotonic() - started)
                    self.sizes.append(len(body))
            except (OSError, http.client.HTTPException) as e:  # not up yet, or going away
                key = type(e).__name__
                if connection is not None:
                    connection.close()
                connection = None
            self.statuses[key] = self.statuses.get(key, 0) + 1
            time.sleep(max(0.0, next_at - time.monotonic()))
        if connection is not None:
            connection.close()

    def summary(self) -> dict[str, Any]:
        ms = sorted(1000 * x for x in self.latencies)

        def rank(p: float) -> float | None:
            return round(ms[min(len(ms) - 1, max(0, int(round(p / 100 * len(ms))) - 1))], 2) if ms else None

        return {**self.label, "scrapes": sum(self.statuses.values()), "ok": len(ms), "statuses": self.statuses,
                "p50_ms": rank(50), "p99_ms": rank(99), "max_ms": round(ms[-1], 2) if ms else None,
                "mean_ms": round(statistics.fmean(ms), 2) if ms else None,
                "body_kb": round(statistics.fmean(self.sizes) / 1024, 1) if self.sizes else None,
                "latencies_ms": [round(x, 3) for x in ms]}


class Harness:
    def __init__(self, scrape: bool, interval: float) -> None:
        self.scrape = scrape
        self.interval = interval
        self.scrapers: list[Scraper] = []
        self._tokens: dict[str, str] = {}

    def token(self, kubeconfig: str) -> str:
        """The scraper ServiceAccount's token on this run's server (made once per server)."""
        if kubeconfig not in self._tokens:
            rest = RestClient(api_client(kubeconfig), qps=0, burst=1)
            for path, body in (
                (f"/api/v1/namespaces/{NS}/serviceaccounts", {"metadata": {"name": ACCOUNT}}),
                ("/apis/rbac.authorization.k8s.io/v1/clusterroles", {
                    "metadata": {"name": METRICS_READER},
                    "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}),
                ("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
                    "metadata": {"name": METRICS_READER},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": METRICS_READER},
                    "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NS}]}),
            ):
                try:
                    rest.post(path, body)
                except ApiError as e:
                    if not e.conflict:
                        raise
            self._tokens[kubeconfig] = rest.post(f"/api/v1/namespaces/{NS}/serviceaccounts/{ACCOUNT}/token", {
                "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": 7200}})["status"]["token"]
        return self._tokens[kubeconfig]

    def start_scheduler(self, kind: str, feature_gates: str, kubeconfig: str, workdir: Path, name: str,
                        leader_elect: bool, json_only: bool, version: str) -> SchedulerProcess:
        """``faults.start_scheduler`` with the secure port served (and scraped)."""
        token = self.token(kubeconfig)
        secure = free_port()
        serving = [f"--secure-port={secure}", "--bind-address=127.0.0.1", f"--authentication-kubeconfig={kubeconfig}",
                   f"--authorization-kubeconfig={kubeconfig}"]
        log_path = workdir / f"{name}.log"
        if kind == "ours":
            command, port = ours_command(kubeconfig, feature_gates, leader_elect)
            process = SchedulerProcess(kind, Spawned(name, command + serving, log_path), leader_elect, port)
        else:
            config = workdir / f"{name}.json"
            config.write_text(json.dumps(modern_config(kubeconfig, leader_elect, json_only), indent=1))
            binary = envtest_binary(version, "kube-scheduler")
            command = [str(binary), "--config", str(config), *serving, "-v=2"]
            process = SchedulerProcess(kind, Spawned(name, command, log_path), leader_elect)
        progress(f"starting {name}: {' '.join(process.child.command)}")
        process.child.start()
        if self.scrape:
            label = {"run": workdir.name, "scheduler": kind, "process": name}
            self.scrapers.append(Scraper(label, secure, token, self.interval, process.child).start())
        return process


def render(rows: list[dict[str, Any]]) -> str:
    lines = ["| run | process | scrapes | not 200 | p50 ms | p99 ms | max ms | body kB |", "|---|---|---:|---|---:|---:|---:|---:|"]
    for r in rows:
        failed = {k: v for k, v in r["statuses"].items() if k != "200"}
        lines.append(f"| {r['run']} | {r['process']} | {r['scrapes']} | {failed or '—'} | {r['p50_ms']} | "
                     f"{r['p99_ms']} | {r['max_ms']} | {r['body_kb']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], add_help=False)
    parser.add_argument("--no-scrape", action="store_true", help="serve HTTPS but do not scrape (the baseline)")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between scrapes (default 1)")
    parser.add_argument("--scrape-out", type=Path, default=None, help="also write the scrape rows as JSON lines")
    ours, rest = parser.parse_known_args(argv)
    harness = Harness(scrape=not ours.no_scrape, interval=ours.interval)
    original = perf.start_scheduler
    perf.start_scheduler = harness.start_scheduler
    try:
        code = perf.main(rest)
    finally:
        perf.start_scheduler = original
    time.sleep(ours.interval * 1.5)  # the last scrapes end with their processes
    rows = [s.summary() for s in harness.scrapers]
    if rows:
        print(render(rows), file=sys.stderr, end="")
        if ours.scrape_out is not None:
            ours.scrape_out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    faults.PROGRESS_NAME = "scrape_load"
    return code


if __name__ == "__main__":
    raise SystemExit(main())

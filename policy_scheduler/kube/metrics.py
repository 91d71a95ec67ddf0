"""The daemon's Prometheus metrics: 1.9's scheduler histograms, the API client's, and our own counters.

Every :class:`SchedulerMetrics` owns a private ``CollectorRegistry`` (never the process-global
``REGISTRY``), so tests and embedders can create as many as they like. The three scheduler histograms
keep 1.9's names, help texts, unit (microseconds) and buckets exactly, so 1.9 dashboards keep working;
the REST client metrics keep client-go 1.9's names and labels.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.metrics_core import Metric

# The text format 1.9 serves. Recent prometheus_client's CONTENT_TYPE_LATEST (0.26 here) announces format
# 1.0.0 (UTF-8 metric names), which older scrapers and tools do not know; for our legacy-charset names
# the body is byte-for-byte the 0.0.4 format, so we say so.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# metrics.go: prometheus.ExponentialBuckets(1000, 2, 15) -> 1000, 2000, ..., 16384000 (microseconds).
SCHEDULER_BUCKETS: tuple[float, ...] = tuple(1000.0 * 2**i for i in range(15))
# client-go's request latency: prometheus.ExponentialBuckets(0.001, 2, 10) -> 1 ms ... 512 ms (seconds).
REST_LATENCY_BUCKETS: tuple[float, ...] = tuple(0.001 * 2**i for i in range(10))

QUEUES = ("active", "backoff", "unschedulable")
ATTEMPT_RESULTS = ("scheduled", "unschedulable", "error")
BIND_OUTCOMES = ("success", "conflict", "not_found", "unbound", "error", "volume_binding_failed",
                 "claim_binding_failed")
RELOAD_RESULTS = ("applied", "rejected")
PREEMPTION_RESULTS = ("nominated", "no_node", "not_eligible", "error")
EVENT_RESULTS = ("created", "counted", "dropped", "failed")


class _WithoutCreated:
    """A registry view without the ``*_created`` series prometheus_client adds to counters and histograms.

    1.9 (client_golang) exports no such series; they would double every counter's series count. Turning
    them off globally (``disable_created_metrics``) would reach into other registries in the process.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry

    def collect(self) -> Iterator[Metric]:
        for metric in self._registry.collect():
            if metric.type in ("counter", "histogram", "summary", "gaugehistogram"):
                copy = Metric(metric.name, metric.documentation, metric.type, metric.unit)
                copy.samples = [s for s in metric.samples if not s.name.endswith("_created")]
                metric = copy
            yield metric


def microseconds(start_ns: int, end_ns: int) -> float:
    """Elapsed time the way 1.9 observes it: integer nanoseconds ``// 1000``, then float."""
    return float((end_ns - start_ns) // 1000)


class SchedulerMetrics:
    """All metrics the daemon exports, registered in one private registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.e2e_scheduling_latency = Histogram(
            "scheduler_e2e_scheduling_latency_microseconds",
            "E2e scheduling latency (scheduling algorithm + binding)",
            buckets=SCHEDULER_BUCKETS,
            registry=r,
        )
        self.scheduling_algorithm_latency = Histogram(
            "scheduler_scheduling_algorithm_latency_microseconds",
            "Scheduling algorithm latency",
            buckets=SCHEDULER_BUCKETS,
            registry=r,
        )
        self.binding_latency = Histogram(
            "scheduler_binding_latency_microseconds", "Binding latency", buckets=SCHEDULER_BUCKETS, registry=r
        )
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by queue (active, backoff, unschedulable).",
            ["queue"],
            registry=r,
        )
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts_total",
            "Number of attempts to schedule pods, by result (scheduled, unschedulable, error).",
            ["result"],
            registry=r,
        )
        self.bind_outcomes = Counter(
            "scheduler_binding_outcomes_total",
            "Number of binding requests, by outcome (success, conflict, not_found, unbound: an unknown outcome the "
            "API server said was not a binding, error, volume_binding_failed, claim_binding_failed: writing a "
            "ResourceClaim's allocation or reservation failed).",
            ["outcome"],
            registry=r,
        )
        self.bind_unknown_outcomes = Counter(
            "scheduler_binding_unknown_outcomes_total",
            "Number of binding requests with no definitive answer (no reply, connection dropped, 5xx); each kept "
            "its pod assumed until the API server said whether it was bound.",
            registry=r,
        )
        self.policy_reloads = Counter(
            "scheduler_policy_reloads_total",
            "Number of policy reloads, by result (applied, rejected).",
            ["result"],
            registry=r,
        )
        self.extender_errors = Counter(
            "scheduler_extender_errors_total",
            "Number of failed scheduler extender calls, by extender (urlPrefix), verb, and whether the failure "
            "was ignored (prioritize always; filter of an ignorable extender) or failed the attempt.",
            ["extender", "verb", "ignored"],
            registry=r,
        )
        # Gate PodPriority. 1.9 exports no preemption metric; 1.10 added scheduler_total_preemption_attempts
        # (a counter) and scheduler_pod_preemption_victims (a gauge). The gauge keeps 1.10's name and help;
        # the counter follows this module's *_total convention and says what each attempt concluded.
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts_total",
            "Number of preemption attempts (after a FitError with PodPriority on), by result (nominated: a node "
            "was chosen and its victims evicted; no_node; not_eligible; error).",
            ["result"],
            registry=r,
        )
        self.preemption_victims = Gauge(
            "scheduler_pod_preemption_victims", "Number of selected preemption victims", registry=r
        )
        self.api_server_reachable = Gauge(
            "scheduler_api_server_reachable",
            "1 while the API server answers, 0 while it is known to be unreachable (scheduling is paused).",
            registry=r,
        )
        self.api_server_outages = Counter(
            "scheduler_api_server_outages_total",
            "Number of times the API server was found unreachable (each pauses scheduling until it is back).",
            registry=r,
        )
        self.leader = Gauge(
            "scheduler_leader_is_leader", "1 while this instance holds the leader lease, else 0.", registry=r
        )
        self.events = Counter(
            "scheduler_events_total",
            "Number of events recorded, by result (created: a new Event; counted: a repeat for the same object, "
            "added to its Event's count; dropped: the queue was full, not written; failed: the API server refused "
            "it or did not answer).",
            ["result"],
            registry=r,
        )
        self.rest_requests = Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=r,
        )
        self.rest_latency = Histogram(
            "rest_client_request_latency_seconds",
            "Request latency in seconds. Broken down by verb and URL.",
            ["verb", "url"],
            buckets=REST_LATENCY_BUCKETS,
            registry=r,
        )
        # Pre-create the known label values so every series is exported (as 0) from the first scrape.
        for queue in QUEUES:
            self.pending_pods.labels(queue=queue)
        for result in ATTEMPT_RESULTS:
            self.schedule_attempts.labels(result=result)
        for outcome in BIND_OUTCOMES:
            self.bind_outcomes.labels(outcome=outcome)
        for result in RELOAD_RESULTS:
            self.policy_reloads.labels(result=result)
        for result in PREEMPTION_RESULTS:
            self.preemption_attempts.labels(result=result)
        self._event_series = {result: self.events.labels(result=result) for result in EVENT_RESULTS}
        self.api_server_reachable.set(1)  # until a failed request and a failed probe say otherwise
        # The Python counterparts of the Go binary's default process/go collectors.
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)
        self._exported = _WithoutCreated(r)
        self._request_series: dict[tuple[str, str, str, int], tuple[Any, Any]] = {}

    def observe_request(self, method: str, url_template: str, host: str, code: int, seconds: float) -> None:
        """Record one API request; ``code`` is the HTTP status, 0 when no response arrived (exported as
        client-go's ``<error>``).

        ``url_template`` is a path template (``/api/v1/namespaces/{namespace}/pods``), never the concrete
        URL, to keep the series count bounded.
        """
        key = (method, url_template, host, code)
        series = self._request_series.get(key)
        if series is None:  # labels() takes a lock and builds a key per call: once per series is enough
            series = self._request_series[key] = (
                self.rest_requests.labels(code=str(code) if code else "<error>", method=method.upper(), host=host),
                self.rest_latency.labels(verb=method.upper(), url=url_template),
            )
        series[0].inc()
        series[1].observe(seconds)

    def observe_event(self, result: str) -> None:
        """One event's fate, one of :data:`EVENT_RESULTS` (the recorder's observer)."""
        self._event_series[result].inc()

    def observe_extender_error(self, extender: str, verb: str, ignored: bool) -> None:
        """One failed extender call (the HTTP extenders' observer)."""
        self.extender_errors.labels(extender=extender, verb=verb, ignored="true" if ignored else "false").inc()

    def exposition(self) -> tuple[bytes, str]:
        """The Prometheus text exposition of the registry and its content type."""
        return generate_latest(self._exported), CONTENT_TYPE

"""The daemon's configuration: kube-scheduler 1.9's flags and its ``--config`` file (``cli.md``).

Two ways to configure ``policy-scheduler run``, as in kube-scheduler 1.9:

* ``--config <file>``: a ``componentconfig/v1alpha1`` ``KubeSchedulerConfiguration`` (YAML or JSON).
  The file alone defines the configuration; every other scheduler flag is ignored except ``--master``.
* the deprecated flags (declared by :func:`policy_scheduler.kube.config.flags.run_flags`): defaults first, then the flags overwrite fields
  (:func:`configuration_from_flags`), with the 1.9 warning
  ``WARNING: all flags than --config are deprecated. Please begin using a config file ASAP.``

File decoding follows the componentconfig scheme: keys match case-insensitively (Go's decoder),
``null`` is the same as absent, zero values are defaulted (``cli.md`` §3) and unknown keys are logged,
not rejected. Type errors are one line naming the file and the JSON path, e.g.
``sched.yaml: leaderElection.leaseDuration: time: invalid duration "abc"``.

Deliberate differences from 1.9.0 (``scheduler_loop.md`` §11, ``policy.md`` §6):

* ``leaderElect`` / ``--leader-elect`` default to **true** (1.10; 1.9.0 had false), also when the file
  has ``leaderElect: null``.
* ``--policy-config-file`` is used without ``--use-legacy-policy-config`` when no ConfigMap is given
  (1.10 rule), and an empty ``--policy-configmap-namespace`` means ``kube-system`` (the flag's help).
* ``--port=-1`` disables both the healthz and the metrics address (1.10): both become ``""``.
* The insecure port is **off by default** (upstream removed it in 1.23): ``--port`` not given, and
  ``healthzBindAddress`` / ``metricsBindAddress`` absent or empty in the file, mean ``""``. When it is asked for
  it serves only the health endpoints (:mod:`..serving.endpoints`); HTTPS on ``--secure-port`` serves the rest.
* ``leases`` is accepted as a resource lock besides ``endpoints`` and ``configmaps``.
* ``algorithmSource.policy`` with neither ``file`` nor ``configMap`` is an error (1.9 would build a
  scheduler from an empty Policy). With both, ``file`` wins (as 1.9) and a warning is logged.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import yaml

from policy_scheduler.errors import UserError
from policy_scheduler.registry import DEFAULT_PROVIDER
from policy_scheduler.syntax import syntax_problem, yaml_problem

from .gosyntax import (
    format_go_duration,
    go_split_host_port,
    join_host_port,
    parse_go_bool,
    parse_go_duration,
    split_host_port,
)

__all__ = [
    "AlgorithmSourceConfig",
    "ClientConnection",
    "ConfigFileError",
    "FLAG_NAMES",
    "LeaderElectionConfiguration",
    "SchedulerConfiguration",
    "configuration_from_flags",
    "load_config_file",
    "resolve_configuration",
    "validate_configuration",
]

logger = logging.getLogger(__name__)

API_VERSION = "componentconfig/v1alpha1"
KIND = "KubeSchedulerConfiguration"
SYSTEM_NAMESPACE = "kube-system"
SCHEDULER_PORT = 10251
DEFAULT_BIND_ADDRESS = f"0.0.0.0:{SCHEDULER_PORT}"
#: ``schedulingQueue`` (ours): "1.9", 1.9's queue (the FIFO, or with the gate PodPriority the PriorityQueue);
#: "three-queue", upstream 1.20's activeQ + podBackoffQ + unschedulableQ (:mod:`policy_scheduler.queue`).
SCHEDULING_QUEUE_1_9 = "1.9"
SCHEDULING_QUEUES = (SCHEDULING_QUEUE_1_9, "three-queue")
DEFAULT_FAILURE_DOMAINS = (
    "kubernetes.io/hostname,failure-domain.beta.kubernetes.io/zone,failure-domain.beta.kubernetes.io/region"
)
RESOURCE_LOCKS = ("endpoints", "configmaps", "leases")
DEPRECATION_WARNING = "WARNING: all flags than --config are deprecated. Please begin using a config file ASAP."


class ConfigFileError(UserError):
    """The ``--config`` file is missing, unparsable, of the wrong kind, or has a wrongly typed field."""


def _default_bind_address(address: str) -> str:
    """componentconfig defaulting, with the insecure port off by default: empty (or absent) → ``""`` (off);
    unparsable → ``0.0.0.0:10251`` (1.9); an empty host → ``0.0.0.0``."""
    if not address:
        return ""
    try:
        host, port = go_split_host_port(address)
    except ValueError:
        return DEFAULT_BIND_ADDRESS
    return join_host_port(host or "0.0.0.0", port)


# --------------------------------------------------------------------------------------------------
# The configuration


@dataclass
class LeaderElectionConfiguration:
    """Durations in seconds. ``leader_elect`` defaults to true (1.10; 1.9.0 had false)."""

    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "endpoints"
    lock_object_namespace: str = SYSTEM_NAMESPACE
    lock_object_name: str = "kube-scheduler"


@dataclass
class ClientConnection:
    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = "application/vnd.kubernetes.protobuf"
    qps: float = 50.0
    burst: int = 100


@dataclass
class AlgorithmSourceConfig:
    """Exactly one of: ``provider``; ``policy_file``; ``policy_configmap_namespace`` + ``_name``."""

    provider: str | None = None
    policy_file: str | None = None
    policy_configmap_namespace: str | None = None
    policy_configmap_name: str | None = None

    def to_configz(self) -> dict[str, Any]:
        if self.provider is not None:
            return {"provider": self.provider}
        if self.policy_file is not None:
            return {"policy": {"file": {"path": self.policy_file}}}
        configmap = {"namespace": self.policy_configmap_namespace or "", "name": self.policy_configmap_name or ""}
        return {"policy": {"configMap": configmap}}


def _default_source() -> AlgorithmSourceConfig:
    return AlgorithmSourceConfig(provider=DEFAULT_PROVIDER)


@dataclass
class SchedulerConfiguration:
    """The effective configuration. An empty bind address means that server is disabled.

    ``master`` is not part of the file format: it comes from ``--master`` only.
    """

    scheduler_name: str = "default-scheduler"
    algorithm_source: AlgorithmSourceConfig = field(default_factory=_default_source)
    hard_pod_affinity_symmetric_weight: int = 1
    leader_election: LeaderElectionConfiguration = field(default_factory=LeaderElectionConfiguration)
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    healthz_bind_address: str = ""  # 1.9's insecure port: off unless asked for (1.9: 0.0.0.0:10251)
    metrics_bind_address: str = ""
    enable_profiling: bool = False
    enable_contention_profiling: bool = False
    failure_domains: str = DEFAULT_FAILURE_DOMAINS
    scheduling_queue: str = SCHEDULING_QUEUE_1_9  # ours: which generation of upstream's scheduling queue
    master: str = ""

    def to_configz(self) -> dict[str, Any]:
        """The ``componentconfig/v1alpha1`` JSON shape (loadable again with ``--config``)."""
        election, client = self.leader_election, self.client_connection
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "schedulerName": self.scheduler_name,
            "algorithmSource": self.algorithm_source.to_configz(),
            "hardPodAffinitySymmetricWeight": self.hard_pod_affinity_symmetric_weight,
            "leaderElection": {
                "leaderElect": election.leader_elect,
                "leaseDuration": format_go_duration(election.lease_duration),
                "renewDeadline": format_go_duration(election.renew_deadline),
                "retryPeriod": format_go_duration(election.retry_period),
                "resourceLock": election.resource_lock,
                "lockObjectNamespace": election.lock_object_namespace,
                "lockObjectName": election.lock_object_name,
            },
            "clientConnection": {
                "kubeconfig": client.kubeconfig,
                "acceptContentTypes": client.accept_content_types,
                "contentType": client.content_type,
                "qps": int(client.qps) if float(client.qps).is_integer() else client.qps,
                "burst": client.burst,
            },
            "healthzBindAddress": self.healthz_bind_address,
            "metricsBindAddress": self.metrics_bind_address,
            "enableProfiling": self.enable_profiling,
            "enableContentionProfiling": self.enable_contention_profiling,
            "failureDomains": self.failure_domains,
            "schedulingQueue": self.scheduling_queue,
        }


# --------------------------------------------------------------------------------------------------
# The --config file

# canonical key -> value type, or the fields of an object value
_Spec = dict[str, "str | _Spec"]
_SCHEMA: _Spec = {
    "apiVersion": "string",
    "kind": "string",
    "schedulerName": "string",
    "algorithmSource": {
        "provider": "string",
        "policy": {"file": {"path": "string"}, "configMap": {"namespace": "string", "name": "string"}},
    },
    "hardPodAffinitySymmetricWeight": "int32",
    "leaderElection": {
        "leaderElect": "bool", "leaseDuration": "duration", "renewDeadline": "duration",
        "retryPeriod": "duration", "resourceLock": "string", "lockObjectNamespace": "string",
        "lockObjectName": "string",
    },
    "clientConnection": {
        "kubeconfig": "string", "acceptContentTypes": "string", "contentType": "string", "qps": "number",
        "burst": "int32",
    },
    "healthzBindAddress": "string",
    "metricsBindAddress": "string",
    "enableProfiling": "bool",
    "enableContentionProfiling": "bool",
    "failureDomains": "string",
    "schedulingQueue": "string",  # ours, not 1.9's: see SCHEDULING_QUEUES
}


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    try:
        return json.dumps(value, allow_nan=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


class _Reader:
    """Checks a parsed document against :data:`_SCHEMA`; values keyed by canonical name, nulls dropped."""

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, path: str, message: str) -> ConfigFileError:
        return ConfigFileError(f"{self.source}: {path}: {message}")

    def object(self, value: Any, spec: _Spec, path: str) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise self.error(path, f"expected an object, got {_describe(value)}")
        by_lower = {name.lower(): name for name in spec}
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = by_lower.get(key.lower()) if isinstance(key, str) else None
            where = f"{path}.{name or key}" if path else str(name or key)
            if name is None:
                logger.warning("%s: unknown field %s ignored", self.source, where)
            elif item is not None:  # null leaves the field as it is (Go)
                kind = spec[name]
                out[name] = self.object(item, kind, where) if isinstance(kind, dict) else self.scalar(kind, item, where)
        return out

    def scalar(self, kind: str, value: Any, path: str) -> Any:
        is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if kind == "string" and isinstance(value, str):
            return value
        if kind == "bool" and isinstance(value, bool):
            return value
        if kind == "int32" and is_number and isinstance(value, int):
            if -(2**31) <= value < 2**31:
                return value
            raise self.error(path, f"expected a 32-bit integer, got {value}")
        if kind == "number" and is_number and math.isfinite(value):
            return float(value)
        if kind == "duration" and isinstance(value, str):
            try:
                return parse_go_duration(value)
            except UserError as exc:
                raise self.error(path, str(exc)) from None
        wanted = {"string": "a string", "bool": "a boolean", "int32": "an integer", "number": "a number",
                  "duration": "a duration string"}[kind]
        raise self.error(path, f"expected {wanted}, got {_describe(value)}")


def _parse_document(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:  # said in the format the file is in (policy_scheduler.syntax)
        problem = syntax_problem(text, source) or f"invalid YAML: {yaml_problem(exc, text)}"
        raise ConfigFileError(f"{source}: {problem}") from None


def load_config_file(path: str) -> SchedulerConfiguration:
    """Read a ``KubeSchedulerConfiguration`` (YAML or JSON) and apply the 1.9 defaults (``cli.md`` §3)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise ConfigFileError(f"{path}: no such file") from None
    except OSError as exc:
        raise ConfigFileError(f"{path}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigFileError(f"{path}: not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    document = _parse_document(text, path)
    if document is None:
        raise ConfigFileError(f"{path}: empty configuration file")
    if not isinstance(document, Mapping):
        raise ConfigFileError(f"{path}: expected a {KIND} object, got {_describe(document)}")
    values = _Reader(path).object(document, _SCHEMA, "")
    for key, expected in (("apiVersion", API_VERSION), ("kind", KIND)):
        if key not in values:
            raise ConfigFileError(f"{path}: {key}: missing, expected {expected}")
        if values[key] != expected:
            raise ConfigFileError(f'{path}: {key}: "{values[key]}" is not {expected}')
    return _from_values(values, path)


def _from_values(values: dict[str, Any], source: str) -> SchedulerConfiguration:
    """Build the configuration, defaulting zero values as componentconfig's ``SetDefaults_*`` do."""
    election_values = values.get("leaderElection", {})
    election = LeaderElectionConfiguration(
        leader_elect=election_values.get("leaderElect", True),
        lease_duration=election_values.get("leaseDuration") or 15.0,
        renew_deadline=election_values.get("renewDeadline") or 10.0,
        retry_period=election_values.get("retryPeriod") or 2.0,
        resource_lock=election_values.get("resourceLock") or "endpoints",
        lock_object_namespace=election_values.get("lockObjectNamespace") or SYSTEM_NAMESPACE,
        lock_object_name=election_values.get("lockObjectName") or "kube-scheduler",
    )
    client_values = values.get("clientConnection", {})
    client = ClientConnection(
        kubeconfig=client_values.get("kubeconfig", ""),
        accept_content_types=client_values.get("acceptContentTypes", ""),
        content_type=client_values.get("contentType") or ClientConnection.content_type,
        qps=client_values.get("qps") or ClientConnection.qps,
        burst=client_values.get("burst") or ClientConnection.burst,
    )
    return SchedulerConfiguration(
        scheduler_name=values.get("schedulerName") or SchedulerConfiguration.scheduler_name,
        algorithm_source=_source_from_values(values.get("algorithmSource", {}), source),
        hard_pod_affinity_symmetric_weight=values.get("hardPodAffinitySymmetricWeight") or 1,
        leader_election=election,
        client_connection=client,
        healthz_bind_address=_default_bind_address(values.get("healthzBindAddress", "")),
        metrics_bind_address=_default_bind_address(values.get("metricsBindAddress", "")),
        enable_profiling=values.get("enableProfiling", False),
        enable_contention_profiling=values.get("enableContentionProfiling", False),
        failure_domains=values.get("failureDomains") or DEFAULT_FAILURE_DOMAINS,
        scheduling_queue=_scheduling_queue(values.get("schedulingQueue") or SCHEDULING_QUEUE_1_9, source),
    )


def _scheduling_queue(value: str, source: str) -> str:
    if value not in SCHEDULING_QUEUES:
        raise ConfigFileError(f'{source}: schedulingQueue: "{value}" is not one of {", ".join(SCHEDULING_QUEUES)}')
    return value


def _source_from_values(values: dict[str, Any], source: str) -> AlgorithmSourceConfig:
    provider, policy = values.get("provider"), values.get("policy")
    if policy is not None and provider:
        logger.warning("%s: algorithmSource has both provider and policy: provider %r is used", source, provider)
    if policy is None or provider:
        return AlgorithmSourceConfig(provider=provider or DEFAULT_PROVIDER)
    file, configmap = policy.get("file"), policy.get("configMap")
    if file is not None:
        if configmap is not None:
            logger.warning("%s: algorithmSource.policy has both file and configMap: the file is used", source)
        return AlgorithmSourceConfig(policy_file=file.get("path", ""))
    if configmap is not None:
        return AlgorithmSourceConfig(
            policy_configmap_namespace=configmap.get("namespace") or SYSTEM_NAMESPACE,
            policy_configmap_name=configmap.get("name", ""),
        )
    raise ConfigFileError(f"{source}: algorithmSource.policy: neither file nor configMap is set")


# --------------------------------------------------------------------------------------------------
# The deprecated flags

FLAG_NAMES = (
    "config", "kubeconfig", "master", "scheduler_name", "policy_config_file", "policy_configmap",
    "policy_configmap_namespace", "use_legacy_policy_config", "algorithm_provider",
    "hard_pod_affinity_symmetric_weight", "leader_elect", "leader_elect_lease_duration",
    "leader_elect_renew_deadline", "leader_elect_retry_period", "leader_elect_resource_lock",
    "lock_object_namespace", "lock_object_name", "port", "address", "kube_api_qps", "kube_api_burst",
    "kube_api_content_type", "profiling", "contention_profiling", "failure_domains", "feature_gates",
)
_T = TypeVar("_T")


def _flag_value(value: Any, name: str, parse: Callable[[str], _T], cast: Callable[[Any], _T]) -> _T:
    """A flag's string parsed as pflag would (its error wording), or a value already typed."""
    if not isinstance(value, str):
        return cast(value)
    try:
        return parse(value)
    except UserError as exc:
        raise UserError(f'invalid argument "{value}" for "--{name}" flag: {exc}') from None


def _flag_duration(value: str | float, name: str) -> float:
    return _flag_value(value, name, parse_go_duration, float)


def _flag_bool(value: str | bool, name: str) -> bool:
    return _flag_value(value, name, parse_go_bool, bool)


def configuration_from_flags(**flags: Any) -> SchedulerConfiguration:
    """The configuration the deprecated flags describe (``cli.md`` §4, with the 1.10 fixes).

    Keywords are the flags' snake_case names (:data:`FLAG_NAMES`; ``config`` and ``feature_gates`` are
    accepted and ignored); ``None`` or absent means the default. Given values overwrite the defaults as
    they are, without defaulting again (1.9). Durations are Go strings (or seconds), booleans bools
    (or Go boolean strings). Logs 1.9's deprecation warning.
    """
    unknown = sorted(set(flags) - set(FLAG_NAMES))
    if unknown:
        raise TypeError(f"configuration_from_flags() got unknown flags: {', '.join(unknown)}")
    logger.warning(DEPRECATION_WARNING)
    given = {name: value for name, value in flags.items() if value is not None}

    def flag(name: str, default: _T) -> _T:
        return given.get(name, default)

    config = SchedulerConfiguration(
        scheduler_name=flag("scheduler_name", SchedulerConfiguration.scheduler_name),
        algorithm_source=_source_from_flags(given),
        hard_pod_affinity_symmetric_weight=flag("hard_pod_affinity_symmetric_weight", 1),
        enable_profiling=_flag_bool(flag("profiling", False), "profiling"),
        enable_contention_profiling=_flag_bool(flag("contention_profiling", False), "contention-profiling"),
        failure_domains=flag("failure_domains", DEFAULT_FAILURE_DOMAINS),
        master=flag("master", ""),
    )
    election = config.leader_election
    election.leader_elect = _flag_bool(flag("leader_elect", True), "leader-elect")
    for attribute in ("lease_duration", "renew_deadline", "retry_period"):
        name = f"leader_elect_{attribute}"
        if name in given:
            setattr(election, attribute, _flag_duration(given[name], name.replace("_", "-")))
    election.resource_lock = flag("leader_elect_resource_lock", election.resource_lock)
    election.lock_object_namespace = flag("lock_object_namespace", election.lock_object_namespace)
    election.lock_object_name = flag("lock_object_name", election.lock_object_name)
    client = config.client_connection
    client.kubeconfig = flag("kubeconfig", client.kubeconfig)
    client.content_type = flag("kube_api_content_type", client.content_type)
    client.qps = float(flag("kube_api_qps", client.qps))
    client.burst = flag("kube_api_burst", client.burst)

    address, port = flag("address", ""), flag("port", None)
    if port is None or port == -1:  # the insecure port is off unless asked for (-1: 1.10's "disabled")
        config.healthz_bind_address = config.metrics_bind_address = ""
        if address:
            logger.warning("--address %s has no effect without --port (the insecure port is off)", address)
    else:
        config.healthz_bind_address = config.metrics_bind_address = join_host_port(address or "0.0.0.0", port)
    return config


def _source_from_flags(given: Mapping[str, Any]) -> AlgorithmSourceConfig:
    legacy = _flag_bool(given.get("use_legacy_policy_config", False), "use-legacy-policy-config")
    policy_file, configmap = given.get("policy_config_file", ""), given.get("policy_configmap", "")
    if legacy or (policy_file and not configmap):
        return AlgorithmSourceConfig(policy_file=policy_file)
    if configmap:
        namespace = given.get("policy_configmap_namespace") or SYSTEM_NAMESPACE
        return AlgorithmSourceConfig(policy_configmap_namespace=namespace, policy_configmap_name=configmap)
    return AlgorithmSourceConfig(provider=given.get("algorithm_provider") or DEFAULT_PROVIDER)


def validate_configuration(config: SchedulerConfiguration) -> None:
    """Start-up checks with kube-scheduler's messages.

    The hard pod affinity weight is checked here for provider sources only: with a Policy source a
    non-zero Policy value replaces it, and the factory checks the final value (``policy.md`` §6.4).
    """
    weight = config.hard_pod_affinity_symmetric_weight
    if config.algorithm_source.provider is not None and not 1 <= weight <= 100:
        raise UserError(f"invalid hardPodAffinitySymmetricWeight: {weight}, must be in the range 1-100")
    lock = config.leader_election.resource_lock
    if lock not in RESOURCE_LOCKS:
        raise UserError(f"couldn't create resource lock: Invalid lock-type {lock}")
    for kind, address in (("healthz", config.healthz_bind_address), ("metrics", config.metrics_bind_address)):
        if address:
            try:
                split_host_port(address)
            except UserError as exc:
                raise UserError(f'invalid {kind} bind address "{address}": {exc}') from None


def resolve_configuration(flags: Mapping[str, Any]) -> SchedulerConfiguration:
    """The validated configuration for ``run``'s keyword arguments (keys outside :data:`FLAG_NAMES` are
    ignored). With ``config`` set the file alone counts, except ``--master``; else the flags."""
    known = {name: value for name, value in flags.items() if name in FLAG_NAMES}
    if known.get("config"):
        config = load_config_file(known["config"])
        config.master = known.get("master") or ""
    else:
        config = configuration_from_flags(**known)
    validate_configuration(config)
    return config

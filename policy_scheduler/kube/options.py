"""The daemon's configuration: kube-scheduler 1.9's flags and its ``--config`` file (``cli.md``).

Two ways to configure ``policy-scheduler run``, as in kube-scheduler 1.9:

* ``--config <file>``: a ``componentconfig/v1alpha1`` ``KubeSchedulerConfiguration`` (YAML or JSON).
  The file alone defines the configuration; every other scheduler flag is ignored except ``--master``.
* the deprecated flags (:func:`run_flags`): defaults first, then the flags overwrite fields
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
* ``leases`` is accepted as a resource lock besides ``endpoints`` and ``configmaps``.
* ``algorithmSource.policy`` with neither ``file`` nor ``configMap`` is an error (1.9 would build a
  scheduler from an empty Policy). With both, ``file`` wins (as 1.9) and a warning is logged.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click
import yaml
from click.core import ParameterSource

from policy_scheduler.errors import UserError
from policy_scheduler.features import KNOWN_GATES
from policy_scheduler.registry import DEFAULT_PROVIDER

__all__ = [
    "AlgorithmSourceConfig",
    "ClientConnection",
    "ConfigFileError",
    "FLAG_NAMES",
    "GoBool",
    "LeaderElectionConfiguration",
    "RUN_CONTEXT_SETTINGS",
    "SchedulerConfiguration",
    "configuration_from_flags",
    "format_go_duration",
    "load_config_file",
    "normalize_flag_name",
    "parse_go_bool",
    "parse_go_duration",
    "resolve_configuration",
    "run_flags",
    "split_host_port",
    "validate_configuration",
]

logger = logging.getLogger(__name__)

API_VERSION = "componentconfig/v1alpha1"
KIND = "KubeSchedulerConfiguration"
SYSTEM_NAMESPACE = "kube-system"
SCHEDULER_PORT = 10251
DEFAULT_BIND_ADDRESS = f"0.0.0.0:{SCHEDULER_PORT}"
DEFAULT_FAILURE_DOMAINS = (
    "kubernetes.io/hostname,failure-domain.beta.kubernetes.io/zone,failure-domain.beta.kubernetes.io/region"
)
RESOURCE_LOCKS = ("endpoints", "configmaps", "leases")
DEPRECATION_WARNING = "WARNING: all flags than --config are deprecated. Please begin using a config file ASAP."


class ConfigFileError(UserError):
    """The ``--config`` file is missing, unparsable, of the wrong kind, or has a wrongly typed field."""


# --------------------------------------------------------------------------------------------------
# Go syntaxes: durations, booleans, host:port

_SECOND = 10**9
_UNITS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6, "s": _SECOND, "m": 60 * _SECOND,
          "h": 3600 * _SECOND}
_COMPONENT = re.compile(r"([0-9]*)(\.[0-9]*)?([^0-9.]*)")


def _go_quote(text: str) -> str:
    """Go's ``time.quote``: double quotes, ``"`` and ``\\`` escaped, other bytes outside ASCII as ``\\xNN``."""
    out = []
    for char in text:
        if char < " " or char > "~":
            out.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8", errors="replace"))
        else:
            out.append("\\" + char if char in '"\\' else char)
    return '"' + "".join(out) + '"'


def parse_go_duration(text: str) -> float:
    """Seconds in a Go ``time.ParseDuration`` string (``1m30s``, ``500ms``, ``-1.5h``, ``0``), Go's errors."""
    quoted = _go_quote(text)
    rest = text
    negative = rest[:1] == "-"
    if rest[:1] in ("-", "+"):
        rest = rest[1:]
    if rest == "0":
        return 0.0
    if not rest:
        raise UserError(f"time: invalid duration {quoted}")
    total = 0
    position = 0
    while position < len(rest):
        match = _COMPONENT.match(rest, position)
        assert match is not None  # every part of the pattern may be empty
        whole, fraction, unit = match.groups()
        digits = (fraction or ".")[1:]
        if not whole and not digits:
            raise UserError(f"time: invalid duration {quoted}")
        if not unit:
            raise UserError(f"time: missing unit in duration {quoted}")
        if unit not in _UNITS:
            raise UserError(f"time: unknown unit {_go_quote(unit)} in duration {quoted}")
        scale = _UNITS[unit]
        total += int(whole or "0") * scale + int(digits or "0") * scale // 10 ** len(digits)
        if total > 2**63 - (0 if negative else 1):
            raise UserError(f"time: invalid duration {quoted}")
        position = match.end()
    return -total / _SECOND if negative else total / _SECOND


def _fraction(value: int, precision: int) -> tuple[int, str]:
    whole, rest = divmod(value, 10**precision)
    digits = f"{rest:0{precision}d}".rstrip("0")
    return whole, f".{digits}" if digits else ""


def format_go_duration(seconds: float) -> str:
    """Go's ``Duration.String()``: ``15s``, ``1m30s``, ``1h0m0s``, ``500ms``, ``1.5µs``, ``0s``."""
    nanos = round(seconds * _SECOND)
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos == 0:
        return "0s"
    if nanos < 1000:
        return f"{sign}{nanos}ns"
    if nanos < 10**6:
        whole, frac = _fraction(nanos, 3)
        return f"{sign}{whole}{frac}µs"
    if nanos < _SECOND:
        whole, frac = _fraction(nanos, 6)
        return f"{sign}{whole}{frac}ms"
    whole, frac = _fraction(nanos, 9)
    text = f"{whole % 60}{frac}s"
    minutes, hours = whole // 60 % 60, whole // 3600
    if whole >= 60:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def parse_go_bool(text: str) -> bool:
    """Go's ``strconv.ParseBool`` (what pflag accepts in ``--flag=<value>``)."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise UserError(f"strconv.ParseBool: parsing {_go_quote(text)}: invalid syntax")


def _go_split_host_port(address: str) -> tuple[str, str]:
    """Go's ``net.SplitHostPort``; ``ValueError`` carries Go's message."""

    def fail(why: str) -> ValueError:
        return ValueError(f"address {address}: {why}" if address else why)

    colon = address.rfind(":")
    if colon < 0:
        raise fail("missing port in address")
    start = end = 0
    if address.startswith("["):
        close = address.find("]")
        if close < 0:
            raise fail("missing ']' in address")
        if close + 1 == len(address):
            raise fail("missing port in address")
        if close + 1 != colon:
            raise fail("too many colons in address" if address[close + 1] == ":" else "missing port in address")
        host = address[1:close]
        start, end = 1, close + 1
    else:
        host = address[:colon]
        if ":" in host:
            raise fail("too many colons in address")
    if "[" in address[start:]:
        raise fail("unexpected '[' in address")
    if "]" in address[end:]:
        raise fail("unexpected ']' in address")
    return host, address[colon + 1:]


def _join_host_port(host: str, port: str | int) -> str:
    """Go's ``net.JoinHostPort``: IPv6 hosts in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def split_host_port(address: str) -> tuple[str, int]:
    """``host:port`` → (host, port) for the HTTP server; the host may be empty (all interfaces).

    An empty ``address`` means "disabled" (``--port=-1``): callers test for it first; here it is an
    error like any unparsable address (:class:`UserError` with Go's ``net.SplitHostPort`` wording, or
    ``address <a>: invalid port`` for a port outside 0..65535).
    """
    try:
        host, port = _go_split_host_port(address)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if not port.isascii() or not port.isdigit() or int(port) > 65535:
        raise UserError(f"address {address}: invalid port")
    return host, int(port)


def _default_bind_address(address: str) -> str:
    """componentconfig defaulting: unparsable → ``0.0.0.0:10251``; an empty host → ``0.0.0.0``."""
    try:
        host, port = _go_split_host_port(address)
    except ValueError:
        return DEFAULT_BIND_ADDRESS
    return _join_host_port(host or "0.0.0.0", port)


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
    healthz_bind_address: str = DEFAULT_BIND_ADDRESS
    metrics_bind_address: str = DEFAULT_BIND_ADDRESS
    enable_profiling: bool = False
    enable_contention_profiling: bool = False
    failure_domains: str = DEFAULT_FAILURE_DOMAINS
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
    except yaml.YAMLError as exc:
        detail = str(getattr(exc, "problem", None) or exc).strip().splitlines()[0]
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ConfigFileError(f"{source}: invalid YAML: {detail}{where}") from None


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
    )


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

    address, port = flag("address", ""), flag("port", SCHEDULER_PORT)
    if port == -1:  # 1.10: no healthz and no metrics server
        config.healthz_bind_address = config.metrics_bind_address = ""
    else:
        config.healthz_bind_address = config.metrics_bind_address = _join_host_port(address or "0.0.0.0", port)
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


# --------------------------------------------------------------------------------------------------
# click


def normalize_flag_name(name: str) -> str:
    """pflag's normalisation for kube-scheduler: ``--lock_object_name`` ≡ ``--lock-object-name``."""
    return name.replace("_", "-")


RUN_CONTEXT_SETTINGS = {"token_normalize_func": normalize_flag_name}


class GoBool(click.ParamType):
    """A Go boolean flag value: ``--flag``, ``--flag=true``, ``--flag=false``, ``--flag=0``, ...

    Used with ``is_flag=False, flag_value="true"``. Unlike pflag, ``--flag false`` (a separate word)
    is read as the flag's value.
    """

    name = "true|false"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> bool:
        if isinstance(value, bool):
            return value
        try:
            return parse_go_bool(str(value))
        except UserError as exc:
            self.fail(str(exc), param, ctx)


class _DeprecatedOption(click.Option):
    """pflag's ``MarkDeprecated``: hidden from --help, a notice on stderr when given on the command line."""

    def __init__(self, *args: Any, deprecation: str, **kwargs: Any) -> None:
        super().__init__(*args, hidden=True, **kwargs)
        self.deprecation = deprecation

    def consume_value(self, ctx: click.Context, opts: Mapping[str, Any]) -> tuple[Any, ParameterSource]:
        value, source = super().consume_value(ctx, opts)
        if source is ParameterSource.COMMANDLINE:
            click.echo(f"Flag --{self.name and normalize_flag_name(self.name)} has been deprecated, {self.deprecation}",
                       err=True)
        return value, source


class _Int32(click.ParamType):
    """pflag's ``int32``."""

    name = "int32"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        try:
            number = int(value)
        except (TypeError, ValueError):
            self.fail(f"strconv.ParseInt: parsing {_go_quote(str(value))}: invalid syntax", param, ctx)
        if not -(2**31) <= number < 2**31:
            self.fail(f"strconv.ParseInt: parsing {_go_quote(str(value))}: value out of range", param, ctx)
        return number


def _option(name: str, default: Any, help: str, metavar: str = "string", **kwargs: Any) -> Callable[[Any], Any]:
    """An option shown like pflag's: ``--name string``, the default when it is not empty."""
    return click.option(name, default=default, metavar=metavar, show_default=default not in ("", None),
                        help=help, **kwargs)


def _bool_option(name: str, default: bool, help: str) -> Callable[[Any], Any]:
    return click.option(name, type=GoBool(), is_flag=False, flag_value="true", default=str(default).lower(),
                        show_default=True, help=help)


_FEATURE_GATES_HELP = "\b\nA set of key=value pairs that describe feature gates for alpha/experimental features. Options are:\n" + "\n".join(
    f"{name}=true|false (ALPHA - default={str(default).lower()})" for name, default in sorted(KNOWN_GATES.items())
)

_RUN_OPTIONS = [
    _option("--config", "", "The path to the configuration file."),
    _option("--port", SCHEDULER_PORT, "The port that the scheduler's http service runs on", "int32", type=_Int32()),
    _option("--address", "", "The IP address to serve on (set to 0.0.0.0 for all interfaces)"),
    _option("--algorithm-provider", "",
            "The scheduling algorithm provider to use, one of: ClusterAutoscalerProvider | DefaultProvider"),
    _option("--policy-config-file", "",
            "File with scheduler policy configuration. This file is used if policy ConfigMap is not provided or "
            "--use-legacy-policy-config==true"),
    _option("--policy-configmap", "",
            "Name of the ConfigMap object that contains scheduler's policy configuration. It must exist in the "
            "system namespace before scheduler initialization if --use-legacy-policy-config==false. The config "
            "must be provided as the value of an element in 'Data' map with the key='policy.cfg'"),
    _option("--policy-configmap-namespace", "",
            "The namespace where policy ConfigMap is located. The system namespace will be used if this is not "
            "provided or is empty."),
    _bool_option("--use-legacy-policy-config", False,
                 "When set to true, scheduler will ignore policy ConfigMap and uses policy config file"),
    _bool_option("--profiling", False, "Enable profiling via web interface host:port/debug/pprof/"),
    _bool_option("--contention-profiling", False, "Enable lock contention profiling, if profiling is enabled"),
    _option("--master", "", "The address of the Kubernetes API server (overrides any value in kubeconfig)"),
    _option("--kubeconfig", "", "Path to kubeconfig file with authorization and master location information."),
    _option("--kube-api-content-type", ClientConnection.content_type, "Content type of requests sent to apiserver."),
    _option("--kube-api-qps", ClientConnection.qps, "QPS to use while talking with kubernetes apiserver", "float32",
            type=float),
    _option("--kube-api-burst", ClientConnection.burst, "Burst to use while talking with kubernetes apiserver",
            "int32", type=_Int32()),
    _option("--scheduler-name", SchedulerConfiguration.scheduler_name,
            "Name of the scheduler, used to select which pods will be processed by this scheduler, based on "
            'pod\'s "spec.SchedulerName".'),
    _option("--lock-object-namespace", SYSTEM_NAMESPACE, "Define the namespace of the lock object."),
    _option("--lock-object-name", LeaderElectionConfiguration.lock_object_name, "Define the name of the lock object."),
    _option("--hard-pod-affinity-symmetric-weight", 1,
            "RequiredDuringScheduling affinity is not symmetric, but there is an implicit PreferredDuringScheduling "
            "affinity rule corresponding to every RequiredDuringScheduling affinity rule. "
            "--hard-pod-affinity-symmetric-weight represents the weight of implicit PreferredDuringScheduling "
            "affinity rule.", "int32", type=_Int32(), cls=_DeprecatedOption,
            deprecation="This option was moved to the policy configuration file"),
    _option("--failure-domains", DEFAULT_FAILURE_DOMAINS,
            'Indicate the "all topologies" set for an empty topologyKey when it\'s used for '
            "PreferredDuringScheduling pod anti-affinity.", cls=_DeprecatedOption,
            deprecation="Doesn't have any effect. Will be removed in future version."),
    _bool_option("--leader-elect", True,
                 "Start a leader election client and gain leadership before executing the main loop. Enable this "
                 "when running replicated components for high availability."),
    _option("--leader-elect-lease-duration", "15s",
            "The duration that non-leader candidates will wait after observing a leadership renewal until "
            "attempting to acquire leadership of a led but unrenewed leader slot. This is effectively the maximum "
            "duration that a leader can be stopped before it is replaced by another candidate. This is only "
            "applicable if leader election is enabled.", "duration"),
    _option("--leader-elect-renew-deadline", "10s",
            "The interval between attempts by the acting master to renew a leadership slot before it stops "
            "leading. This must be less than or equal to the lease duration. This is only applicable if leader "
            "election is enabled.", "duration"),
    _option("--leader-elect-retry-period", "2s",
            "The duration the clients should wait between attempting acquisition and renewal of a leadership. "
            "This is only applicable if leader election is enabled.", "duration"),
    _option("--leader-elect-resource-lock", "endpoints",
            "The type of resource object that is used for locking during leader election. Supported options are "
            "`endpoints` (default) and `configmaps`."),
    _option("--feature-gates", "", _FEATURE_GATES_HELP, "mapStringBool"),
]


def run_flags(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Declare kube-scheduler 1.9's flags (``cli.md`` §2) on a click command, in 1.9's order.

    Defaults are the effective ones (``--leader-elect`` true, ``--address`` 0.0.0.0, ...); durations
    arrive as strings for :func:`configuration_from_flags`. Use with
    ``context_settings=RUN_CONTEXT_SETTINGS`` for the ``_`` → ``-`` normalisation.
    """
    for option in reversed(_RUN_OPTIONS):
        fn = option(fn)
    return fn

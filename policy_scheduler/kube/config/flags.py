"""The ``run`` command's flags: kube-scheduler 1.9's names, types, defaults and help texts (``cli.md`` §2),
declared on a click command; :func:`policy_scheduler.kube.config.options.resolve_configuration` turns their
values into the configuration."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import click
from click.core import ParameterSource

from policy_scheduler.errors import UserError
from policy_scheduler.features import KNOWN_GATES

from .gosyntax import go_quote, parse_go_bool
from .options import (
    DEFAULT_FAILURE_DOMAINS,
    SCHEDULER_PORT,
    SYSTEM_NAMESPACE,
    ClientConnection,
    LeaderElectionConfiguration,
    SchedulerConfiguration,
)
from .serving_flags import serving_flags


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
            self.fail(f"strconv.ParseInt: parsing {go_quote(str(value))}: invalid syntax", param, ctx)
        if not -(2**31) <= number < 2**31:
            self.fail(f"strconv.ParseInt: parsing {go_quote(str(value))}: value out of range", param, ctx)
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
    _option("--port", None, f"The port of 1.9's insecure http service (1.9's default was {SCHEDULER_PORT}). Off unless "
            "given: plain HTTP without authentication, serving only /healthz, /livez and /readyz (and /metrics "
            "with --insecure-metrics); everything is served on --secure-port over HTTPS. -1 disables it.", "int32",
            type=_Int32()),
    _option("--address", "", "The IP address of the insecure port (--port) (set to 0.0.0.0 for all interfaces)"),
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
    ``context_settings=RUN_CONTEXT_SETTINGS`` for the ``_`` → ``-`` normalisation. Upstream's serving
    flags follow (:mod:`.serving_flags`): they are not 1.9's and apply with ``--config`` too.
    """
    fn = serving_flags(fn)
    for option in reversed(_RUN_OPTIONS):
        fn = option(fn)
    return fn

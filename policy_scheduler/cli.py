"""The ``policy-scheduler`` command line.

User errors (a bad policy file, an unknown provider, a malformed manifest) are printed on one line
and exit with status 2; nothing a user types produces a traceback.
"""

from __future__ import annotations

# ruff: noqa: E402 - `run` catches SIGTERM and SIGINT before the imports below
from .kube.daemon import signals as _signals

# `policy-scheduler run`: SIGTERM and SIGINT are caught from here on, before the imports below (0.2-0.6 s, the
# daemon's own come after them), so that a signal at any moment of the start ends the process with 0 (signals.py).
_signals.install_if_run(__name__)

import logging
import sys
from collections.abc import Callable
from typing import Any

import click
import yaml

from . import __version__
from .api import check_policy, lint_policy, load_policy_file, unknown_names
from .api.types import Policy
from .cache.cluster import ClusterState
from .console import EXIT_USER_ERROR, OUTPUT_HELP, TEXT_OUTPUTS, echo_text, user_errors
from .console import emit as _emit
from .console import write_report as _write_report
from .errors import UserError
from .runtime import tune_garbage_collector
from .sweep.cli import sweep


def _setup_logging(verbosity: int) -> None:
    """``--v``: 0 warnings only, 1 one INFO line per scheduling decision, 2+ upstream's V(2+) detail."""
    level = logging.DEBUG if verbosity >= 2 else logging.INFO if verbosity == 1 else logging.WARNING
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(levelname).1s %(asctime)s %(name)s] %(message)s"
    )


def _registry():
    """The process registry: the built-ins, then the plugins (once; a broken one is a warning)."""
    from .algorithm_source import process_registry

    return process_registry()


SCHEDULING_QUEUE = click.option(
    "--scheduling-queue", type=click.Choice(["1.9", "three-queue"]), default=None,
    help="The queue run would use: '1.9' (default), the FIFO, or with the gate PodPriority the priority queue; "
         "'three-queue', upstream 1.20's activeQ, podBackoffQ and unschedulableQ. Failed pods are retried as run "
         "retries them, on a virtual clock (json/yaml: each pod's attempts and placedAt seconds).")

OUTPUT = click.option(
    "-o", "--output", type=click.Choice([*TEXT_OUTPUTS, "json", "yaml"]), default="table", show_default=True,
    help=OUTPUT_HELP,
)

REPORT = click.option(
    "--report", "report_path", default=None, metavar="FILE.html",
    help="Also write a self-contained HTML report of the result (the -o json data) to FILE.html.",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="policy-scheduler")
@click.option("--v", "verbosity", type=int, default=0, show_default=True, help="Log verbosity (like kube-scheduler's --v).")
def main(verbosity: int) -> None:
    """The Kubernetes 1.9 predicate/priority scheduler policy engine."""
    _setup_logging(verbosity)
    tune_garbage_collector()


main.add_command(sweep)


@main.command()
@OUTPUT
@user_errors
def providers(output: str) -> None:
    """List the algorithm providers, their predicate and priority keys, and where each provider came from."""
    from .plugins import source_json

    reg = _registry()
    data = {
        name: {
            "predicates": sorted(p.fit_predicate_keys),
            "priorities": {k: reg.priorities[k].weight for k in sorted(p.priority_function_keys) if k in reg.priorities},
            "source": source_json(reg, "provider", name),
            "extended_by": [s.as_dict() for s in reg.provider_extensions.get(name, ())],
        }
        for name, p in sorted(reg.providers.items())
    }
    if output not in TEXT_OUTPUTS:
        _emit(data, output)
        return
    lines = []
    for name, p in data.items():
        lines.append(f"{name}{_from(p['source'])}")
        lines.append("  predicates: " + ", ".join(p["predicates"]))
        lines.append("  priorities: " + ", ".join(f"{k} (weight {w})" for k, w in p["priorities"].items()))
        for ext in p["extended_by"]:
            lines.append(f"  extended by: {ext['distribution']} {ext['version']} ({ext['entry_point']})")
    echo_text(lambda _: "\n".join(lines), output)


@main.command()
@OUTPUT
@user_errors
def predicates(output: str) -> None:
    """List the registered fit predicates (mandatory ones marked) and the plugin each came from."""
    from .plugins import source_json

    reg = _registry()
    data = [
        {"name": name, "mandatory": name in reg.mandatory_fit_predicates,
         "providers": sorted(p for p, cfg in reg.providers.items() if name in cfg.fit_predicate_keys),
         "source": source_json(reg, "predicate", name)}
        for name in reg.list_registered_fit_predicates()
    ]
    if output not in TEXT_OUTPUTS:
        _emit(data, output)
        return
    lines = [f"{row['name']}{' (mandatory)' if row['mandatory'] else ''}{_in_providers(row)}{_from(row['source'])}"
             for row in data]
    echo_text(lambda _: "\n".join(lines), output)


@main.command()
@OUTPUT
@user_errors
def priorities(output: str) -> None:
    """List the registered priority functions with their default weights and the plugin each came from."""
    from .plugins import source_json

    reg = _registry()
    data = [
        {"name": name, "weight": reg.priorities[name].weight,
         "form": "function" if reg.priorities[name].function else "map",
         "providers": sorted(p for p, cfg in reg.providers.items() if name in cfg.priority_function_keys),
         "source": source_json(reg, "priority", name)}
        for name in reg.list_registered_priority_functions()
    ]
    if output not in TEXT_OUTPUTS:
        _emit(data, output)
        return
    lines = [f"{row['name']} (weight {row['weight']}, {row['form']}){_in_providers(row)}{_from(row['source'])}"
             for row in data]
    echo_text(lambda _: "\n".join(lines), output)


def _in_providers(row: dict[str, Any]) -> str:
    return f"  [{', '.join(row['providers'])}]" if row["providers"] else ""


def _from(source: Any) -> str:
    """The table's provenance suffix: nothing for a built-in, ``  from <dist> <version> (<entry point>)``."""
    if not isinstance(source, dict):
        return ""
    return f"  from {source['distribution']} {source['version']} ({source['entry_point']})"


@main.group()
def policy() -> None:
    """Work with scheduler Policy files."""


def policy_problems(policy_: Policy) -> list[str]:
    """Everything that would stop a scheduler being built from this policy, as messages with paths."""
    from .registry import failed_plugins_context

    reg = _registry()
    problems = [f"{e.path}: {e.message}" if e.path else e.message for e in check_policy(policy_)]
    problems += [
        (f"{e.path}: {e.message}" if e.path else e.message) + failed_plugins_context(reg)
        for e in unknown_names(policy_, set(reg.fit_predicates), set(reg.priorities))
    ]
    if problems:
        return problems
    from .factory import create_from_policy

    try:
        create_from_policy(policy_, cluster=ClusterState(), registry=reg, extender_factory=_no_call_extender)
    except UserError as e:
        problems.append(str(e))
    return problems


def _no_call_extender(config):
    """Extenders are only described while validating; nothing is called."""
    return config


@policy.command("validate")
@click.argument("file", type=click.Path(dir_okay=False))
@OUTPUT
@user_errors
def policy_validate(file: str, output: str) -> None:
    """Check a Policy file the way kube-scheduler 1.9 would load it, and lint it."""
    try:
        policy_ = load_policy_file(file)
    except UserError as e:
        _report_invalid(file, [str(e)], output)
        return
    problems = policy_problems(policy_)
    if problems:
        _report_invalid(file, problems, output)
        return
    reg = _registry()
    warnings = lint_policy(policy_, set(reg.fit_predicates), set(reg.priorities))
    data = {
        "valid": True,
        "predicates": [p.name for p in policy_.predicates or ()],
        "priorities": {p.name: p.weight for p in policy_.priorities or ()},
        "extenders": len(policy_.extenders or ()),
        "warnings": warnings,
    }
    if output not in TEXT_OUTPUTS:
        _emit(data, output)
        return
    lines = [f"{file}: valid ({len(data['predicates'])} predicates, {len(data['priorities'])} priorities, "
             f"{data['extenders']} extenders)", *(f"warning: {w}" for w in warnings)]
    echo_text(lambda _: "\n".join(lines), output)


def _report_invalid(file: str, errors: list[str], output: str) -> None:
    if output not in TEXT_OUTPUTS:
        _emit({"valid": False, "errors": errors}, output)
    else:
        for e in errors:
            click.echo(f"error: {e}" if e.startswith(file) else f"error: {file}: {e}", err=True)
    sys.exit(EXIT_USER_ERROR)


# -- offline commands -----------------------------------------------------------------------------
def _cluster_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--cluster", "cluster_paths", multiple=True, type=click.Path(),
                     help="Manifest file or directory (repeatable). Default: the bundled example cluster (said "
                          "on stderr)."),
        click.option("--from-cluster", is_flag=True,
                     help="Read the snapshot from a live cluster instead ($KUBECONFIG or ~/.kube/config, or the "
                          "in-cluster service account)."),
        click.option("--kubeconfig", default=None,
                     help="Read the snapshot from the live cluster of this kubeconfig file (implies "
                          "--from-cluster; not with --cluster)."),
        click.option("--context", default=None,
                     help="The kubeconfig context whose live cluster to read (implies --from-cluster; not with "
                          "--cluster)."),
        click.option("--kubernetes-version", default=None, expose_value=False, callback=_remember,
                     help="Validate objects against this release's OpenAPI schema (default: the API server's "
                          "with --from-cluster, else the newest bundled)."),
        click.option("--validate/--no-validate", default=True, expose_value=False, callback=_remember,
                     show_default=True,
                     help="Check objects against the OpenAPI schema and the API server's rules, as the server "
                          "would on creation (--no-validate: only what the engine needs to read them)."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Keep a cross-cutting option (validation) in the context for :func:`_snapshot`."""
    ctx.meta[f"policy_scheduler.{param.name}"] = value
    return value


def _algorithm_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--policy-config-file", default=None, help="File with scheduler policy configuration."),
        click.option("--algorithm-provider", default=None,
                     help="The scheduling algorithm provider to use, one of: ClusterAutoscalerProvider | DefaultProvider"),
        click.option("--feature-gates", default="", help="Key=true,... for the 1.9 gates that change scheduling."),
        click.option("--hard-pod-affinity-symmetric-weight", type=int, default=1, show_default=True,
                     help="Weight of the implicit preferred affinity matching every required affinity term."),
        RULES,
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


RULES_HELP = ("Who decides for pod fields 1.9 never knew (overhead, sidecars, init containers on nodes, topology "
              "spread, scheduling gates, preemptionPolicy, late-bound volumes): 'cluster', the server's rules; "
              "'1.9', pure 1.9, those fields ignored.")
RULES = click.option("--rules", type=click.Choice(["cluster", "1.9"]), default="cluster", show_default=True,
                     expose_value=False, callback=_remember, help=RULES_HELP)


def _rules(name: str = "rules"):
    """The :class:`~.features.Rules` that ``--rules`` (or ``--rules-b``) chose."""
    from .features import Rules

    ctx = click.get_current_context(silent=True)
    meta = ctx.meta if ctx is not None else {}
    return Rules(meta.get(f"policy_scheduler.{name}") or meta.get("policy_scheduler.rules") or "cluster")


_CLUSTER_ORIGIN = "policy_scheduler.cluster_origin"  # ctx.meta key: the line _say_which_cluster writes


def _snapshot(cluster_paths: tuple[str, ...], from_cluster: bool, kubeconfig: str | None, context: str | None):
    """The cluster the command reads: a live one (``--from-cluster``, implied by ``--kubeconfig`` and
    ``--context``, as kubectl reads them), else ``--cluster``'s manifests, else the bundled example (the
    last two are said on stderr by :func:`_say_which_cluster`)."""
    from .offline.snapshot import load_snapshot

    meta = click.get_current_context().meta
    live_flag = "--kubeconfig" if kubeconfig is not None else "--context" if context is not None else None
    if cluster_paths and (from_cluster or live_flag):
        flag = live_flag or "--from-cluster"
        raise UserError(f"{flag} reads a live cluster; it cannot be combined with --cluster FILE|DIR")
    if from_cluster or live_flag:
        from .kube.client.snapshot import read_cluster_snapshot

        snapshot = read_cluster_snapshot(kubeconfig=kubeconfig, context=context,
                                         validate=meta.get("policy_scheduler.validate", True),
                                         kubernetes_version=meta.get("policy_scheduler.kubernetes_version"))
    else:
        if cluster_paths:
            meta[_CLUSTER_ORIGIN] = f"cluster: the manifests of --cluster {', '.join(cluster_paths)}"
        else:
            from .offline.examples import default_cluster_path

            cluster_paths = (str(default_cluster_path()),)
            meta[_CLUSTER_ORIGIN] = (f"cluster: the bundled example {cluster_paths[0]} (no --cluster, --kubeconfig "
                                     f"or --from-cluster given)")
        snapshot = load_snapshot(cluster_paths, _manifest_checks())
    _warn(snapshot.warnings)
    return snapshot.under(_rules())


def _say_which_cluster() -> None:
    """Where the snapshot came from, on stderr, when it is not a live cluster: said with the result (an error
    stays one line), so the bundled example is never taken for the user's cluster."""
    origin = click.get_current_context().meta.pop(_CLUSTER_ORIGIN, None)
    if origin:
        click.echo(origin, err=True)


def _manifest_checks():
    """The checks ``--validate`` and ``--kubernetes-version`` ask for on manifest files."""
    from .offline.snapshot import manifest_checks

    meta = click.get_current_context().meta
    return manifest_checks(meta.get("policy_scheduler.validate", True), meta.get("policy_scheduler.kubernetes_version"))


def _warn(warnings: list[str], limit: int = 10) -> None:
    for w in warnings[:limit]:
        click.echo(f"warning: {w}", err=True)
    if len(warnings) > limit:
        click.echo(f"warning: ... and {len(warnings) - limit} more unknown fields", err=True)


def _builder(source, feature_gates: str, hard_weight: int, rules_option: str = "rules"):
    from .algorithm_source import scheduler_builder
    from .features import FeatureGates

    return scheduler_builder(source, FeatureGates.parse(feature_gates, _rules(rules_option)), hard_weight)


def _pod_priority(feature_gates: str | None) -> bool:
    """Whether ``--feature-gates`` turns ``PodPriority`` on (priority queue, nominations, preemption)."""
    from .features import FeatureGates

    return FeatureGates.parse(feature_gates).enabled("PodPriority")


def _source(policy_config_file: str | None, algorithm_provider: str | None):
    from .algorithm_source import from_flags

    return from_flags(policy_config_file=policy_config_file, algorithm_provider=algorithm_provider)


@main.command()
@_cluster_options
@_algorithm_options
@click.option("--scheduler-name", default="default-scheduler", show_default=True,
              help="Schedule only pending pods whose spec.schedulerName is this.")
@click.option("--explain", "with_explain", is_flag=True, help="Add each pod's explanation (json/yaml output).")
@click.option("--write-placements", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the scheduled pods, spec.nodeName set, as a YAML List ready to apply.")
@SCHEDULING_QUEUE
@OUTPUT
@REPORT
@user_errors
def simulate(cluster_paths, from_cluster, kubeconfig, context, policy_config_file, algorithm_provider,
             feature_gates, hard_pod_affinity_symmetric_weight, scheduler_name, with_explain, write_placements,
             scheduling_queue, output, report_path) -> None:
    """Schedule the snapshot's pending pods in queue order, assuming each before the next."""
    from .offline.report import simulation_table, simulation_to_dict
    from .offline.simulate import placements_as_pods
    from .offline.simulate import simulate as run_simulation

    snapshot = _snapshot(cluster_paths, from_cluster, kubeconfig, context)
    source = _source(policy_config_file, algorithm_provider)
    build = _builder(source, feature_gates, hard_pod_affinity_symmetric_weight)
    pending = len(snapshot.pending_pods(scheduler_name))
    priority = _pod_priority(feature_gates)
    if sys.stderr.isatty() and pending > 1:
        with click.progressbar(length=pending, label="scheduling", file=sys.stderr) as bar:
            result = run_simulation(snapshot, build, scheduler_name=scheduler_name, explain=with_explain, progress=bar.update,
                                    pod_priority=priority, queue=scheduling_queue)
    else:
        result = run_simulation(snapshot, build, scheduler_name=scheduler_name, explain=with_explain, pod_priority=priority,
                                queue=scheduling_queue)
    if write_placements:
        items = placements_as_pods(result.placements)
        try:
            with open(write_placements, "w", encoding="utf-8") as f:
                yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}, f, sort_keys=False)
        except OSError as e:
            raise UserError(f"{write_placements}: cannot write: {(e.strerror or str(e)).lower()}") from None
    data = simulation_to_dict(result, source.label) if report_path or output not in TEXT_OUTPUTS else {}
    if report_path:
        _write_report(data, report_path)
    _say_which_cluster()
    if output in TEXT_OUTPUTS:
        echo_text(lambda layout: simulation_table(result, layout), output)
    else:
        _emit(data, output)


@main.command()
@click.argument("pod")
@_cluster_options
@_algorithm_options
@OUTPUT
@REPORT
@user_errors
def explain(pod, cluster_paths, from_cluster, kubeconfig, context, policy_config_file, algorithm_provider,
            feature_gates, hard_pod_affinity_symmetric_weight, output, report_path) -> None:
    """Why POD (namespace/name in the snapshot, or a manifest file) lands where it does, or nowhere."""
    from .offline.report import explain_result_to_dict, explanation_table
    from .offline.simulate import explain_pod

    snapshot = _snapshot(cluster_paths, from_cluster, kubeconfig, context)
    target = _pod_argument(pod, snapshot)
    source = _source(policy_config_file, algorithm_provider)
    build = _builder(source, feature_gates, hard_pod_affinity_symmetric_weight)
    if _pod_priority(feature_gates):  # nominations count, and an unschedulable pod shows its preemption
        from pathlib import Path

        from .offline.priority import explain_with_priority

        explanation = explain_with_priority(snapshot, target, build, pod if Path(pod).is_file() else None)
    else:
        explanation = explain_pod(snapshot, target, build)
    data = explain_result_to_dict(explanation, source.label)
    if report_path:
        _write_report(data, report_path)
    _say_which_cluster()
    if output in TEXT_OUTPUTS:
        echo_text(lambda layout: explanation_table(explanation, layout), output)
    else:
        _emit(data, output)


def _pod_argument(ref: str, snapshot):
    """A pod reference: an existing manifest file holding one Pod, else namespace/name in the snapshot."""
    from pathlib import Path

    from .offline.snapshot import load_pod_file

    path = Path(ref)
    if path.is_file():
        pod, warnings = load_pod_file(ref, _manifest_checks(), snapshot.rules)
        _warn(warnings)
        return pod
    if path.is_dir():
        raise UserError(f"{ref}: is a directory, not a Pod manifest file")
    if path.suffix in (".yaml", ".yml", ".json") or (path.suffix and ref.count("/") != 1):
        raise UserError(f"{ref}: no such file")
    return snapshot.find_pod(ref)


@main.command()
@click.argument("pod_template")
@_cluster_options
@_algorithm_options
@click.option("--max", "max_replicas", type=click.IntRange(min=0), default=None, help="Stop after this many replicas.")
@OUTPUT
@REPORT
@user_errors
def capacity(pod_template, cluster_paths, from_cluster, kubeconfig, context, policy_config_file, algorithm_provider,
             feature_gates, hard_pod_affinity_symmetric_weight, max_replicas, output, report_path) -> None:
    """How many more copies of POD_TEMPLATE fit, where they land, and what stopped the count."""
    from .offline.report import capacity_table, capacity_to_dict
    from .offline.simulate import capacity as run_capacity

    snapshot = _snapshot(cluster_paths, from_cluster, kubeconfig, context)
    template = _pod_argument(pod_template, snapshot)
    source = _source(policy_config_file, algorithm_provider)
    build = _builder(source, feature_gates, hard_pod_affinity_symmetric_weight)
    result = run_capacity(snapshot, template.raw, build, max_replicas)
    data = capacity_to_dict(result, pod=template, max_replicas=max_replicas, algorithm=source.label)
    if report_path:
        _write_report(data, report_path)
    _say_which_cluster()
    if output in TEXT_OUTPUTS:
        echo_text(lambda layout: capacity_table(result, max_replicas, layout), output)
    else:
        _emit(data, output)


@main.command()
@click.argument("policy_a")
@click.argument("policy_b")
@_cluster_options
@click.option("--feature-gates", default="", help="Key=true,... for the 1.9 gates that change scheduling.")
@click.option("--hard-pod-affinity-symmetric-weight", type=int, default=1, show_default=True)
@click.option("--scheduler-name", default="default-scheduler", show_default=True)
@click.option("--feature-gates-b", default=None, metavar="Key=true,...",
              help="The gates for POLICY_B (default: --feature-gates), e.g. PodPriority=true to compare without "
                   "and with priority and preemption.")
@RULES
@click.option("--rules-b", type=click.Choice(["cluster", "1.9"]), default=None, expose_value=False,
              callback=_remember, help="The rules for POLICY_B (default: --rules), e.g. 1.9 to see what the "
                                       "cluster's rules change.")
@SCHEDULING_QUEUE
@OUTPUT
@REPORT
@user_errors
def compare(policy_a, policy_b, cluster_paths, from_cluster, kubeconfig, context, feature_gates,
            hard_pod_affinity_symmetric_weight, scheduler_name, feature_gates_b, scheduling_queue, output,
            report_path) -> None:
    """Simulate the pending queue under POLICY_A and POLICY_B (files or provider names); show what differs."""
    from .algorithm_source import from_argument
    from .offline.priority_report import compare_extras, preemptions_table
    from .offline.report import differences_table, differences_to_dict
    from .offline.simulate import compare as run_compare

    snapshot = _snapshot(cluster_paths, from_cluster, kubeconfig, context)
    source_a, source_b = from_argument(policy_a), from_argument(policy_b)
    gates_b = feature_gates if feature_gates_b is None else feature_gates_b
    build_a = _builder(source_a, feature_gates, hard_pod_affinity_symmetric_weight)
    build_b = _builder(source_b, gates_b, hard_pod_affinity_symmetric_weight, "rules_b")
    rules_a, rules_b = _rules(), _rules("rules_b")
    label_a, label_b = source_a.label, source_b.label
    if gates_b != feature_gates:
        label_a, label_b = f"{label_a} [{feature_gates or 'no gates'}]", f"{label_b} [{gates_b or 'no gates'}]"
    if rules_b is not rules_a:
        label_a, label_b = f"{label_a} [{rules_a.value} rules]", f"{label_b} [{rules_b.value} rules]"
    a, b, diffs = run_compare(snapshot, build_a, build_b, scheduler_name,
                              pod_priority_a=_pod_priority(feature_gates), pod_priority_b=_pod_priority(gates_b),
                              snapshot_b=snapshot.under(rules_b), queue=scheduling_queue)
    data = {**differences_to_dict(label_a, label_b, diffs, len(a.placements) + len(a.gated), a, b), **compare_extras(a, b)}
    if report_path:
        _write_report(data, report_path)
    _say_which_cluster()
    if output in TEXT_OUTPUTS:
        def sections(layout):
            return "\n\n".join(s for s in (
                differences_table(label_a, label_b, diffs, len(a.placements) + len(a.gated), layout),
                preemptions_table(a, f"Preemptions under A ({label_a})", layout),
                preemptions_table(b, f"Preemptions under B ({label_b})", layout)) if s)

        echo_text(sections, output)
    else:
        _emit(data, output)


@main.command("report")
@click.argument("result_file", metavar="SAVED.json")
@click.option("-o", "--output", "output_path", default=None, metavar="FILE.html",
              help="Where to write the report. Default: SAVED.json's path with the suffix .html.")
@user_errors
def report(result_file: str, output_path: str | None) -> None:
    """Render a saved `simulate|explain|capacity|compare|migrate|sweep -o json` (or -o yaml) result as an HTML report."""
    from pathlib import Path

    from .report import load_result, write_report

    data = load_result(result_file)
    target = output_path or str(Path(result_file).with_suffix(".html"))
    write_report(data, target)
    click.echo(f"report written to {target}", err=True)


# -- migration ------------------------------------------------------------------------------------
@main.command()
@click.option("--policy-config-file", default=None, help="File with scheduler policy configuration.")
@click.option("--policy-configmap", default=None, help="Name of the ConfigMap holding the Policy (key policy.cfg).")
@click.option("--policy-configmap-namespace", default="kube-system", show_default=True,
              help="Namespace of --policy-configmap.")
@click.option("--kubeconfig", default=None,
              help="With --policy-configmap: path to a kubeconfig file (refused without --policy-configmap).")
@click.option("--algorithm-provider", default=None,
              help="The scheduling algorithm provider to migrate, one of: ClusterAutoscalerProvider | DefaultProvider")
@click.option("--feature-gates", default="", help="Key=true,... for the 1.9 gates (PodPriority enables preemption).")
@click.option("--hard-pod-affinity-symmetric-weight", type=int, default=1, show_default=True,
              help="As for run: used when the Policy does not set hardPodAffinitySymmetricWeight.")
@RULES
@click.option("--to", "to", default=None, metavar="1.25..1.32",
              help="The target kube-scheduler's minor version (default: the newest, 1.32).")
@click.option("--scheduler-name", default="default-scheduler", show_default=True, help="The profile's schedulerName.")
@click.option("-o", "--output", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True,
              help="yaml: the KubeSchedulerConfiguration; json: it and the mapping of every Policy entry.")
@click.option("--strict", is_flag=True,
              help="Exit 1 if any entry the Policy names is approximate or dropped (what 1.9 did unasked is only "
                   "reported).")
@REPORT
@user_errors
def migrate(policy_config_file, policy_configmap, policy_configmap_namespace, kubeconfig, algorithm_provider,
            feature_gates, hard_pod_affinity_symmetric_weight, to, scheduler_name, output, strict, report_path) -> None:
    """Print the Policy as a v1 KubeSchedulerConfiguration for the modern kube-scheduler, and say on stderr
    what does not carry over exactly (docs/migration.md)."""
    from .features import FeatureGates
    from .migration import migrate as migrate_algorithm
    from .migration import parse_target

    target = parse_target(to)
    if kubeconfig is not None and not policy_configmap:
        raise UserError("--kubeconfig reads the Policy of a live cluster's ConfigMap: give --policy-configmap NAME "
                        "too (or drop --kubeconfig to migrate --policy-config-file or --algorithm-provider)")
    if policy_configmap:  # the 1.10 precedence: a ConfigMap wins over a file given beside it
        from .kube.client.policy_configmap import policy_configmap_source

        source = policy_configmap_source(policy_configmap_namespace, policy_configmap, kubeconfig)
    else:
        source = _source(policy_config_file, algorithm_provider)
    reg = _registry()
    gates = FeatureGates.parse(feature_gates, _rules())
    source.build(ClusterState(), feature_gates=gates, hard_pod_affinity_symmetric_weight=hard_pod_affinity_symmetric_weight,
                 extender_factory=_no_call_extender)  # refuse what 1.9 refuses
    result = migrate_algorithm(source, target=target, feature_gates=gates, scheduler_name=scheduler_name,
                               hard_pod_affinity_symmetric_weight=hard_pod_affinity_symmetric_weight, registry=reg)
    data = result.as_dict()
    _emit(data if output == "json" else data["configuration"], output)
    for entry in result.mapping:
        if entry.status != "exact":
            click.echo(f"{entry.describe()}", err=True)
    if report_path:
        _write_report(data, report_path)
    if strict and result.inexact():
        click.echo(f"error: --strict: {len(result.inexact())} Policy entries are approximate or dropped", err=True)
        sys.exit(1)


# -- the daemon -------------------------------------------------------------------------------------
def _run_flags(fn: Callable[..., Any]) -> Callable[..., Any]:
    from .kube.config.flags import run_flags

    return run_flags(fn)


def _run_context() -> dict[str, Any]:
    from .kube.config.flags import RUN_CONTEXT_SETTINGS

    return dict(RUN_CONTEXT_SETTINGS)


@main.command(context_settings=_run_context())
@_run_flags
@click.option("--v", "run_verbosity", type=int, default=None, help="Log verbosity (overrides the global --v).")
@click.option("--bind-workers", type=click.IntRange(min=1), default=16, show_default=True,
              help="Binds in flight at once (the next pod is decided while they run).")
@click.option("--volume-bind-timeout", type=click.FloatRange(min=0, min_open=True), default=600.0, show_default=True,
              help="Seconds a pod waits for its late-bound volumes to be bound before it is re-queued "
                   "(the VolumeBinding plugin's bindTimeoutSeconds; the cluster's rules only).")
@click.option("--rules", "rules", type=click.Choice(["cluster", "1.9"]), default="cluster", show_default=True,
              help=RULES_HELP)
@click.option("--scheduling-queue", type=click.Choice(["1.9", "three-queue"]), default=None,
              help="The scheduling queue: '1.9' (default), 1.9's FIFO, or with the gate PodPriority its priority queue "
                   "(an unschedulable pod is retried only when a cluster event moves it); 'three-queue', upstream "
                   "1.20's activeQ, podBackoffQ and unschedulableQ (per-pod back-off 1-10 s; every unschedulable pod "
                   "retried within 60-90 s whatever happens). Overrides the --config file's schedulingQueue.")
@click.option("--pod-max-in-unschedulable-pods-duration", "unschedulable_timeout", default="60s", show_default=True,
              metavar="duration", help="With --scheduling-queue three-queue: how long a pod stays in unschedulableQ "
                                      "before the next 30-s flush retries it (1.20: 60 s; upstream's flag of 1.26).")
def run(run_verbosity: int | None, bind_workers: int, volume_bind_timeout: float, rules: str,
        scheduling_queue: str | None, unschedulable_timeout: str, **flags: Any) -> None:
    """Schedule pods on a live cluster: kube-scheduler 1.9's daemon, flags and behaviour."""
    verbosity = run_verbosity if run_verbosity is not None else click.get_current_context().parent.params["verbosity"]
    _setup_daemon_logging(verbosity)
    _exit_if_stopped()
    from .features import FeatureGates
    from .kube.config.gosyntax import parse_go_duration
    from .kube.config.options import resolve_configuration
    from .kube.config.serving_options import serving_options_from_flags
    from .kube.daemon.lifecycle import Daemon

    _exit_if_stopped()
    try:
        _registry()
        try:
            max_unschedulable = parse_go_duration(unschedulable_timeout)
        except UserError as e:
            raise UserError(f"--pod-max-in-unschedulable-pods-duration: {e}") from None
        gates = FeatureGates.parse(flags.get("feature_gates"), rules)
        config = resolve_configuration(flags)
        serving = serving_options_from_flags(flags)
        if scheduling_queue is not None:
            config.scheduling_queue = scheduling_queue
        _exit_if_stopped()
        daemon = Daemon(config, gates, bind_workers=bind_workers, volume_bind_timeout=volume_bind_timeout,
                        max_unschedulable=max_unschedulable, serving=serving, stop_event=_signals.STOP)
        daemon.prepare()
    except UserError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    _exit_if_stopped()
    _signals.daemon_running()
    _signals.exit_process(daemon.run())


def _exit_if_stopped() -> None:
    """A signal during the start, before the daemon runs: nothing is held yet, so exit 0 now."""
    name = _signals.received()
    if name is not None:
        logging.getLogger(__name__).info("shutting down: %s during start-up", name)
        _signals.exit_process(0)


def _setup_daemon_logging(verbosity: int) -> None:
    """The daemon logs its life (start-up, leadership, reloads) at INFO; ``--v=1`` adds one line per
    scheduling decision, ``--v=2`` and up upstream's V(2+) detail."""
    level = logging.DEBUG if verbosity >= 2 else logging.INFO
    root = logging.getLogger()
    root.handlers.clear()
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname).1s %(asctime)s %(name)s] %(message)s")
    if verbosity < 1:  # the loggers of the per-pod decision lines
        for name in ("policy_scheduler.kube.daemon.scheduler", "policy_scheduler.scheduling.cycle"):
            logging.getLogger(name).setLevel(logging.WARNING)


if __name__ == "__main__":  # pragma: no cover
    main()

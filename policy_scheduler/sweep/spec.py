"""The sweep specification: a YAML file, checked against ``spec.schema.json`` beside this module, then
against what the schema cannot say (globs that match nothing, algorithms that cannot be built, templates
that are not one Pod, names given twice).

Every problem is a :class:`SpecError` on one line: ``<file>: <field path>: <what is wrong>``. Paths in the
file are relative to its directory.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from ..algorithm_source import AlgorithmSource, from_provider, scheduler_builder
from ..api import load_policy_file
from ..api.loader import load_policy_from_configmap
from ..errors import UserError, did_you_mean
from ..features import FeatureGates, Rules
from ..offline.snapshot import ManifestLoader, load_pod_file, manifest_checks
from ..syntax import syntax_problem, yaml_problem
from .scenarios import KINDS, Scenario, check_selector, default_name

METRICS = ("placed", "unschedulable", "cpu", "memory", "nodesUsed", "largestFree", "zoneSkew", "preemptions",
           "wallTime")
ONE_OF_HINTS = {
    "snapshots": "expected a path (or glob), or an object with path and, optionally, name",
    "algorithms": "expected an object with provider or policy (one of them), and optionally label, rules, "
                  "schedulingQueue, featureGates, hardPodAffinitySymmetricWeight",
    "scenarios": f'expected "as-is" or an object with one of the keys {", ".join(KINDS)} (and optionally name)',
}


class SpecError(UserError):
    """The sweep specification is invalid."""


@dataclass(frozen=True)
class SnapshotSpec:
    name: str
    path: str  # absolute: a manifest file or a directory of them


@dataclass(frozen=True)
class AlgorithmSpec:
    label: str
    source: AlgorithmSource
    rules: str = Rules.CLUSTER.value
    scheduling_queue: str | None = None
    feature_gates: str = ""
    hard_pod_affinity_symmetric_weight: int = 1
    policy_path: str | None = None  # as the specification names it
    fingerprint: str = ""  # the entry as written and the Policy file's bytes (a cell's key reads it)

    def gates(self) -> FeatureGates:
        return FeatureGates.parse(self.feature_gates, Rules(self.rules))


@dataclass(frozen=True)
class SweepSpec:
    path: str
    snapshots: tuple[SnapshotSpec, ...]
    algorithms: tuple[AlgorithmSpec, ...]
    scenarios: tuple[Scenario, ...]
    metrics: tuple[str, ...] = METRICS
    scheduler_name: str = "default-scheduler"
    validate: bool = True
    kubernetes_version: str | None = None

    @property
    def cells(self) -> int:
        return len(self.snapshots) * len(self.algorithms) * len(self.scenarios)


@cache
def spec_schema() -> dict[str, Any]:
    """The specification's JSON Schema (draft 2020-12)."""
    return json.loads(resources.files(__package__).joinpath("spec.schema.json").read_text(encoding="utf-8"))


def load_spec(path: str | os.PathLike[str]) -> SweepSpec:
    """Read, check and resolve a sweep specification."""
    name = os.fspath(path)
    data = read_yaml(name, name, SpecError)
    if not isinstance(data, dict):
        raise SpecError(f"{name}: expected a mapping with snapshots, algorithms and scenarios, got "
                        f"{'nothing' if data is None else type(data).__name__}")
    _check_schema(data, name)
    return _Resolver(name, data).spec()


def read_yaml(path: str, label: str, error: type[UserError] = UserError) -> Any:
    """A YAML (or JSON) file's document; what keeps it from being read is ``error("<label>: <why>")`` (a
    syntax error in the format the file is in: :mod:`policy_scheduler.syntax`)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{label}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise error(f"{label}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    try:
        return yaml.load(text, Loader=ManifestLoader)
    except yaml.YAMLError as e:
        problem = syntax_problem(text, path, loader=ManifestLoader) or f"invalid YAML: {yaml_problem(e, text)}"
        raise error(f"{label}: {problem}") from None


def _check_schema(data: dict[str, Any], source: str) -> None:
    validator = jsonschema.Draft202012Validator(spec_schema())
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is None:
        return
    if error.validator == "oneOf":
        error = _branch_error(error)
    where = field_path(error.absolute_path)
    if error.validator == "oneOf":
        message = ONE_OF_HINTS.get(str(error.absolute_path[0]), error.message)
        unknown = _unknown_scenario_kind(error)
        if unknown is not None:
            message = f'unknown scenario "{unknown}"' + did_you_mean(unknown, KINDS)
        elif "is valid under each of" in error.message:
            message = "give one of provider and policy, not both"
        elif where.startswith("algorithms["):
            message = "missing provider or policy (one of them)"
    else:
        message = " ".join(error.message.split())
    raise SpecError(f"{source}: {where or '(top level)'}: {message}")


def _unknown_scenario_kind(error: jsonschema.ValidationError) -> str | None:
    """The kind a ``scenarios[i]`` entry names when it is none of :data:`KINDS` (``as_is``, ``scal: {...}``)."""
    if len(error.absolute_path) != 2 or error.absolute_path[0] != "scenarios":
        return None
    entry = error.instance
    if isinstance(entry, str):
        kinds = [entry]
    elif isinstance(entry, dict):
        kinds = [key for key in entry if key != "name"]
    else:
        return None
    return kinds[0] if len(kinds) == 1 and isinstance(kinds[0], str) and kinds[0] not in KINDS else None


def _branch_error(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """Within a ``oneOf``, the error of the branch the instance meant (the one whose required key it has)."""
    if not isinstance(error.instance, dict):
        return error
    meant = [i for i, branch in enumerate(error.validator_value)
             if set(branch.get("required", ())) & error.instance.keys()]
    inner = [e for e in error.context or () if e.relative_schema_path and e.relative_schema_path[0] in meant]
    best = jsonschema.exceptions.best_match(inner) if len(meant) == 1 else None
    return best if best is not None else error


def field_path(parts: Any) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".")


def digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:16]


class _Resolver:
    """Turns the checked document into a :class:`SweepSpec`, reading the files it names."""

    def __init__(self, source: str, data: dict[str, Any]) -> None:
        self.source = source
        self.data = data
        self.base = Path(source).resolve().parent
        self.checks = manifest_checks(data.get("validate", True), data.get("kubernetesVersion"))

    def fail(self, where: str, message: str) -> SpecError:
        return SpecError(f"{self.source}: {where}: {message}")

    def resolve(self, path: str) -> Path:
        return self.base / Path(path).expanduser()

    def spec(self) -> SweepSpec:
        return SweepSpec(
            path=self.source,
            snapshots=self.snapshots(),
            algorithms=self.algorithms(),
            scenarios=self.scenarios(),
            metrics=tuple(m for m in METRICS if m in self.data.get("metrics", METRICS)),
            scheduler_name=self.data.get("schedulerName", "default-scheduler"),
            validate=self.data.get("validate", True),
            kubernetes_version=self.data.get("kubernetesVersion"),
        )

    def snapshots(self) -> tuple[SnapshotSpec, ...]:
        out: list[SnapshotSpec] = []
        names: dict[str, str] = {}
        paths: dict[str, str] = {}
        for i, entry in enumerate(self.data["snapshots"]):
            where = f"snapshots[{i}]"
            pattern, name = (entry, None) if isinstance(entry, str) else (entry["path"], entry.get("name"))
            matches = self.glob(pattern)
            if not matches:
                raise self.fail(where, f"{pattern}: no such file or directory" if not glob.has_magic(pattern)
                                else f"{pattern} matches no file or directory")
            if name is not None and len(matches) > 1:
                raise self.fail(f"{where}.name", f"{pattern} matches {len(matches)} snapshots; a name is for one")
            for shown, absolute in matches:
                label = name or shown
                for seen, what in ((names, label), (paths, absolute)):
                    if what in seen:
                        raise self.fail(where, f"snapshot {label!r} is already listed as {seen[what]}")
                names[label] = paths[absolute] = where
                out.append(SnapshotSpec(label, absolute))
        return tuple(out)

    def glob(self, pattern: str) -> list[tuple[str, str]]:
        """(the path as the rows name it, its absolute path) of every match, sorted."""
        expanded = os.path.expanduser(pattern)
        if not glob.has_magic(expanded):
            path = self.resolve(expanded)
            return [(os.path.normpath(expanded), str(path.resolve()))] if path.exists() else []
        if os.path.isabs(expanded):
            found = glob.glob(expanded, recursive=True)
        else:
            found = glob.glob(expanded, root_dir=self.base, recursive=True)
        return [(os.path.normpath(p), str(self.resolve(p).resolve())) for p in sorted(found)]

    def algorithms(self) -> tuple[AlgorithmSpec, ...]:
        out: list[AlgorithmSpec] = []
        labels: dict[str, str] = {}
        for i, entry in enumerate(self.data["algorithms"]):
            where = f"algorithms[{i}]"
            content = b""
            if "provider" in entry:
                source = from_provider(entry["provider"])
            else:
                source, content = self.policy(entry["policy"], f"{where}.policy")
            label = entry.get("label", source.label)
            if label in labels:
                raise self.fail(where, f"label {label!r} is already used by {labels[label]}; give each a label")
            labels[label] = where
            algorithm = AlgorithmSpec(
                label, AlgorithmSource(label, source.provider, source.policy), entry.get("rules", Rules.CLUSTER.value),
                entry.get("schedulingQueue"), entry.get("featureGates", ""), entry.get("hardPodAffinitySymmetricWeight", 1),
                entry.get("policy"), digest(json.dumps(entry, sort_keys=True), content))
            try:  # fail before any work, as every command does, if it cannot be built
                scheduler_builder(algorithm.source, algorithm.gates(), algorithm.hard_pod_affinity_symmetric_weight)
            except UserError as e:
                raise self.fail(where, str(e)) from None
            out.append(algorithm)
        return tuple(out)

    def policy(self, path: str, where: str) -> tuple[AlgorithmSource, bytes]:
        """A Policy file, or a ConfigMap manifest holding one (key ``policy.cfg``)."""
        file = self.resolve(path)
        try:
            content = file.read_bytes()
        except FileNotFoundError:
            raise self.fail(where, f"{path}: no such file") from None
        except OSError as e:
            raise self.fail(where, f"{path}: cannot read: {e.strerror or e}") from None
        try:
            document = yaml.safe_load(content)
        except yaml.YAMLError:
            document = None  # the Policy loader says what is wrong with it
        try:
            if isinstance(document, dict) and document.get("kind") == "ConfigMap":
                policy = load_policy_from_configmap(document, source=path)
            else:
                policy = load_policy_file(file)
        except UserError as e:
            raise self.fail(where, str(e).replace(str(file), path)) from None
        return AlgorithmSource(path, policy=policy), content

    def scenarios(self) -> tuple[Scenario, ...]:
        out: list[Scenario] = []
        names: dict[str, str] = {}
        for i, entry in enumerate(self.data["scenarios"]):
            where = f"scenarios[{i}]"
            if isinstance(entry, str):
                entry = {entry: {}}
            kind = next(k for k in entry if k != "name")
            args = entry[kind] or {}
            scenario = self.scenario(kind, args, entry.get("name") or default_name(kind, args), f"{where}.{kind}",
                                     entry)
            if scenario.name in names:
                raise self.fail(where, f"scenario {scenario.name!r} is already listed as {names[scenario.name]}; "
                                       "give one a name")
            names[scenario.name] = where
            out.append(scenario)
        return tuple(out)

    def scenario(self, kind: str, args: dict[str, Any], name: str, where: str, entry: dict[str, Any]) -> Scenario:
        cls = KINDS[kind]
        if kind == "scale":
            return cls(name, entry, factor=float(args["factor"]))
        if kind == "drain":
            if "selector" in args:
                problem = check_selector(args["selector"])
                if problem:
                    raise self.fail(f"{where}.selector", problem)
            return cls(name, entry, nodes=tuple(args.get("nodes", ())), selector=args.get("selector"),
                       zone=args.get("zone"))
        if kind == "add-nodes":
            return cls(name, entry, like=args["like"], count=args["count"])
        if kind == "capacity":
            template = self.resolve(args["template"])
            try:
                pod, _ = load_pod_file(template, self.checks)
            except UserError as e:
                raise self.fail(f"{where}.template", str(e)) from None
            # The template's bytes are in the fingerprint: a changed template is a new cell.
            fingerprint = {**entry, "templateDigest": digest(template.read_bytes())}
            return cls(name, fingerprint, template=pod.raw, max_replicas=args.get("max"))
        return cls(name, entry)

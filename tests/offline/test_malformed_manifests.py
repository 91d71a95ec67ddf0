"""Malformed input never crashes: the bundled example cluster and a policy file, mutated.

Each mutant replaces one field (anywhere in one object) with a value of a random, usually wrong, type, or
deletes it. ``simulate`` must then either work or fail with exactly one ``error: `` line (exit 2) naming
the file and the object; never an exception. Most mutants are loaded and simulated in-process (the same
functions the CLI calls, ``user_errors`` rendering reproduced); some go through the CLI end to end.
Mutants are drawn from explicit seeds (:mod:`tests.mutants`), the same on every machine; every field of
the cluster is also hit once with the schema check off, where only the typed readers and the API
server's rules stand between a wrong type and the engine.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from policy_scheduler.cli import _builder, _source, main
from policy_scheduler.errors import UserError
from policy_scheduler.model.openapi import OpenAPIValidator, resolve_version
from policy_scheduler.offline.examples import (
    default_cluster_path,
    dra_cluster_path,
    modern_cluster_path,
    priority_cluster_path,
)
from policy_scheduler.offline.simulate import simulate as run_simulation
from policy_scheduler.offline.snapshot import CLUSTER_SCOPED, Checks, Snapshot, add_object, load_snapshot
from tests.mutants import Path_, draw, field_paths, mutate

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "policies" / "default-provider.json"
CLI_EVERY = 10  # one mutant in this many runs through the CLI end to end

@cache
def cluster_documents(directory: Path | None = None) -> tuple[tuple[str, tuple[tuple[int, Any], ...]], ...]:
    """``(file name, ((document index, object), ...))`` for every file of the example cluster."""
    out = []
    for path in sorted((directory or default_cluster_path()).glob("*.yaml")):
        docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        out.append((path.name, tuple((i, d) for i, d in enumerate(docs) if d is not None)))
    return tuple(out)


@cache
def cluster_targets(directory: Path | None = None) -> tuple[tuple[int, int, Path_], ...]:
    """``(file position, document position, field path)`` of every field of every document."""
    return tuple(
        (f, d, path)
        for f, (_, docs) in enumerate(cluster_documents(directory))
        for d, (_, doc) in enumerate(docs)
        for path in field_paths(doc)
    )


def expected_names(doc: dict[str, Any], path: Path_) -> list[str]:
    """What an error about this mutant must name besides the file: ``Kind namespace/name`` when the
    mutation left the object's identity intact, else the document index."""
    if doc["kind"].endswith("List"):
        if path[0] != "items" or len(path) < 3:
            return []
        item = doc["items"][path[1]]
        return expected_names({"kind": doc["kind"][: -len("List")], **item}, path[2:])
    meta = doc.get("metadata") or {}
    if path[0] in ("kind", "apiVersion") or path[:2] in (("metadata",), ("metadata", "name")):
        return []
    kind = doc["kind"]
    if path[:2] == ("metadata", "namespace"):
        return [f"{kind} {meta['name']}"]
    if kind in CLUSTER_SCOPED:
        return [f"{kind} {meta['name']}"]
    return [f"{kind} {meta.get('namespace') or 'default'}/{meta['name']}"]


@cache
def schema_validator() -> OpenAPIValidator:
    return OpenAPIValidator(resolve_version(None))


@cache
def default_build():
    return _builder(_source(None, None), "", 1)


def assert_one_line_error(output: str, file_name: str, names: list[str]) -> None:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert lines[0].startswith("error: "), output
    assert file_name in lines[0], output
    for name in names:
        assert name in lines[0], (name, output)


def check_cli(args: list[str], file_name: str, names: list[str]) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 2), result.output
    if result.exit_code == 2:
        assert_one_line_error(result.output, file_name, names)


# Crashes found before, kept as explicit cases: (target, new value, delete, via CLI, with schema).
CLUSTER_REGRESSIONS = {
    # A Service's label value of the wrong type reached the label-value check (issue 16).
    "service-label-value-map": ((3, 0, ("items", 5, "metadata", "labels", "app")), {"": 7972191419}, False, False, False),
    "service-labels-map-of-int": ((3, 0, ("items", 0, "metadata", "labels")), {"k": 1}, False, False, False),
    "null-preferred-node-affinity-term": (
        (1, 16, ("spec", "affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution", 0)),
        None, False, False, False),
    "null-preferred-pod-affinity-term": (
        (1, 20, ("spec", "affinity", "podAffinity", "preferredDuringSchedulingIgnoredDuringExecution", 0)),
        None, False, False, False),
    "null-label-selector-requirement": (
        (1, 31, ("spec", "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution", 0,
                 "labelSelector", "matchExpressions", 0)), None, False, False, False),
    "replicaset-null-spec": ((3, 1, ("spec",)), None, False, False, False),
    "replicaset-no-spec": ((3, 1, ("spec",)), None, True, False, False),
    "pv-volume-id-list": ((3, 7, ("spec", "awsElasticBlockStore", "volumeID")), [1], False, False, False),
    # The schema check named a pod with a wrong-typed namespace "Pod default/name".
    "namespace-of-a-wrong-type-with-schema": ((2, 1, ("metadata", "namespace")), 7, False, False, True),
}


@pytest.mark.parametrize("case", CLUSTER_REGRESSIONS.values(), ids=CLUSTER_REGRESSIONS.keys())
def test_mutated_cluster_regressions(case: tuple) -> None:
    target, new, delete, via_cli, with_schema = case
    assert target in cluster_targets(), "the example cluster changed: re-aim this case"
    check_cluster_mutant(target, new, delete, via_cli, with_schema)


@pytest.mark.parametrize("seed", range(300))
def test_mutated_cluster_never_crashes(seed: int) -> None:
    """In-process mutants are loaded with the OpenAPI schema or without it (so that the typed readers
    and the API server's rules meet wrong types too); the CLI always validates."""
    rng, target, new, delete = draw(seed, cluster_targets())
    check_cluster_mutant(target, new, delete, via_cli=rng.randrange(CLI_EVERY) == 0, with_schema=rng.random() < 0.5)


EVERY_FIELD_VALUES = (7, -3, True, "x", "", [1], ["a"], {"k": 1}, {}, None, 1.5, float("nan"), "DELETE")


#: Each bundled cluster's fields in this many interleaved parts, each its own test (about 10 s each for the
#: default cluster's 4,600 fields), so that a parallel run spreads them over its workers.
EVERY_FIELD_PARTS = 8


@pytest.mark.parametrize("part", range(EVERY_FIELD_PARTS), ids=lambda part: f"part-{part}")
@pytest.mark.parametrize("directory", [default_cluster_path(), priority_cluster_path(), modern_cluster_path(),
                                       dra_cluster_path()], ids=["default", "priority", "modern", "dra"])
def test_every_cluster_field_of_a_wrong_type_never_crashes(directory: Path, part: int) -> None:
    """Every field of every object of the bundled clusters (between them every kind a snapshot reads),
    schema off, each with one of a rotation of wrong values (or deleted): all failures are collected,
    so one run lists every crash. Field ``i`` belongs to part ``i % EVERY_FIELD_PARTS``; the parts together
    are every field."""
    crashes = []
    for i, target in enumerate(cluster_targets(directory)):
        if i % EVERY_FIELD_PARTS != part:
            continue
        new = EVERY_FIELD_VALUES[i % len(EVERY_FIELD_VALUES)]
        try:
            check_cluster_mutant(target, None if new == "DELETE" else new, new == "DELETE", False, False, directory)
        except AssertionError as e:
            crashes.append(f"{target} <- {new!r}: {str(e).splitlines()[0]}")
        except Exception as e:  # noqa: BLE001 - the point of the test: name every crash
            crashes.append(f"{target} <- {new!r}: {type(e).__name__}: {e}")
    assert not crashes, "\n".join(crashes)


def check_cluster_mutant(target: tuple[int, int, Path_], new: Any, delete: bool, via_cli: bool,
                         with_schema: bool, directory: Path | None = None) -> None:
    f, d, path = target
    files = cluster_documents(directory)
    file_name, docs = files[f]
    index, doc = docs[d]
    mutant = mutate(doc, path, new, delete)
    names = expected_names(doc, path)
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        if via_cli:
            for name, documents in files:
                objects = [mutant if (name, i) == (file_name, index) else x for i, x in documents]
                text = yaml.safe_dump_all(_with_gaps(documents, objects), sort_keys=False)
                (directory / name).write_text(text, encoding="utf-8")
            check_cli(["simulate", "--cluster", str(directory)], file_name, [*names, f"document {index}"])
            return
        try:
            snapshot = Snapshot()
            seen: dict[tuple[str, str, str], str] = {}
            for name, documents in files:
                source = str(directory / name)
                for i, x in documents:
                    add_object(snapshot, mutant if (name, i) == (file_name, index) else x, f"{source}: document {i}", seen,
                               Checks(schema_validator()) if with_schema else Checks())
            snapshot.instantiate_claim_templates()  # as load_manifests does after the last object
            run_simulation(snapshot, default_build())
        except UserError as e:
            assert_one_line_error(f"error: {e}", file_name, [*names, f"document {index}"])


def _with_gaps(documents: tuple[tuple[int, Any], ...], objects: list[Any]) -> list[Any]:
    """The file's documents at their original indices (null documents kept as such)."""
    by_index = dict(zip((i for i, _ in documents), objects))
    return [by_index.get(i) for i in range(max(by_index) + 1)]


@cache
def policy_document() -> dict[str, Any]:
    return json.loads(POLICY.read_text(encoding="utf-8"))


@cache
def example_snapshot() -> Snapshot:
    return load_snapshot([default_cluster_path()])


@pytest.mark.parametrize("seed", range(150))
def test_mutated_policy_never_crashes(seed: int) -> None:
    rng, path, new, delete = draw(seed, field_paths(policy_document()))
    mutant = mutate(policy_document(), path, new, delete)
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / POLICY.name
        # NaN and infinities are written as Python's json writes them (NaN, Infinity), which Go rejects.
        file.write_text(json.dumps(mutant), encoding="utf-8")
        if rng.randrange(CLI_EVERY) == 0:
            check_cli(["simulate", "--policy-config-file", str(file)], str(file), [])
            return
        try:
            build = _builder(_source(str(file), None), "", 1)
            run_simulation(example_snapshot(), build)
        except UserError as e:
            assert_one_line_error(f"error: {e}", str(file), [])


def test_mutation_targets_cover_every_kind() -> None:
    kinds = Counter(cluster_documents()[f][1][d][1]["kind"] for f, d, _ in cluster_targets())
    assert {"Node", "Pod", "ReplicaSet", "List"} <= set(kinds)


def test_missing_pod_file_is_no_such_file(tmp_path: Path) -> None:
    for command in ("capacity", "explain"):
        for ref in (str(tmp_path / "nope.yaml"), "pods/missing.json"):
            result = CliRunner().invoke(main, [command, ref])
            assert result.exit_code == 2, result.output
            assert result.output == f"error: {ref}: no such file\n"
        result = CliRunner().invoke(main, [command, str(tmp_path)])
        assert result.exit_code == 2 and "is a directory" in result.output
    result = CliRunner().invoke(main, ["explain", "default/not-there"])
    assert result.output == "error: pod default/not-there is not in the snapshot\n"

"""Malformed input never crashes: the bundled example cluster and a policy file, mutated at random.

Each mutant replaces one field (anywhere in one object) with a value of a random, usually wrong, type, or
deletes it. ``simulate`` must then either work or fail with exactly one ``error: `` line (exit 2) naming
the file and the object; never an exception. Most mutants are loaded and simulated in-process (the same
functions the CLI calls, ``user_errors`` rendering reproduced); some go through the CLI end to end.
"""

from __future__ import annotations

import copy
import json
import tempfile
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from policy_scheduler.cli import _builder, _source, main
from policy_scheduler.errors import UserError
from policy_scheduler.model.openapi import OpenAPIValidator, resolve_version
from policy_scheduler.offline.examples import default_cluster_path
from policy_scheduler.offline.simulate import simulate as run_simulation
from policy_scheduler.offline.snapshot import CLUSTER_SCOPED, Checks, Snapshot, add_object, load_snapshot

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "policies" / "default-provider.json"
CLI_EVERY = 10  # one mutant in this many runs through the CLI end to end

Path_ = tuple[str | int, ...]

WRONG_VALUES = st.one_of(
    st.integers(min_value=-(2**40), max_value=2**40),
    st.integers(max_value=-1),
    st.booleans(),
    st.text(max_size=6),
    st.lists(st.one_of(st.integers(), st.text(max_size=3)), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
)


@cache
def cluster_documents() -> tuple[tuple[str, tuple[tuple[int, Any], ...]], ...]:
    """``(file name, ((document index, object), ...))`` for every file of the example cluster."""
    out = []
    for path in sorted(default_cluster_path().glob("*.yaml")):
        docs = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        out.append((path.name, tuple((i, d) for i, d in enumerate(docs) if d is not None)))
    return tuple(out)


def field_paths(value: Any, prefix: Path_ = ()) -> list[Path_]:
    """Every path inside ``value`` (the empty path, the whole value, excluded)."""
    paths: list[Path_] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        paths.append((*prefix, key))
        paths.extend(field_paths(child, (*prefix, key)))
    return paths


@cache
def cluster_targets() -> tuple[tuple[int, int, Path_], ...]:
    """``(file position, document position, field path)`` of every field of every document."""
    return tuple(
        (f, d, path)
        for f, (_, docs) in enumerate(cluster_documents())
        for d, (_, doc) in enumerate(docs)
        for path in field_paths(doc)
    )


def mutate(doc: Any, path: Path_, new: Any, delete: bool) -> Any:
    doc = copy.deepcopy(doc)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return doc


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


@settings(
    max_examples=300, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    phases=[Phase.explicit, Phase.generate],  # shrinking a snapshot-sized example takes minutes
)
@given(
    target=st.sampled_from(cluster_targets()),
    new=WRONG_VALUES,
    delete=st.integers(0, 5).map(lambda n: n == 0),
    via_cli=st.integers(0, CLI_EVERY - 1).map(lambda n: n == 0),
    with_schema=st.booleans(),
)
def test_mutated_cluster_never_crashes(
    target: tuple[int, int, Path_], new: Any, delete: bool, via_cli: bool, with_schema: bool
) -> None:
    """In-process mutants are loaded with the OpenAPI schema or without it (so that the typed readers
    and the API server's rules meet wrong types too); the CLI always validates."""
    f, d, path = target
    files = cluster_documents()
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


@settings(
    max_examples=150, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.generate],
)
@given(
    path=st.sampled_from(field_paths(json.loads(POLICY.read_text(encoding="utf-8")))),
    new=WRONG_VALUES,
    delete=st.integers(0, 5).map(lambda n: n == 0),
    via_cli=st.integers(0, CLI_EVERY - 1).map(lambda n: n == 0),
)
def test_mutated_policy_never_crashes(path: Path_, new: Any, delete: bool, via_cli: bool) -> None:
    mutant = mutate(policy_document(), path, new, delete)
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / POLICY.name
        # NaN and infinities are written as Python's json writes them (NaN, Infinity), which Go rejects.
        file.write_text(json.dumps(mutant), encoding="utf-8")
        if via_cli:
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

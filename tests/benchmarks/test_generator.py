"""The benchmark generator reproduces the shared sample; placements hash to upstream 1.9's values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.generator import dumps, generate, to_objects
from benchmarks.placement_hash import fnv1a64, placement_hash
from benchmarks.throughput import run
from policy_scheduler.algorithm_source import from_provider

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_NAME = "sample-n4-p12-seed7.json"
SHARED_SAMPLE = REPO_ROOT.parent / "shared" / "benchmarks" / SAMPLE_NAME
LOCAL_SAMPLE = REPO_ROOT / "benchmarks" / "data" / SAMPLE_NAME

# The shared original when the repository is cloned beside ../shared, and always the local copy.
SAMPLES = [p for p in (SHARED_SAMPLE, LOCAL_SAMPLE) if p.is_file()]
SAMPLE_IDS = ["shared" if p == SHARED_SAMPLE else "local-copy" for p in SAMPLES]


def test_a_sample_is_available():
    assert LOCAL_SAMPLE.is_file(), f"{LOCAL_SAMPLE} is missing"


@pytest.mark.parametrize("sample", SAMPLES, ids=SAMPLE_IDS)
def test_generator_reproduces_sample(sample: Path):
    expected = json.loads(sample.read_text(encoding="utf-8"))
    got = generate(4, 12, 7)
    assert list(got) == list(expected)
    for key in expected:
        assert got[key] == expected[key], key


@pytest.mark.parametrize("sample", SAMPLES, ids=SAMPLE_IDS)
def test_generator_output_is_byte_identical(sample: Path):
    assert dumps(generate(4, 12, 7)) == sample.read_text(encoding="utf-8")


def test_generator_is_deterministic_and_seed_dependent():
    assert generate(10, 30, 3) == generate(10, 30, 3)
    assert generate(10, 30, 3) != generate(10, 30, 4)


def test_to_objects_sets_kind_and_api_version():
    objects = to_objects(generate(4, 12, 7))
    kinds = {(o["kind"], o["apiVersion"]) for o in objects}
    assert kinds == {
        ("Node", "v1"),
        ("Pod", "v1"),
        ("Service", "v1"),
        ("ReplicationController", "v1"),
        ("ReplicaSet", "extensions/v1beta1"),
        ("StatefulSet", "apps/v1beta1"),
    }
    assert [o["metadata"]["name"] for o in objects if o["kind"] == "Pod"] == [f"pod-{i:06d}" for i in range(12)]


def test_fnv1a64_known_answers():
    assert f"{fnv1a64(b''):016x}" == "cbf29ce484222325"
    assert f"{fnv1a64(b'a'):016x}" == "af63dc4c8601ec8c"
    assert placement_hash([]) == "cbf29ce484222325"


def test_placement_hash_format():
    # unschedulable pods contribute "<pod>=\n"
    assert placement_hash([("pod-000000", None)]) == placement_hash([("pod-000000", "")])
    digest = placement_hash([("pod-000000", "node-00001"), ("pod-000001", None)])
    assert len(digest) == 16 and digest == digest.lower()


@pytest.mark.parametrize(
    ("nodes", "pods", "seed", "expected"),
    [
        (4, 12, 7, "20245bc3fc60e19b"),
        (100, 500, 1, "2afa5908a54784ca"),
    ],
    ids=["n4-p12-seed7", "n100-p500-seed1"],
)
@pytest.mark.parametrize("vectorized", [True, False], ids=["vectorized", "reference"])
def test_placements_match_upstream(nodes: int, pods: int, seed: int, expected: str, vectorized: bool):
    """Both scheduling paths place every pod exactly where upstream 1.9 does."""
    result = run(generate(nodes, pods, seed), from_provider("DefaultProvider"), vectorized=vectorized)
    assert len(result.placements) == pods
    assert result.placement_hash == expected


def test_topology_spread_variant_adds_only_the_constraints():
    plain = generate(30, 40, 3)
    spread = generate(30, 40, 3, "topology-spread")
    for a, b in zip(plain["pending"], spread["pending"]):
        constraints = b["spec"].pop("topologySpreadConstraints")
        assert a == b
        assert [(c["topologyKey"], c["whenUnsatisfiable"]) for c in constraints] == [
            ("failure-domain.beta.kubernetes.io/zone", "DoNotSchedule"), ("kubernetes.io/hostname", "ScheduleAnyway")]
    with pytest.raises(ValueError):
        generate(1, 1, 1, "no-such-variant")


def test_topology_spread_variant_spreads_and_both_paths_agree():
    data = generate(30, 60, 5, "topology-spread")
    fast = run(data, from_provider("DefaultProvider"), vectorized=True)
    reference = run(data, from_provider("DefaultProvider"), vectorized=False)
    assert fast.pairs == reference.pairs
    hosts = {n["metadata"]["name"]: n["metadata"]["labels"]["failure-domain.beta.kubernetes.io/zone"] for n in data["nodes"]}
    per_app: dict[str, dict[str, int]] = {}
    for pod, (_, host) in zip(data["pending"], fast.pairs):
        app = pod["metadata"]["labels"]["app"]
        zone_counts = per_app.setdefault(app, {z: 0 for z in set(hosts.values())})
        zone_counts[hosts[host]] += 1
    assert all(max(c.values()) - min(c.values()) <= 1 for c in per_app.values())

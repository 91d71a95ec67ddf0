"""The offline commands with DRA: the bundled example (``examples/dra``, its README's table), ``explain``'s device
lines, ``capacity`` making each copy's claims from its template, and bad DRA objects in a snapshot (one line
naming the file, the object and the field; exit 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from policy_scheduler.offline.examples import dra_cluster_path
from policy_scheduler.offline.report import result_schema
from tests.offline.cli import run, run_json, write

EXAMPLE = str(dra_cluster_path())
#: examples/dra/README.md's table: pod -> (node, devices of its claim).
OUTCOMES = {
    "ml/train-0": ("gpu-h", ["gpu.example.com/gpu-h/gpu-0", "gpu.example.com/gpu-h/gpu-1"]),
    "ml/notebook-0": ("gpu-a", ["gpu.example.com/gpu-a/gpu-0"]),
    "ml/notebook-1": ("gpu-a", ["gpu.example.com/gpu-a/gpu-0"]),
    "ml/infer-0": ("gpu-h", ["gpu.example.com/gpu-h/gpu-2"]),
    "ml/flex-0": ("gpu-h", ["gpu.example.com/gpu-h/gpu-3"]),
    "ml/infer-1": ("gpu-a", ["gpu.example.com/gpu-a/gpu-1"]),
    "ml/huge-0": (None, None),
    "ml/web-0": ("cpu-1", None),
}


def test_simulate_allocates_the_examples_devices_as_its_readme_says():
    data = run_json("simulate", "--cluster", EXAMPLE)
    jsonschema.validate(data, result_schema("simulate"))
    got = {}
    for p in data["placements"]:
        devices = [d for c in p.get("claims", []) for d in c["devices"]] or None
        got[p["pod"]] = (p["node"], devices)
    assert got == OUTCOMES
    errors = {p["pod"]: p["error"] for p in data["placements"] if p["error"]}
    assert errors == {"ml/huge-0": "0/3 nodes are available: 3 cannot allocate all claims."}
    shared = {p["pod"]: p["claims"][0]["allocated"] for p in data["placements"] if p["pod"].startswith("ml/notebook")}
    assert shared == {"ml/notebook-0": True, "ml/notebook-1": False}
    readme = (dra_cluster_path() / "README.md").read_text()
    for pod, (node, _) in OUTCOMES.items():
        assert f"| `{pod.split('/')[1]}` " in readme and (node or "pending") in readme


def test_simulate_text_lists_the_devices_and_1_9_ignores_the_claims():
    text = run("simulate", "--cluster", EXAMPLE).stdout
    assert "Devices (ResourceClaims):" in text and "ml/notebook-1  ml/shared-gpu" in text
    legacy = run_json("simulate", "--cluster", EXAMPLE, "--rules", "1.9")
    assert all(p["node"] and "claims" not in p for p in legacy["placements"])


def test_explain_shows_each_nodes_devices_or_why_none():
    text = run("explain", "ml/flex-0", "--cluster", EXAMPLE).stdout
    assert "Devices (DynamicResources):" in text
    assert "  gpu-h: flex-0-gpu: gpu/big -> gpu.example.com/gpu-h/gpu-0" in text
    assert "  gpu-a: flex-0-gpu: gpu/small -> gpu.example.com/gpu-a/gpu-0" in text
    assert "DynamicResources (x2)" in text  # the score prefers the first subrequest: gpu-h
    data = run_json("explain", "ml/huge-0", "--cluster", EXAMPLE)
    jsonschema.validate(data, result_schema("explain"))
    assert data["devices"] == [
        {"node": "cpu-1", "devices": [], "why": "cannot allocate all claims (huge-0-gpu: request gpus (wants 8): "
                                               "0 devices, 0 free, 0 free and selected)"},
        {"node": "gpu-a", "devices": [], "why": "cannot allocate all claims (huge-0-gpu: request gpus (wants 8): "
                                               "2 devices, 2 free, 2 free and selected)"},
        {"node": "gpu-h", "devices": [], "why": "cannot allocate all claims (huge-0-gpu: request gpus (wants 8): "
                                               "4 devices, 4 free, 4 free and selected)"},
    ]


def test_capacity_makes_each_copys_claim_from_its_template(tmp_path):
    template = write(tmp_path, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "infer", "namespace": "ml"},
                                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
                                         "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]}},
                     name="pod.yaml")
    counted = run_json("capacity", template, "--cluster", EXAMPLE)
    assert (counted["replicas"], counted["stopReason"]) == (6, "0/3 nodes are available: 3 cannot allocate all claims.")


# -- bad input ---------------------------------------------------------------------------------------------------
def example_objects() -> list[dict[str, Any]]:
    out = []
    for path in sorted(Path(EXAMPLE).glob("*.yaml")):
        out += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return out


def with_change(kind: str, name: str, change: Any) -> list[dict[str, Any]]:
    objects = example_objects()
    for o in objects:
        if o["kind"] == kind and o["metadata"]["name"] == name:
            change(o)
    return objects


@pytest.mark.parametrize("kind, name, change, message", [
    ("ResourceSlice", "gpu-a-gpu.example.com", lambda o: o["spec"]["pool"].update(resourceSliceCount=0),
     "ResourceSlice gpu-a-gpu.example.com: spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero"),
    ("ResourceSlice", "gpu-a-gpu.example.com", lambda o: o["spec"].update(allNodes=True),
     'ResourceSlice gpu-a-gpu.example.com: spec: Invalid value: "{`nodeName`, `allNodes`}": exactly one of '
     "`nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"),
    ("ResourceSlice", "gpu-h-gpu.example.com", lambda o: o["spec"]["devices"][1].update(name="gpu-0"),
     'ResourceSlice gpu-h-gpu.example.com: spec.devices[1].name: Duplicate value: "gpu-0"'),
    ("ResourceSlice", "gpu-h-gpu.example.com",
     lambda o: o["spec"]["devices"][0]["attributes"].update(model={"string": "h100", "int": 1}),
     'ResourceSlice gpu-h-gpu.example.com: spec.devices[0].attributes[model]: Invalid value: "": exactly one value '
     "must be specified"),
    ("ResourceClaimTemplate", "one-gpu", lambda o: o["spec"]["spec"]["devices"]["requests"][0]["exactly"].update(
        count=0), "ResourceClaimTemplate ml/one-gpu: spec.spec.devices.requests[0].exactly.count: Invalid value: 0: "
                  "must be greater than zero"),
    ("ResourceClaim", "shared-gpu", lambda o: o["spec"]["devices"]["requests"][0].pop("exactly"),
     "ResourceClaim ml/shared-gpu: spec.devices.requests[0]: Required value: exactly one of `exactly` or "
     "`firstAvailable` is required"),
    ("ResourceClaimTemplate", "two-h100-same-root", lambda o: o["spec"]["spec"]["devices"]["constraints"][0].update(
        matchAttribute="pcieRoot"), "ResourceClaimTemplate ml/two-h100-same-root: "
     'spec.spec.devices.constraints[0].matchAttribute: Invalid value: "pcieRoot": a fully qualified name must be a '
     "domain and a name separated by a slash"),
    ("DeviceClass", "gpu.example.com", lambda o: o["spec"]["selectors"][0]["cel"].update(expression="device.driver =="),
     "DeviceClass gpu.example.com: spec.selectors[0].cel.expression: Invalid value: \"device.driver ==\": "),
    ("ResourceClaim", "shared-gpu", lambda o: o["spec"]["devices"]["requests"][0]["exactly"].update(
        selectors=[{"cel": {"expression": "device.attributes[\"gpu.example.com\"].model == "}}]),
     "ResourceClaim ml/shared-gpu: spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value: "),
])
def test_a_bad_dra_object_is_one_line_naming_file_object_and_field(tmp_path, kind, name, change, message):
    cluster = write(tmp_path, *with_change(kind, name, change))
    result = run("simulate", "--cluster", cluster)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "cluster.yaml: document " in lines[0], result.output
    assert message in lines[0]

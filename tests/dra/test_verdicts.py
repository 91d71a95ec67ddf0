"""The allocator's verdicts kept per node across pods (``policy_scheduler.dra.verdicts``), and the vectorised form
that asks again only the nodes whose verdict may have changed (``policy_scheduler.fastpath.dynamic_resources``),
change nothing: random
sequences of pods, with slices, classes, claims and node labels changing in between, are decided on two clusters
built alike, one keeping verdicts and one deciding every node afresh, and every decision (node, error, each node's
reasons, each node's predicates and scores, the devices each node could give, the claims' allocations) is the
same on both."""

from __future__ import annotations

import random
from typing import Any

import pytest

from policy_scheduler.cache.cluster import ClusterState
from policy_scheduler.dra.explain import explain_devices
from policy_scheduler.dra.reserve import release_pod_claims
from policy_scheduler.factory import create
from policy_scheduler.model.dra import ADMIN_NAMESPACE_LABEL, DeviceClass, ResourceClaim, ResourceSlice
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod
from policy_scheduler.offline.simulate import schedule_one
from policy_scheduler.predicates.dynamic_resources import dynamic_resources_of

pytest.importorskip("cel_expr_python", reason="DRA's CEL runtime (Python 3.11+)")

GPU, NIC = "gpu.example.com", "nic.example.com"
NODES = ("n0", "n1", "n2", "n3")
REGIONS = ("r1", "r2")


def node_raw(name: str, region: str, extra: str = "") -> dict[str, Any]:
    labels = {"region": region, **({"extra": extra} if extra else {})}
    return {"metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "20"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def class_raw(name: str, expression: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"selectors": [{"cel": {"expression": expression}}]}}


CLASSES = {
    "gpu": [f'device.driver == "{GPU}"', f'device.driver == "{GPU}" && device.attributes["{GPU}"].numa >= 0'],
    "nic": [f'device.driver == "{NIC}"'],
    "any": ["true", f'device.driver != "{NIC}"'],
    # a runtime error on the NIC devices, which have no "numa"
    "numa": [f'device.attributes["{GPU}"].numa == 1', f'device.driver == "{GPU}"'],
}


def gpu_device(rng: random.Random, i: int) -> dict[str, Any]:
    device: dict[str, Any] = {"name": f"gpu-{i}", "attributes": {"numa": {"int": rng.randrange(2)},
                                                                 "model": {"string": rng.choice(("a100", "h100"))}}}
    if rng.random() < 0.15:
        device["taints"] = [{"key": "broken", "value": "yes", "effect": "NoSchedule"}]
    return device


def slice_raw(rng: random.Random, name: str, generation: int) -> dict[str, Any]:
    """Slices by name: ``local-<node>`` (GPUs on the node), ``region-<r>`` (NICs by node selector), ``net`` (NICs
    on all nodes, one shareable with capacity), ``perdev`` (per-device node selection)."""
    spec: dict[str, Any] = {"pool": {"name": name, "generation": generation, "resourceSliceCount": 1}}
    if name.startswith("local-"):
        spec.update(driver=GPU, nodeName=name[len("local-"):],
                    devices=[gpu_device(rng, i) for i in range(rng.randrange(0, 5))])
    elif name.startswith("region-"):
        spec.update(driver=NIC, nodeSelector={"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "region", "operator": "In", "values": [name[len("region-"):]]}]}]},
            devices=[{"name": f"nic-{i}"} for i in range(rng.randrange(1, 3))])
    elif name == "net":
        devices: list[dict[str, Any]] = [{"name": f"nic-{i}"} for i in range(rng.randrange(0, 3))]
        devices.append({"name": "shared", "allowMultipleAllocations": True,
                        "capacity": {"bandwidth": {"value": str(rng.choice((2, 3, 4)))}}})
        spec.update(driver=NIC, allNodes=True, devices=devices)
    elif name.startswith("parts-"):  # a pool of two slices: shared counters, and devices that consume them
        spec.update(driver=GPU, nodeName="n1")
        spec["pool"].update(name="parts", resourceSliceCount=2)
        if name == "parts-counters":
            spec["sharedCounters"] = [{"name": "set", "counters": {"c": {"value": str(rng.choice((1, 2)))}}}]
        else:
            spec["devices"] = [{**gpu_device(rng, 20 + i), "consumesCounters": [
                {"counterSet": "set", "counters": {"c": {"value": "1"}}}]} for i in range(2)]
    else:
        spec.update(driver=GPU, perDeviceNodeSelection=True, devices=[
            {**gpu_device(rng, 10 + i), "nodeName": rng.choice(NODES)} for i in range(rng.randrange(1, 3))])
    return {"metadata": {"name": name}, "spec": spec}


SLICES = (*(f"local-{n}" for n in NODES), *(f"region-{r}" for r in REGIONS), "net", "perdev", "parts-counters",
          "parts-devices")


def exactly(class_name: str, count: int = 1, **extra: Any) -> dict[str, Any]:
    return {"deviceClassName": class_name, "count": count, **extra}


#: Claim specs (devices), so that several claims share each signature.
SPECS: list[dict[str, Any]] = [
    {"requests": [{"name": "g", "exactly": exactly("gpu")}]},
    {"requests": [{"name": "g", "exactly": exactly("gpu", 2)}],
     "constraints": [{"matchAttribute": f"{GPU}/numa"}]},
    {"requests": [{"name": "g", "firstAvailable": [{"name": "two", **exactly("gpu", 2)},
                                                   {"name": "one", **exactly("gpu")}]}]},
    {"requests": [{"name": "n", "exactly": exactly("nic")}]},
    {"requests": [{"name": "a", "exactly": exactly("any", selectors=[
        {"cel": {"expression": f'device.driver == "{GPU}" && device.attributes["{GPU}"].model == "h100"'}}])}]},
    {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}]},
    {"requests": [{"name": "g", "exactly": exactly("gpu", tolerations=[
        {"key": "broken", "operator": "Exists", "effect": "NoSchedule"}])}]},
    {"requests": [{"name": "g", "exactly": exactly("gpu", adminAccess=True)}]},
    {"requests": [{"name": "g", "exactly": exactly("numa")}]},
    {"requests": [{"name": "s", "exactly": exactly("nic", selectors=[
        {"cel": {"expression": 'device.allowMultipleAllocations'}}], capacity={"requests": {"bandwidth": "1"}})}]},
    {"requests": [{"name": "g", "exactly": exactly("gpu")}, {"name": "n", "exactly": exactly("nic")}]},
]
WEIGHTS = [6, 2, 3, 3, 2, 1, 2, 1, 1, 2, 2]


class World:
    """The same operations on two clusters: ``clusters[0]`` keeps verdicts and schedules on the fast path (the
    vectorised form), ``clusters[1]`` decides every node afresh on the reference path."""

    def __init__(self) -> None:
        self.clusters = [ClusterState(), ClusterState()]
        self.clusters[1].dra_keep_verdicts = False
        self.schedulers = [create(cluster=self.clusters[0]), create(cluster=self.clusters[1], vectorized=False)]

    def apply(self, operation: str, *args: Any) -> None:
        for cluster in self.clusters:
            if operation == "node":
                cluster.add_node(Node(args[0]))
            elif operation == "class":
                cluster.add_device_class(DeviceClass.from_dict(args[0]))
            elif operation == "remove class":
                cluster.remove_device_class(args[0])
            elif operation == "slice":
                cluster.add_resource_slice(ResourceSlice.from_dict(args[0]))
            elif operation == "remove slice":
                cluster.remove_resource_slice(args[0])
            elif operation == "claim":
                cluster.add_resource_claim(ResourceClaim.from_dict(args[0]))
            elif operation == "namespace":
                cluster.put_namespace(args[0], args[1])
            elif operation == "delete pod":
                pod = cluster.pods.get(args[0])
                if pod is not None:
                    cluster.remove_pod(pod)
                    release_pod_claims(cluster, pod)
            else:
                raise AssertionError(operation)

    def claims(self, cluster: ClusterState) -> dict[tuple[str, str], Any]:
        return {c.key: (c.allocation, [r.uid for r in c.reserved_for]) for c in cluster.iter_resource_claims()}


def filtered(checker: Any, pod: Pod, cluster: ClusterState) -> Any:
    """Each node's reasons and solution: the devices, with their requests, share IDs and consumed capacity, and
    that their specs are this pod's claims' own."""
    out = []
    for n in NODES:
        try:
            reasons, solution = checker.filter(pod, cluster.node_infos[n])
        except Exception as e:  # noqa: BLE001 - the same exception on both is what is asserted
            out.append((n, "raised", type(e).__name__, str(e)))
            continue
        claims = checker.state(pod).to_allocate
        own = [{id(x) for r in c.spec.requests for x in (r.exactly, *r.first_available) if x is not None}
               for c in claims]
        out.append((n, [str(r) for r in reasons], solution is None or [
            [(r.request, r.device_id, r.share_id, dict(r.consumed or {}), id(r.spec) in own[i]) for r in devices]
            for i, devices in enumerate(solution)]))
    return out


def gathered(cluster: ClusterState) -> tuple[Any, ...]:
    """``GatherAllocatedState`` from scratch, over every claim as decisions see it (``allocated_state`` keeps it
    claim by claim)."""
    dedicated, shared, consumed = set(), set(), {}
    for claim in cluster.iter_resource_claims():
        for r in claim.results:
            if r.admin_access:
                continue
            if r.share_id:
                shared.add(r.device_id)
                if r.consumed_capacity:
                    total = consumed.setdefault(r.device_id, {})
                    for name, value in r.consumed_capacity.items():
                        total[name] = total.get(name, 0) + value
                continue
            dedicated.add(r.device_id)
    return dedicated, shared, consumed


def outcome(scheduler: Any, raw: dict[str, Any], explain: bool, devices: bool, probe: bool = False) -> Any:
    pod = Pod(raw)
    seen: list[Any] = []
    if devices:
        checker = dynamic_resources_of(scheduler.algorithms_for(pod).predicates)
        assert checker is not None
        for line in explain_devices(checker, pod, scheduler.cluster.node_infos, list(NODES)):
            seen.append((line.node, line.why, list(line.devices)))
        seen.append(filtered(checker, pod, scheduler.cluster))
    if probe:  # each node's verdict only (a pod that is never scheduled)
        checker = dynamic_resources_of(scheduler.algorithms_for(pod).predicates)
        assert checker is not None
        return seen, filtered(checker, pod, scheduler.cluster)
    try:
        placement = schedule_one(scheduler, pod, explain=explain)
    except Exception as e:  # noqa: BLE001 - the same exception on both is what is asserted
        return seen, ("raised", type(e).__name__, str(e))
    failed = {n: [str(r) for r in reasons] for n, reasons in (placement.failed or {}).items()}
    nodes = None
    if placement.explanation is not None:
        nodes = {n: (e.fit, {k: repr(v) for k, v in e.predicates.items()}, dict(e.priorities), e.total)
                 for n, e in placement.explanation.nodes.items()}
    return seen, (placement.node, placement.error, failed, placement.claims, nodes)


def run_sequence(seed: int, steps: int = 80) -> int:
    rng = random.Random(seed)
    world = World()
    world.apply("namespace", "ns", {ADMIN_NAMESPACE_LABEL: "true"})
    world.apply("namespace", "plain", {})
    labels = {n: rng.choice(REGIONS) for n in NODES}
    for n in NODES:
        world.apply("node", node_raw(n, labels[n]))
    for name, expressions in CLASSES.items():
        world.apply("class", class_raw(name, expressions[0]))
    generations = dict.fromkeys(SLICES, 1)
    counters = rng.random() < 0.3  # the pool with shared counters (neither kept verdicts nor the form apply)
    for name in SLICES:
        if rng.random() < 0.85 and (counters or not name.startswith("parts-")):
            world.apply("slice", slice_raw(rng, name, 1))
    shared: list[tuple[str, str]] = []  # claims pods may share
    scheduled: list[tuple[str, str]] = []
    decided = 0
    for step in range(steps):
        roll = rng.random()
        if roll < 0.5:
            namespace = "ns" if rng.random() < 0.85 else "plain"
            name = f"p{step}"
            entries = []
            for k in range(1 if rng.random() < 0.8 else 2):
                if shared and rng.random() < 0.3:
                    ns, claim_name = rng.choice(shared)
                    if ns != namespace:
                        continue
                else:
                    claim_name = f"{name}-c{k}"
                    spec = {"devices": rng.choices(SPECS, WEIGHTS)[0]}
                    world.apply("claim", {"metadata": {"name": claim_name, "namespace": namespace,
                                                       "uid": f"uid-{namespace}-{claim_name}"}, "spec": spec})
                    if rng.random() < 0.3:
                        shared.append((namespace, claim_name))
                entries.append({"name": f"e{k}", "resourceClaimName": claim_name})
            if not entries:
                continue
            raw = {"metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
                   "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"},
                                                                       "claims": [{"name": e["name"]} for e in entries]}}],
                            "resourceClaims": entries}}
            explain, devices, probe = rng.random() < 0.3, rng.random() < 0.3, rng.random() < 0.2
            got = [outcome(s, raw, explain, devices, probe) for s in world.schedulers]
            assert got[0] == got[1], f"seed {seed} step {step}: {raw}"
            assert world.claims(world.clusters[0]) == world.claims(world.clusters[1])
            state = world.clusters[0].allocated_state()
            assert (state.dedicated, state.shared, state.consumed) == gathered(world.clusters[0])
            decided += 1
            if not probe and got[0][1][0] not in (None, "raised"):
                scheduled.append((namespace, name))
        elif roll < 0.6:
            name = rng.choice(SLICES)
            if name.startswith("parts-"):
                if not counters:
                    continue
                generations["parts-counters"] += 1  # the pool's slices, newer generation: both at once
                generations["parts-devices"] = generations["parts-counters"]
                world.apply("slice", slice_raw(rng, "parts-counters", generations["parts-counters"]))
                world.apply("slice", slice_raw(rng, "parts-devices", generations["parts-devices"]))
            elif rng.random() < 0.2:
                world.apply("remove slice", name)
            else:
                generations[name] += 1
                world.apply("slice", slice_raw(rng, name, generations[name]))
        elif roll < 0.66:
            name = rng.choice(list(CLASSES))
            if rng.random() < 0.1:
                world.apply("remove class", name)
            else:
                world.apply("class", class_raw(name, rng.choice(CLASSES[name])))
        elif roll < 0.84 and scheduled:
            world.apply("delete pod", scheduled.pop(rng.randrange(len(scheduled))))
        elif roll < 0.92:
            n = rng.choice(NODES)
            labels[n] = rng.choice(REGIONS)
            world.apply("node", node_raw(n, labels[n], rng.choice(("", "x"))))
        else:  # someone else's allocation takes a device (or a share) on some node
            n = rng.choice(NODES)
            device = rng.choice(("gpu-0", "gpu-1", "gpu-2"))
            result = {"request": "g", "driver": GPU, "pool": f"local-{n}", "device": device}
            world.apply("claim", {"metadata": {"name": f"ext-{step}", "namespace": "ns", "uid": f"ext-{step}"},
                                  "spec": {"devices": SPECS[0]},
                                  "status": {"allocation": {"devices": {"results": [result]}}}})
    return decided


@pytest.mark.parametrize("seed", range(60))
def test_kept_verdicts_decide_as_deciding_every_node_afresh(seed):
    assert run_sequence(seed) > 10


def test_a_later_pod_of_the_same_signature_reuses_the_verdicts_relabelled():
    """The kept verdicts are used (the second pod runs the allocator only on the node the first one changed), and
    the devices a kept verdict gives are the later pod's claims' own."""
    world = World()
    world.apply("namespace", "ns", {})
    for n in NODES:
        world.apply("node", node_raw(n, "r1"))
    world.apply("class", class_raw("gpu", CLASSES["gpu"][0]))
    rng = random.Random(1)
    for n in NODES:
        world.apply("slice", {"metadata": {"name": f"local-{n}"}, "spec": {
            "driver": GPU, "nodeName": n, "pool": {"name": f"local-{n}", "generation": 1, "resourceSliceCount": 1},
            "devices": [gpu_device(rng, i) | {"taints": []} for i in range(2)]}})
    cluster, scheduler = world.clusters[0], world.schedulers[0]
    calls: list[str] = []
    placed = []
    for i in range(3):
        world.apply("claim", {"metadata": {"name": f"c{i}", "namespace": "ns", "uid": f"uid-c{i}"},
                              "spec": {"devices": SPECS[0]}})
        raw = {"metadata": {"name": f"p{i}", "namespace": "ns", "uid": f"uid-p{i}"},
               "spec": {"containers": [{"name": "c"}], "resourceClaims": [{"name": "e", "resourceClaimName": f"c{i}"}]}}
        pod = Pod(raw)
        checker = dynamic_resources_of(scheduler.algorithms_for(pod).predicates)
        allocator_allocate = type(checker.state(pod).allocator).allocate

        def counting(self: Any, node_name: str, *args: Any, _real: Any = allocator_allocate) -> Any:
            calls.append(node_name)
            return _real(self, node_name, *args)

        checker.state(pod).allocator.allocate = counting.__get__(checker.state(pod).allocator)
        placement = schedule_one(scheduler, pod)
        placed.append((placement.node, placement.claims))
        assert placement.claims[0]["claim"] == f"ns/c{i}"
        assert cluster.get_resource_claim("ns", f"c{i}").results[0].request == "g"
    assert calls[:len(NODES)] == list(NODES)  # the first pod: every node
    assert calls[len(NODES):] == [placed[0][0], placed[1][0]]  # then only the node the previous pod changed


@pytest.mark.parametrize("seed", range(100, 160))
def test_dropping_kept_verdicts_when_full_changes_nothing(seed, monkeypatch):
    """The bounds on what is kept (the pool log, signatures per node, kept rows, selectors), made tiny."""
    import policy_scheduler.cache.cluster as cluster_module
    import policy_scheduler.dra.verdicts as verdicts_module
    import policy_scheduler.fastpath.dynamic_resources as form_module

    monkeypatch.setattr(cluster_module, "DRA_POOL_LOG_LIMIT", 3)
    monkeypatch.setattr(verdicts_module, "MAX_SIGNATURES", 2)
    monkeypatch.setattr(form_module, "MAX_SIGNATURES", 2)
    monkeypatch.setattr(form_module, "MAX_SELECTORS", 2)
    assert run_sequence(seed) > 10

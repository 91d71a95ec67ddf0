"""Dynamic Resource Allocation side by side with upstream's kube-scheduler 1.36, on a real 1.36 API server with the
1.36 kube-controller-manager's resourceclaim controller (which makes each pod's claims from its templates, and
frees a claim whose pod is gone).

Both schedulers, the controller manager and the API server run for the whole module; each test is a *case* of its
own (``c<N>``): its nodes are labelled ``pool: <pool>`` and ``dra-case: <case>``, its pods select both, its
drivers are ``<case>-<x>.example.com``, so that neither the other scheduler nor an earlier case's devices decide
anything. Every namespaced object is named ``<pool>-<case>-...``; the cluster-scoped DeviceClasses (named
``<case>-...``) are the same object for both schedulers.

Each case builds the same objects for each pool, then waits for upstream's verdict first and ours second, and
asserts both equal: the node (without the pool's prefix), each claim's ``status.allocation.devices.results``
(request, driver, pool, device, and ``adminAccess`` where set) and ``status.reservedFor`` (resource and pod), or
pending with upstream's DRA reason, as many nodes giving it (the ``FailedScheduling`` event).
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pytest

from benchmarks.harness.controllers import ControllerManager
from benchmarks.harness.daemon import Cluster, LoggedProcess, pod
from benchmarks.harness.envtest import EnvtestServer
from policy_scheduler.kube.client.rest import ApiError, RestClient

from . import side_by_side
from .side_by_side import POOLS, Pool, expect, expect_bound

RESOURCE = "/apis/resource.k8s.io/v1"
NS = "default"
ADMIN_LABEL = "resource.kubernetes.io/admin-access"
#: upstream's back-off may hold a pod a few seconds before the event that frees it is seen
REQUEUE_TIMEOUT = 45.0
#: Each kind comes on its own watch: nothing orders a claim's event before the event of a pod created after it. A
#: case whose pod must find a claim's change already seen (by both schedulers: the reference's informers cannot be
#: asked) waits this long between the two. It narrows the race; it cannot close it.
INFORMERS_SETTLE = 1.0

_cases = itertools.count(1)


@pytest.fixture(scope="module")
def server(envtest_pool) -> Iterator[EnvtestServer]:
    with envtest_pool.leased("1.36") as s:
        yield s


@pytest.fixture(scope="module")
def procs(server, tmp_path_factory) -> Iterator[dict[str, LoggedProcess]]:
    """Upstream's resourceclaim controller, upstream's kube-scheduler (``ref``) and ours (``ours``), for the module."""
    log_dir = tmp_path_factory.mktemp("dra")
    with side_by_side.schedulers(server, log_dir, ControllerManager(server, log_dir, ("resourceclaim-controller",))) as p:
        yield p


@pytest.fixture
def case() -> str:
    name = f"c{next(_cases)}"
    print(f"case {name}")
    return name


@pytest.fixture
def pools(server, case) -> dict[str, DraPool]:
    cluster = Cluster(server.rest())
    return {name: DraPool(cluster, name, case) for name in POOLS}


def device(name: str, driver: str, *, capacity: dict[str, str] | None = None, **attributes: Any) -> dict[str, Any]:
    """A device of a ResourceSlice: ``attributes`` as ``{"int": ...}``, ``{"bool": ...}`` or ``{"string": ...}``
    by their Python type, all in the driver's domain."""
    def typed(value: Any) -> dict[str, Any]:
        if isinstance(value, bool):
            return {"bool": value}
        if isinstance(value, int):
            return {"int": value}
        return {"string": value}
    out: dict[str, Any] = {"name": name}
    if attributes:
        out["attributes"] = {f"{driver}/{k}": typed(v) for k, v in attributes.items()}
    if capacity:
        out["capacity"] = {f"{driver}/{k}": {"value": v} for k, v in capacity.items()}
    return out


def exactly(device_class: str, count: int | None = 1, *, selectors: tuple[str, ...] = (), mode: str = "ExactCount",
            admin: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"deviceClassName": device_class, "allocationMode": mode}
    if mode == "ExactCount":
        out["count"] = count
    if selectors:
        out["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    if admin:
        out["adminAccess"] = True
    return out


def create(rest: RestClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    return rest.post(path, body)


def add_device_class(cluster: Cluster, case: str, suffix: str, driver: str) -> str:
    """The DeviceClass ``<case>-<suffix>`` selecting the devices of ``driver`` (shared by both pools)."""
    name = f"{case}-{suffix}"
    create(cluster.rest, f"{RESOURCE}/deviceclasses", {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}})
    return name


#: A FailedScheduling message's count of the nodes the scheduler knew.
NODES_KNOWN = re.compile(r"^0/(\d+) nodes are available")


class DraPool(Pool):
    """A pool's share of one case: objects named ``<pool>-<case>-...``, nodes labelled with the case too."""

    def __init__(self, cluster: Cluster, name: str, case: str) -> None:
        super().__init__(cluster, name)
        self.case = case
        self.nodes_at_pod: dict[str, int] = {}  # pod -> the nodes the API server had when it was created

    def n(self, suffix: str) -> str:
        return f"{self.name}-{self.case}-{suffix}"

    def strip(self, text: str) -> str:
        return text.replace(f"{self.name}-{self.case}-", "")

    def driver(self, suffix: str = "gpu") -> str:
        return f"{self.case}-{suffix}.example.com"

    def add_dra_node(self, suffix: str, devices: list[dict[str, Any]] | None = None, driver: str | None = None) -> str:
        """The node ``<pool>-<case>-<suffix>``; with ``devices``, the ResourceSlice of ``driver`` that publishes
        them on it (its pool named after the node)."""
        name = self.add_node(suffix, labels={"dra-case": self.case})
        if devices is not None:
            self.add_slice(name, devices, driver or self.driver())
        return name

    def add_slice(self, node_name: str, devices: list[dict[str, Any]], driver: str) -> None:
        create(self.cluster.rest, f"{RESOURCE}/resourceslices", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-{driver.split('.')[0]}"},
            "spec": {"driver": driver, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1}, "devices": devices}})

    def add_claim(self, suffix: str, requests: dict[str, dict[str, Any]], namespace: str = NS,
                  constraints: list[dict[str, Any]] | None = None, template: bool = False,
                  first_available: dict[str, list[tuple[str, dict[str, Any]]]] | None = None) -> str:
        """The ResourceClaim (or, with ``template``, the ResourceClaimTemplate) ``<pool>-<case>-<suffix>``:
        ``requests`` by name, each an :func:`exactly`; ``first_available``: requests made of subrequests."""
        reqs: list[dict[str, Any]] = [{"name": r, "exactly": e} for r, e in requests.items()]
        for r, subs in (first_available or {}).items():
            reqs.append({"name": r, "firstAvailable": [{"name": s, **e} for s, e in subs]})
        devices: dict[str, Any] = {"requests": reqs}
        if constraints:
            devices["constraints"] = constraints
        spec: dict[str, Any] = {"devices": devices}
        kind, plural = ("ResourceClaimTemplate", "resourceclaimtemplates") if template else ("ResourceClaim",
                                                                                             "resourceclaims")
        create(self.cluster.rest, f"{RESOURCE}/namespaces/{namespace}/{plural}", {
            "apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": {"name": self.n(suffix)},
            "spec": {"spec": spec} if template else spec})
        return self.n(suffix)

    def add_dra_pod(self, suffix: str, claims: dict[str, tuple[str, str]], namespace: str = NS) -> dict[str, Any]:
        """A pod of the pool's scheduler on the case's nodes whose ``spec.resourceClaims`` are ``claims``: name ->
        (``template`` or ``claim``, the object's name); its container uses them all."""
        entries = [{"name": n, ("resourceClaimTemplateName" if how == "template" else "resourceClaimName"): obj}
                   for n, (how, obj) in claims.items()]
        body = pod(self.n(suffix), cpu="100m", memory="10Mi", scheduler=self.scheduler,
                   nodeSelector={"pool": self.name, "dra-case": self.case}, resourceClaims=entries)
        body["spec"]["containers"][0]["resources"]["claims"] = [{"name": n} for n in claims]
        self.nodes_at_pod[self.n(suffix)] = len(self.cluster.rest.get("/api/v1/nodes")["items"])
        return self.cluster.add_pod(body, namespace)

    # -- reading the outcome ---------------------------------------------------------------------------------
    def claim(self, name: str, namespace: str = NS) -> dict[str, Any] | None:
        try:
            return self.cluster.rest.get(f"{RESOURCE}/namespaces/{namespace}/resourceclaims/{name}")
        except ApiError as e:
            if e.not_found:
                return None
            raise

    def claim_names(self, suffix: str, namespace: str = NS) -> dict[str, str]:
        """The pod's claims: its claim name -> the ResourceClaim's name (a template's generated claim from the pod's
        ``status.resourceClaimStatuses``)."""
        raw = self.get(suffix, namespace) or {}
        generated = {s["name"]: s.get("resourceClaimName") or ""
                     for s in (raw.get("status") or {}).get("resourceClaimStatuses") or ()}
        out = {}
        for entry in raw["spec"].get("resourceClaims") or ():
            out[entry["name"]] = entry.get("resourceClaimName") or generated.get(entry["name"], "")
        return out

    def allocation(self, claim_name: str, namespace: str = NS) -> dict[str, Any]:
        """What a scheduler wrote into the claim, without the pool's prefix: the results and ``reservedFor``."""
        claim = self.claim(claim_name, namespace) or {}
        status = claim.get("status") or {}
        results = [{k: self.strip(v) if isinstance(v, str) else v for k, v in r.items()}
                   for r in ((status.get("allocation") or {}).get("devices") or {}).get("results") or ()]
        reserved = sorted((r.get("resource"), self.strip(r.get("name") or "")) for r in status.get("reservedFor") or ())
        return {"results": results, "reservedFor": reserved,
                "finalizer": "resource.kubernetes.io/delete-protection" in (claim.get("metadata") or {}).get(
                    "finalizers", ())}

    def bound_outcome(self, suffix: str, process: LoggedProcess, namespace: str = NS,
                      timeout: float = side_by_side.VERDICT_TIMEOUT, clean: bool = True) -> dict[str, Any]:
        """The pod once bound: its node and each of its claims' allocation (prefixes stripped). ``clean``: it was
        bound at its first attempt, without a FailedScheduling event."""
        where = expect_bound(self, suffix, process, namespace, timeout)
        if clean:
            # An attempt made before the scheduler's node informer had every node the API server had when the pod was
            # created (its message counts fewer) is not the outcome: a watch of nodes may lag the watch of pods, in
            # upstream's scheduler as in ours (seen under load in both). The next attempt is.
            known = self.nodes_at_pod.get(self.n(suffix), 0)
            failures = [m for m in self.failures(suffix, namespace)
                        if not ((count := NODES_KNOWN.match(m)) and int(count.group(1)) < known)]
            assert failures == [], f"{self.n(suffix)} failed before it was bound"
        claims = {c: self.allocation(name, namespace) for c, name in self.claim_names(suffix, namespace).items()}
        return {"node": self.strip(where), "claims": claims}

    def pending_outcome(self, suffix: str, process: LoggedProcess, reason: str, namespace: str = NS,
                        timeout: float = side_by_side.VERDICT_TIMEOUT, count: bool = True) -> dict[str, Any]:
        """The pod tried and left pending with ``reason`` (prefixes stripped) in its latest FailedScheduling
        event: how many nodes gave it (None: a pod-level reason, or not ``count``) and its claims unallocated."""
        reason = self.strip(reason)

        def latest() -> str | None:
            messages = [self.strip(m) for m in self.failures(suffix, namespace)]
            return next((m for m in reversed(messages) if reason in m), None)

        message = expect(latest, f"a FailedScheduling event about {namespace}/{self.n(suffix)} saying {reason!r}",
                         process, timeout)
        assert self.placement(suffix, namespace) == "", message
        print(f"[{self.name}] {namespace}/{self.n(suffix)} pending: {message}")
        nodes = re.search(rf"(\d+) {re.escape(reason)}", message)
        claims = {c: self.allocation(name, namespace)["results"] for c, name in
                  self.claim_names(suffix, namespace).items() if name}
        # The PodScheduled condition, written apart from the event: its reason (Unschedulable, SchedulerError).
        condition = expect(partial(self.condition, suffix, namespace), f"{self.n(suffix)}'s PodScheduled=False",
                           process, timeout)
        return {"reason": reason, "nodes": int(nodes.group(1)) if nodes and count else None, "claims": claims,
                "condition": condition}

    def condition(self, suffix: str, namespace: str = NS) -> str | None:
        """The reason of the pod's ``PodScheduled=False`` condition, once a scheduler wrote it."""
        raw = self.get(suffix, namespace) or {}
        for c in (raw.get("status") or {}).get("conditions") or ():
            if c.get("type") == "PodScheduled" and c.get("status") == "False":
                return c.get("reason")
        return None


def side_by_side_outcomes(pools: dict[str, DraPool], procs: dict[str, LoggedProcess],
                          verdict: Callable[[DraPool, LoggedProcess], Any]) -> Any:
    """``verdict`` of upstream's pool first, then of ours; both must be equal. Upstream's outcome is returned."""
    ref = verdict(pools["ref"], procs["ref"])
    ours = verdict(pools["ours"], procs["ours"])
    assert ours == ref, f"upstream: {ref}\nours:     {ours}"
    return ref




# -- the cases ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["template", "claim"])
def test_one_device_on_the_node_whose_slice_holds_it(pools, procs, case, how):
    """The README's smoke case: one device of class gpu, through a template (the controller makes the claim) or
    a pre-existing claim named by the pod; only n2's slice has devices."""
    cls = add_device_class(pools["ref"].cluster, case, "gpu", pools["ref"].driver())
    for p in pools.values():
        p.add_dra_node("n1")
        p.add_dra_node("n2", [device("gpu-0", p.driver(), model="a100"), device("gpu-1", p.driver(), model="a100")])
        p.add_claim("c", {"gpu": exactly(cls)}, template=how == "template")
        p.add_dra_pod("p", {"gpu": (how, p.n("c"))})
    out = side_by_side_outcomes(pools, procs, lambda p, proc: p.bound_outcome("p", proc))
    assert out["node"] == "n2" and out["claims"]["gpu"]["results"] == [
        {"request": "gpu", "driver": pools["ref"].driver(), "pool": "n2", "device": "gpu-0"}]
    assert out["claims"]["gpu"]["reservedFor"] == [("pods", "p")] and out["claims"]["gpu"]["finalizer"]


def test_three_devices_where_two_exist_cannot_allocate_all_claims(pools, procs, case):
    """Pending on both sides, nothing allocated. Upstream counts a node under its first failing filter only, so
    the reason on the case's 2 nodes (the server's other nodes fail its NodeAffinity first); 1.9's FitError runs
    every predicate and counts every reason, so ours counts it on every node of the server (docs/deviations.md
    #105, as #98 for NodeDeclaredFeatures)."""
    cls = add_device_class(pools["ref"].cluster, case, "gpu", pools["ref"].driver())
    for p in pools.values():
        p.add_dra_node("n1", [device("gpu-0", p.driver()), device("gpu-1", p.driver())])
        p.add_dra_node("n2")
        p.add_claim("claim", {"gpu": exactly(cls, 3)})
        p.add_dra_pod("p", {"gpu": ("claim", p.n("claim"))})
    ref = pools["ref"].pending_outcome("p", procs["ref"], "cannot allocate all claims")
    ours = pools["ours"].pending_outcome("p", procs["ours"], "cannot allocate all claims")
    assert ref["nodes"] == 2 and ours["nodes"] == len(pools["ours"].cluster.rest.get("/api/v1/nodes")["items"])
    assert ref["claims"] == ours["claims"] == {"gpu": []} and ref["condition"] == ours["condition"]


def test_allocation_mode_all_takes_every_matching_device_of_the_node(pools, procs, case):
    cls = add_device_class(pools["ref"].cluster, case, "gpu", pools["ref"].driver())
    for p in pools.values():
        p.add_dra_node("n1")
        p.add_dra_node("n2", [device(f"gpu-{i}", p.driver()) for i in range(3)])
        p.add_claim("t", {"gpu": exactly(cls, None, mode="All")}, template=True)
        p.add_dra_pod("p", {"gpu": ("template", p.n("t"))})
    out = side_by_side_outcomes(pools, procs, lambda p, proc: p.bound_outcome("p", proc))
    assert out["node"] == "n2" and [r["device"] for r in out["claims"]["gpu"]["results"]] == ["gpu-0", "gpu-1", "gpu-2"]


#: (selector with DRIVER standing for the case's driver, the node and device it picks)
SELECTORS = {
    "string-attribute": ('device.attributes["DRIVER"].model == "h100"', "n2", "gpu-1"),
    "int-attribute": ('device.attributes["DRIVER"].index >= 3', "n2", "gpu-1"),
    "capacity-quantity": ('device.capacity["DRIVER"].memory.compareTo(quantity("64Gi")) >= 0', "n2", "gpu-1"),
}


@pytest.mark.parametrize("selector", SELECTORS, ids=list(SELECTORS))
def test_a_cel_selector_on_an_attribute_picks_the_device(pools, procs, case, selector):
    expression, node_name, device_name = SELECTORS[selector]
    cls = add_device_class(pools["ref"].cluster, case, "gpu", pools["ref"].driver())
    for p in pools.values():
        d = p.driver()
        p.add_dra_node("n1", [device("gpu-0", d, model="a100", index=0, capacity={"memory": "40Gi"}),
                              device("gpu-1", d, model="a100", index=1, capacity={"memory": "40Gi"})])
        p.add_dra_node("n2", [device("gpu-0", d, model="a100", index=2, capacity={"memory": "40Gi"}),
                              device("gpu-1", d, model="h100", index=3, capacity={"memory": "80Gi"})])
        p.add_claim("t", {"gpu": exactly(cls, selectors=(expression.replace("DRIVER", d),))}, template=True)
        p.add_dra_pod("p", {"gpu": ("template", p.n("t"))})
    out = side_by_side_outcomes(pools, procs, lambda p, proc: p.bound_outcome("p", proc))
    assert (out["node"], out["claims"]["gpu"]["results"][0]["device"]) == (node_name, device_name)


def test_match_attribute_keeps_both_devices_on_one_numa_node(pools, procs, case):
    """Two requests of one device each, constrained to the same ``numa``: only n2 has two such devices."""
    cls = add_device_class(pools["ref"].cluster, case, "gpu", pools["ref"].driver())
    for p in pools.values():
        d = p.driver()
        p.add_dra_node("n1", [device("gpu-0", d, numa=0), device("gpu-1", d, numa=1)])
        p.add_dra_node("n2", [device("gpu-0", d, numa=0), device("gpu-1", d, numa=1), device("gpu-2", d, numa=1)])
        p.add_claim("t", {"a": exactly(cls), "b": exactly(cls)}, template=True,
                    constraints=[{"matchAttribute": f"{d}/numa"}])
        p.add_dra_pod("p", {"gpu": ("template", p.n("t"))})
    out = side_by_side_outcomes(pools, procs, lambda p, proc: p.bound_outcome("p", proc))
    assert out["node"] == "n2"
    assert [(r["request"], r["device"]) for r in out["claims"]["gpu"]["results"]] == [("a", "gpu-1"), ("b", "gpu-2")]


def test_first_available_names_the_subrequest_that_fits(pools, procs, case):
    """``firstAvailable``: two h100s are not there, one a100 is: the result names ``gpu/small``."""
    cls = add_device_class(pools["ref"].cluster, case, "gpu", pools["ref"].driver())
    for p in pools.values():
        d = p.driver()
        p.add_dra_node("n1", [device("gpu-0", d, model="h100"), device("gpu-1", d, model="a100")])
        p.add_claim("t", {}, template=True, first_available={"gpu": [
            ("big", exactly(cls, 2, selectors=(f'device.attributes["{d}"].model == "h100"',))),
            ("small", exactly(cls, 1, selectors=(f'device.attributes["{d}"].model == "a100"',)))]})
        p.add_dra_pod("p", {"gpu": ("template", p.n("t"))})
    out = side_by_side_outcomes(pools, procs, lambda p, proc: p.bound_outcome("p", proc))
    assert [(r["request"], r["device"]) for r in out["claims"]["gpu"]["results"]] == [("gpu/small", "gpu-1")]


@pytest.mark.parametrize("together", [False, True], ids=["one-after-the-other", "together"])
def test_a_claim_by_name_shared_by_two_pods_puts_both_on_its_node(pools, procs, case, together):
    """The second pod comes after the first is bound, or with it (then it may be tried while the first's allocation
    is being written: 'resource claim ... is in the process of being allocated', and moved by the claim's update)."""
    cls = add_device_class(pools["ref"].cluster, case, "gpu", pools["ref"].driver())
    for p in pools.values():
        p.add_dra_node("n1", [device("gpu-0", p.driver())])
        p.add_dra_node("n2", [device("gpu-0", p.driver())])
        p.add_claim("shared", {"gpu": exactly(cls)})
        p.add_dra_pod("p1", {"gpu": ("claim", p.n("shared"))})
        if together:
            p.add_dra_pod("p2", {"gpu": ("claim", p.n("shared"))})

    def both(p: DraPool, proc: LoggedProcess) -> dict[str, Any]:
        first = p.bound_outcome("p1", proc, clean=not together)
        if not together:
            p.add_dra_pod("p2", {"gpu": ("claim", p.n("shared"))})
        second = p.bound_outcome("p2", proc, timeout=REQUEUE_TIMEOUT, clean=not together)
        assert second["node"] == first["node"], (first, second)
        result = second["claims"]["gpu"]
        assert [r["pool"] for r in result["results"]] == [first["node"]]
        return {"reservedFor": result["reservedFor"], "devices": [r["device"] for r in result["results"]]}

    out = side_by_side_outcomes(pools, procs, both)
    assert out == {"reservedFor": [("pods", "p1"), ("pods", "p2")], "devices": ["gpu-0"]}


def test_a_missing_device_class_leaves_the_pod_pending(pools, procs, case):
    for p in pools.values():
        p.add_dra_node("n1", [device("gpu-0", p.driver())])
        p.add_claim("claim", {"gpu": exactly(f"{case}-absent")})
        p.add_dra_pod("p", {"gpu": ("claim", p.n("claim"))})
    reason = f"request gpu: device class {case}-absent does not exist"
    side_by_side_outcomes(pools, procs, lambda p, proc: p.pending_outcome("p", proc, reason))
    # The class appears: the pod moves and is bound (upstream's DeviceClass/Add event).
    add_device_class(pools["ref"].cluster, case, "absent", pools["ref"].driver())
    side_by_side_outcomes(pools, procs, lambda p, proc: p.bound_outcome("p", proc, timeout=REQUEUE_TIMEOUT,
                                                                        clean=False))


def test_a_pod_whose_template_claim_is_not_created_yet_waits_for_it(pools, procs, case):
    """The template does not exist: the controller cannot make the claim, the pod waits (upstream's PreEnqueue:
    never tried, no event). The template appears: the claim is made and the pod is bound."""
    cls = add_device_class(pools["ref"].cluster, case, "gpu", pools["ref"].driver())
    for p in pools.values():
        p.add_dra_node("n1", [device("gpu-0", p.driver())])
        p.add_dra_pod("p", {"gpu": ("template", p.n("t"))})
    time.sleep(3)
    for p in pools.values():
        assert p.placement("p") == "" and p.claim_names("p") == {"gpu": ""}
        print(f"[{p.name}] events while waiting for the claim: {p.failures('p')}")
    waiting = {name: ([p.strip(m) for m in p.failures("p")], p.condition("p")) for name, p in pools.items()}
    assert waiting["ours"] == waiting["ref"]
    for p in pools.values():
        p.add_claim("t", {"gpu": exactly(cls)}, template=True)
    out = side_by_side_outcomes(pools, procs, lambda p, proc: p.bound_outcome("p", proc, timeout=REQUEUE_TIMEOUT))
    assert out["claims"]["gpu"]["results"][0]["device"] == "gpu-0"


def _admin_namespace(cluster: Cluster, name: str, labelled: bool) -> None:
    cluster.rest.post("/api/v1/namespaces", {"metadata": {"name": name, "labels": {ADMIN_LABEL: "true"}}})
    if not labelled:
        cluster.rest.patch(f"/api/v1/namespaces/{name}", {"metadata": {"labels": {ADMIN_LABEL: None}}},
                           content_type="application/merge-patch+json")


@pytest.mark.parametrize("labelled", [
    pytest.param(True, id="labelled"),
    pytest.param(False, id="unlabelled")])
def test_admin_access_is_written_only_in_a_labelled_namespace(pools, procs, case, labelled):
    """``adminAccess`` claims (made while the namespace had the label): allocated even though the device is taken,
    and written, where the namespace still has the label; where it lost it, the API server refuses the status
    update (PreBind) and the pod stays pending with that error."""
    cls = add_device_class(pools["ref"].cluster, case, "gpu", pools["ref"].driver())
    for p in pools.values():
        namespace = p.n("ns")
        p.cluster.rest.post("/api/v1/namespaces", {"metadata": {"name": namespace, "labels": {ADMIN_LABEL: "true"}}})
        p.add_dra_node("n1", [device("gpu-0", p.driver())])
        p.add_claim("taken", {"gpu": exactly(cls)})
        p.add_dra_pod("user", {"gpu": ("claim", p.n("taken"))})
        p.add_claim("admin", {"gpu": exactly(cls, admin=True)}, namespace=namespace)
    side_by_side_outcomes(pools, procs, lambda p, proc: p.bound_outcome("user", proc))  # the device is taken
    for p in pools.values():
        if not labelled:
            p.cluster.rest.patch(f"/api/v1/namespaces/{p.n('ns')}", {"metadata": {"labels": {ADMIN_LABEL: None}}},
                                 content_type="application/merge-patch+json")
        p.add_dra_pod("p", {"gpu": ("claim", p.n("admin"))}, namespace=p.n("ns"))
    if labelled:
        out = side_by_side_outcomes(pools, procs, lambda p, proc: p.bound_outcome("p", proc, namespace=p.n("ns")))
        assert out["claims"]["gpu"]["results"] == [{"request": "gpu", "driver": pools["ref"].driver(), "pool": "n1",
                                                    "device": "gpu-0", "adminAccess": True}]
    else:
        # PreBind's status write, refused by the API server (the allocation itself is made).
        reason = ('running PreBind plugin "DynamicResources": add allocation and reservation to claim ns/admin: '
                  'ResourceClaim.resource.k8s.io "admin" is invalid: status.allocation.devices.results[0].adminAccess: '
                  "Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label "
                  "on the containing namespace")
        out = side_by_side_outcomes(pools, procs, lambda p, proc: p.pending_outcome("p", proc, reason,
                                                                                    namespace=p.n("ns")))
        assert out["claims"] == {"gpu": []}


def test_a_claim_being_deleted_is_not_used(pools, procs, case):
    cls = add_device_class(pools["ref"].cluster, case, "gpu", pools["ref"].driver())
    for p in pools.values():
        p.add_dra_node("n1", [device("gpu-0", p.driver())])
        name = p.add_claim("claim", {"gpu": exactly(cls)})
        path = f"{RESOURCE}/namespaces/{NS}/resourceclaims/{name}"
        p.cluster.rest.patch(path, {"metadata": {"finalizers": ["example.com/keep"]}},
                             content_type="application/merge-patch+json")
        p.cluster.rest.delete(path)
    # Upstream holds the pod (PreEnqueue) where the deletion was seen before the pod, and tries it (PreFilter's
    # "is being deleted") where the pod came first: one suite run in 10 had the reference do the latter.
    time.sleep(INFORMERS_SETTLE)
    for p in pools.values():
        p.add_dra_pod("p", {"gpu": ("claim", p.n("claim"))})
    time.sleep(3)
    waiting = {}
    for name, p in pools.items():
        assert p.placement("p") == "", name
        assert p.allocation(p.n("claim"))["results"] == [], name
        waiting[name] = ([p.strip(m) for m in p.failures("p")], p.condition("p"))
    print(f"events while the claim is being deleted: {waiting}")
    assert waiting["ours"] == waiting["ref"]
    for p in pools.values():  # let it go
        p.cluster.rest.patch(f"{RESOURCE}/namespaces/{NS}/resourceclaims/{p.n('claim')}",
                             {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")


def test_devices_freed_when_the_pod_and_its_claim_go_let_a_waiting_pod_in(pools, procs, case):
    cls = add_device_class(pools["ref"].cluster, case, "gpu", pools["ref"].driver())
    for p in pools.values():
        p.add_dra_node("n1", [device("gpu-0", p.driver())])
        p.add_claim("t", {"gpu": exactly(cls)}, template=True)
        p.add_dra_pod("first", {"gpu": ("template", p.n("t"))})
    side_by_side_outcomes(pools, procs, lambda p, proc: p.bound_outcome("first", proc))
    for p in pools.values():
        p.add_dra_pod("second", {"gpu": ("template", p.n("t"))})
    # (how many nodes give the reason: test_three_devices_where_two_exist_cannot_allocate_all_claims)
    side_by_side_outcomes(pools, procs, lambda p, proc: p.pending_outcome("second", proc, "cannot allocate all claims",
                                                                          count=False))
    for p in pools.values():
        p.cluster.rest.delete(f"/api/v1/namespaces/{NS}/pods/{p.n('first')}", {"gracePeriodSeconds": 0})
    out = side_by_side_outcomes(pools, procs, lambda p, proc: p.bound_outcome("second", proc, timeout=REQUEUE_TIMEOUT,
                                                                              clean=False))
    assert out["claims"]["gpu"]["results"][0]["device"] == "gpu-0"
    assert out["claims"]["gpu"]["reservedFor"] == [("pods", "second")]



def test_a_claim_allocated_on_a_node_the_pod_cannot_use_is_deallocated_and_allocated_again(pools, procs, case):
    """DynamicResources' PostFilter: the claim is allocated on n1 (written directly, with the scheduler's finalizer,
    reserved for nobody: the resourceclaim controller leaves such a claim allocated), n1 is cordoned, n2 has a free
    device. No node fits (n1 unschedulable, n2 ``resourceclaim not available on the node``); PostFilter clears the
    claim's allocation, whose update moves the pod, and the next attempt allocates n2's device and binds it there."""
    cls = add_device_class(pools["ref"].cluster, case, "gpu", pools["ref"].driver())
    for p in pools.values():
        n1 = p.add_dra_node("n1", [device("gpu-0", p.driver())])
        p.add_dra_node("n2", [device("gpu-0", p.driver())])
        p.cluster.rest.patch(f"/api/v1/nodes/{n1}", {"spec": {"unschedulable": True}},
                             content_type="application/merge-patch+json")
        name = p.add_claim("c", {"gpu": exactly(cls)})
        path = f"{RESOURCE}/namespaces/{NS}/resourceclaims/{name}"
        claim = p.cluster.rest.patch(path, {"metadata": {"finalizers": ["resource.kubernetes.io/delete-protection"]}},
                                     content_type="application/merge-patch+json")
        claim["status"] = {"allocation": {
            "devices": {"results": [{"request": "gpu", "driver": p.driver(), "pool": n1, "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [n1]}]}]}}}
        written = p.cluster.rest.put(f"{path}/status", claim)
        assert written["status"]["allocation"]["nodeSelector"] and not written["status"].get("reservedFor")
    time.sleep(INFORMERS_SETTLE)  # a pod seen before the allocation would get n2's device at once
    for p in pools.values():
        p.add_dra_pod("p", {"gpu": ("claim", p.n("c"))})
    out = side_by_side_outcomes(pools, procs, lambda p, proc: p.bound_outcome("p", proc, timeout=REQUEUE_TIMEOUT,
                                                                              clean=False))
    assert out["node"] == "n2" and out["claims"]["gpu"]["results"] == [
        {"request": "gpu", "driver": pools["ref"].driver(), "pool": "n2", "device": "gpu-0"}]
    assert out["claims"]["gpu"]["reservedFor"] == [("pods", "p")] and out["claims"]["gpu"]["finalizer"]
    # Each first failed with n2's reason; upstream's event names its PostFilter's deallocation.
    for name, p in pools.items():
        failures = [p.strip(m) for m in p.failures("p")]
        print(f"[{name}] failures before the bind: {failures}")
        assert any("resourceclaim not available on the node" in m for m in failures), (name, failures)
    assert any("deallocation of ResourceClaim completed" in m for m in pools["ref"].failures("p"))

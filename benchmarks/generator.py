"""The deterministic synthetic cluster of the throughput benchmark (``shared/benchmarks/README.md``).

``generate(nodes, pods, seed)`` returns the JSON layout the upstream Go harness writes
(``{policy, provider, hardPodAffinitySymmetricWeight, nodes, pods, services, replicationControllers,
replicaSets, statefulSets, pvs, pvcs, pending}``), with every object shaped as Go's ``encoding/json``
prints the 1.9 API structs: ``creationTimestamp: null``, empty ``status`` structs, a node's zero
``daemonEndpoints`` and ``nodeInfo``, ``null`` for empty top-level lists. Keys are emitted in Go's
order (struct field order; map keys sorted), so ``json.dumps(..., separators=(",", ":"))`` reproduces
the Go bytes. ``to_objects(data)`` turns the layout into Kubernetes objects for ``load_objects``.

    python benchmarks/generator.py --nodes 4 --pods 12 --seed 7 [-o out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

MASK64 = (1 << 64) - 1

HOSTNAME_KEY = "kubernetes.io/hostname"
ZONE_KEY = "failure-domain.beta.kubernetes.io/zone"
REGION_KEY = "failure-domain.beta.kubernetes.io/region"

NODE_TYPES = ("small", "medium", "large")
NODE_CPU = ("4", "8", "16")
NODE_MEMORY = ("16Gi", "32Gi", "64Gi")
POD_CPU = ("100m", "250m", "500m", "1")
POD_MEMORY = ("128Mi", "256Mi", "512Mi", "1Gi", "2Gi")


class SplitMix64:
    """SplitMix64, all arithmetic mod 2**64; ``intn(n) = next() % n``."""

    __slots__ = ("state",)

    def __init__(self, seed: int) -> None:
        self.state = seed & MASK64

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def intn(self, n: int) -> int:
        return self.next() % n


def _meta(name: str, namespace: str | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["creationTimestamp"] = None
    if labels:
        meta["labels"] = dict(sorted(labels.items()))
    return meta


def _node(i: int, t: int, d: int, x: int) -> dict[str, Any]:
    name = f"node-{i:05d}"
    labels = {
        HOSTNAME_KEY: name,
        ZONE_KEY: f"zone-{i % 3}",
        REGION_KEY: "region-0",
        "node-type": NODE_TYPES[t],
        "disktype": "ssd" if d == 0 else "hdd",
    }
    spec: dict[str, Any] = {}
    if x == 0:
        # v1.Taint in 1.9: TimeAdded is a metav1.Time value (not a pointer), printed as null.
        spec["taints"] = [{"key": "dedicated", "value": "infra", "effect": "NoSchedule", "timeAdded": None}]
    elif x == 1:
        spec["taints"] = [{"key": "flaky", "value": "true", "effect": "PreferNoSchedule", "timeAdded": None}]
    resources = {"cpu": NODE_CPU[t], "memory": NODE_MEMORY[t], "pods": "110"}
    return {
        "metadata": _meta(name, labels=labels),
        "spec": spec,
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [
                {"type": "Ready", "status": "True", "lastHeartbeatTime": None, "lastTransitionTime": None}
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
                "kernelVersion": "",
                "osImage": "",
                "containerRuntimeVersion": "",
                "kubeletVersion": "",
                "kubeProxyVersion": "",
                "operatingSystem": "",
                "architecture": "",
            },
        },
    }


def _selector_template() -> dict[str, Any]:
    return {"metadata": {"creationTimestamp": None}, "spec": {"containers": None}}


def _pod(p: int, a: int, c: int, m: int, na: int, tol: int) -> dict[str, Any]:
    app = f"app-{a}"
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "c0",
                "image": f"registry/{app}:v1",
                "resources": {"requests": {"cpu": POD_CPU[c], "memory": POD_MEMORY[m]}},
            }
        ]
    }
    affinity: dict[str, Any] = {}
    node_affinity: dict[str, Any] = {}
    if na in (0, 2):
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "node-type", "operator": "In", "values": ["medium", "large"]}]}
            ]
        }
    if na in (1, 2):
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": 10, "preference": {"matchExpressions": [{"key": "disktype", "operator": "In", "values": ["ssd"]}]}}
        ]
    if node_affinity:
        affinity["nodeAffinity"] = node_affinity
    selector = {"matchLabels": {"app": app}}
    kind = a % 7
    if kind == 5:
        affinity["podAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 50, "podAffinityTerm": {"labelSelector": selector, "topologyKey": ZONE_KEY}}
            ]
        }
    elif kind == 0:
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": selector, "topologyKey": HOSTNAME_KEY}]
        }
    elif kind == 3:
        affinity["podAntiAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": {"labelSelector": selector, "topologyKey": ZONE_KEY}}
            ]
        }
    if affinity:
        spec["affinity"] = affinity
    if tol == 0:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}]
    return {"metadata": _meta(f"pod-{p:06d}", "default", {"app": app}), "spec": spec, "status": {}}


def _or_null(items: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Go marshals a nil slice as ``null``."""
    return items or None


#: Workload variants: the same objects, with something added to every pending pod (no extra draws).
VARIANTS = ("topology-spread", "modern")


def _topology_spread(pod: dict[str, Any]) -> None:
    """``topology-spread``: a zone DoNotSchedule and a hostname ScheduleAnyway constraint on the pod's app."""
    selector = {"matchLabels": {"app": pod["metadata"]["labels"]["app"]}}
    pod["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": ZONE_KEY, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector},
        {"maxSkew": 1, "topologyKey": HOSTNAME_KEY, "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": selector},
    ]


def _modern(pod: dict[str, Any], p: int) -> None:
    """``modern``: ``topology-spread``, plus on every third pod an init container asking twice the app
    container's cpu, and on every fourth a RuntimeClass-style overhead of 50m / 32Mi (by index: no draws)."""
    _topology_spread(pod)
    requests = pod["spec"]["containers"][0]["resources"]["requests"]
    if p % 3 == 0:
        pod["spec"]["initContainers"] = [{"name": "init", "image": "registry/init:v1", "resources": {
            "requests": {"cpu": f"{2 * milli_cpu(requests['cpu'])}m", "memory": requests["memory"]}}}]
    if p % 4 == 0:
        pod["spec"]["overhead"] = {"cpu": "50m", "memory": "32Mi"}


def milli_cpu(quantity: str) -> int:
    """The generator's own cpu quantities (``"250m"``, ``"1"``) in millicores."""
    return int(quantity[:-1]) if quantity.endswith("m") else int(quantity) * 1000


def generate(nodes: int, pods: int, seed: int, variant: str | None = None) -> dict[str, Any]:
    """The benchmark input for ``nodes`` nodes and ``pods`` pending pods from ``seed``; ``variant`` (one
    of :data:`VARIANTS`) adds its fields to every pending pod."""
    if variant is not None and variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}: one of {', '.join(VARIANTS)}")
    if nodes < 0 or pods < 0:
        raise ValueError("nodes and pods must be non-negative")
    rng = SplitMix64(seed)
    node_objs = []
    for i in range(nodes):
        t = rng.intn(3)
        d = rng.intn(2)
        x = rng.intn(20)
        node_objs.append(_node(i, t, d, x))

    num_apps = max(5, pods // 10)
    services, rcs, rss, sss = [], [], [], []
    for j in range(num_apps):
        app = f"app-{j}"
        if j % 4 in (0, 1, 2):
            services.append(
                {"metadata": _meta(f"svc-{app}", "default"), "spec": {"selector": {"app": app}}, "status": {"loadBalancer": {}}}
            )
        if j % 4 == 0:
            rcs.append(
                {
                    "metadata": _meta(f"rc-{app}", "default"),
                    "spec": {"replicas": 1, "selector": {"app": app}},
                    "status": {"replicas": 0},
                }
            )
        elif j % 4 == 1:
            rss.append(
                {
                    "metadata": _meta(f"rs-{app}", "default"),
                    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": app}}, "template": _selector_template()},
                    "status": {"replicas": 0},
                }
            )
        elif j % 4 == 3:
            sss.append(
                {
                    "metadata": _meta(f"ss-{app}", "default"),
                    "spec": {
                        "replicas": 1,
                        "selector": {"matchLabels": {"app": app}},
                        "template": _selector_template(),
                        "serviceName": "",
                        "updateStrategy": {},
                    },
                    "status": {"replicas": 0},
                }
            )

    pending = []
    for p in range(pods):
        a = rng.intn(num_apps)
        c = rng.intn(4)
        m = rng.intn(5)
        na = rng.intn(10)
        tol = rng.intn(5)
        pending.append(_pod(p, a, c, m, na, tol))
        if variant == "topology-spread":
            _topology_spread(pending[-1])
        elif variant == "modern":
            _modern(pending[-1], p)

    return {
        "policy": None,
        "provider": None,
        "hardPodAffinitySymmetricWeight": None,
        "nodes": _or_null(node_objs),
        "pods": None,
        "services": _or_null(services),
        "replicationControllers": _or_null(rcs),
        "replicaSets": _or_null(rss),
        "statefulSets": _or_null(sss),
        "pvs": None,
        "pvcs": None,
        "pending": _or_null(pending),
    }


# layout key -> (kind, apiVersion)
KINDS: tuple[tuple[str, str, str], ...] = (
    ("nodes", "Node", "v1"),
    ("pods", "Pod", "v1"),
    ("services", "Service", "v1"),
    ("replicationControllers", "ReplicationController", "v1"),
    ("replicaSets", "ReplicaSet", "extensions/v1beta1"),
    ("statefulSets", "StatefulSet", "apps/v1beta1"),
    ("pvs", "PersistentVolume", "v1"),
    ("pvcs", "PersistentVolumeClaim", "v1"),
    ("pending", "Pod", "v1"),
)


def to_objects(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Every object of the layout as a Kubernetes object (``kind``/``apiVersion`` set), pending pods last."""
    out: list[dict[str, Any]] = []
    for key, kind, api_version in KINDS:
        for obj in data.get(key) or ():
            out.append({"kind": kind, "apiVersion": api_version, **obj})
    return out


def dumps(data: dict[str, Any]) -> str:
    """Compact JSON as Go's ``json.Marshal`` prints it, plus a trailing newline."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--pods", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--variant", choices=VARIANTS, help="add a variant's fields to every pending pod")
    parser.add_argument("-o", "--output", help="write here instead of standard output")
    args = parser.parse_args(argv)
    text = dumps(generate(args.nodes, args.pods, args.seed, args.variant))
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The allocator against a brute-force search over small random clusters.

The brute force enumerates every candidate allocation in upstream's order (claims in order, requests in
order, a ``firstAvailable`` request's subrequests in turn, each request's devices as combinations in pool,
slice and device order) and keeps the first that satisfies everything: class and request selectors, devices
free (not allocated, not given twice), ``matchAttribute`` constraints, ``All`` meaning every selected device of
the node's pools, taints tolerated, shared counters not exceeded. The allocator must return exactly that
allocation, and none when there is none; every allocation it returns is also checked on its own.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest

from policy_scheduler.dra import allocator as dra_allocator
from policy_scheduler.dra.allocator import Allocator, gather_pools
from policy_scheduler.model.dra import DeviceClass, ResourceClaim, ResourceSlice
from tests.dra.builders import (
    claim,
    consumes,
    counter_set,
    device,
    device_class,
    prioritized,
    request,
    sub_request,
)

NODE = "node-1"
DRIVERS = ("driver-a", "driver-b")
MODELS = ("a", "b")
TAINT = {"key": "k", "value": "v", "effect": "NoSchedule"}
TOLERATION = {"key": "k", "operator": "Exists"}


def random_cluster(rng: random.Random) -> tuple[list[ResourceSlice], frozenset]:
    slices = []
    allocated = set()
    for driver in DRIVERS[: rng.randint(1, 2)]:
        for p in range(rng.randint(1, 2)):
            # Pool names differ across drivers: upstream keys a pool's counters by its name alone (a row in
            # test_allocator_table.py pins that), which the brute force does not model.
            pool = f"{driver}-pool-{p}"
            n_slices = rng.randint(1, 2)
            counters = rng.random() < 0.3
            count = n_slices + (1 if counters else 0)
            names = [f"{driver}-{pool}-s{i}" for i in range(n_slices)]
            rng.shuffle(names)  # slice names, not list order, decide the search order
            for i, name in enumerate(names):
                devices = []
                for d in range(rng.randint(0, 3)):
                    extra: dict[str, Any] = {}
                    if rng.random() < 0.15:
                        extra["taints"] = [TAINT]
                    if counters:
                        extra["consumesCounters"] = consumes("set", mem=str(rng.randint(1, 3)))
                    dev_name = f"dev-{i}-{d}"
                    devices.append(device(dev_name, None, {"model": {"string": rng.choice(MODELS)},
                                                           "numa": {"int": rng.randint(0, 1)}}, **extra))
                    if rng.random() < 0.2:
                        allocated.add((driver, pool, dev_name))
                slices.append(_slice(name, driver, pool, count, devices))
            if counters:
                slices.append(_slice(f"{driver}-{pool}-counters", driver, pool, count, [],
                                     [counter_set("set", mem=str(rng.randint(2, 5)))]))
    rng.shuffle(slices)
    return slices, frozenset(allocated)


def _slice(name: str, driver: str, pool: str, count: int, devices: list, counters: list | None = None) -> ResourceSlice:
    spec: dict[str, Any] = {"driver": driver, "nodeName": NODE, "pool": {"name": pool, "generation": 1,
                                                                         "resourceSliceCount": count}}
    if counters:
        spec["sharedCounters"] = counters
    else:
        spec["devices"] = devices
    return ResourceSlice.from_dict({"metadata": {"name": name}, "spec": spec})


def random_spec(rng: random.Random, name: str, sub: bool) -> dict[str, Any]:
    selectors = []
    if rng.random() < 0.5:
        driver = rng.choice(DRIVERS)
        selectors.append(f'device.driver == "{driver}" && device.attributes["{driver}"].model == "{rng.choice(MODELS)}"')
    mode = "All" if rng.random() < 0.15 else None
    tolerations = [TOLERATION] if rng.random() < 0.3 else None
    make = sub_request if sub else request
    return make(name, rng.choice(["any", "class-a"]), rng.randint(1, 2), *selectors, mode=mode,
                tolerations=tolerations)


def random_claims(rng: random.Random) -> list[ResourceClaim]:
    claims = []
    for c in range(rng.randint(1, 2)):
        requests = []
        for r in range(rng.randint(1, 2)):
            if rng.random() < 0.3:
                requests.append(prioritized(f"r{r}", *(random_spec(rng, f"s{s}", True) for s in range(2))))
            else:
                requests.append(random_spec(rng, f"r{r}", False))
        constraints = None
        # A constraint an ``All`` request's device breaks is an error upstream, not a backtrack (a table row):
        # the random claims never combine the two.
        has_all = any(r.get("exactly", {}).get("allocationMode") == "All"
                      or any(x.get("allocationMode") == "All" for x in r.get("firstAvailable", ())) for r in requests)
        if not has_all and rng.random() < 0.4:
            which = rng.sample([r["name"] for r in requests], k=rng.randint(0, len(requests)))
            constraints = [{"matchAttribute": f"{rng.choice(DRIVERS)}/numa", "requests": which}]
        claims.append(claim(f"claim-{c}", *requests, constraints=constraints))
    return claims


def classes() -> dict[str, DeviceClass]:
    """``class-a`` selects driver-a's devices, ``any`` every device."""
    return {"class-a": device_class("class-a", "driver-a"),
            "any": DeviceClass.from_dict({"metadata": {"name": "any"}, "spec": {}})}


# -- the brute force ----------------------------------------------------------------------------------------------
def node_devices(slices: list[ResourceSlice], allocated: frozenset) -> tuple[list[tuple[tuple, Any, Any]], dict]:
    """Every device of the node's usable pools in upstream's order, and what each pool's counter sets have left
    once the allocated devices' consumption is taken off."""
    pools = gather_pools(slices, NODE, {}, slices)
    out, counters = [], {}
    for pool in pools:
        if pool.incomplete or pool.invalid:
            continue
        left = {n: dict(cs.counters) for n, cs in pool.counter_sets.items()}
        for s in pool.slices:
            for d in s.devices:
                out.append(((pool.driver, pool.pool, d.name), d, pool))
                if (pool.driver, pool.pool, d.name) in allocated:
                    for set_name, values in d.consumes_counters:
                        for k, v in values.items():
                            left[set_name][k] -= v
        counters[(pool.driver, pool.pool)] = left
    return out, counters


def selected(spec: Any, device: Any, class_map: dict) -> bool:
    """The class's and the request's selectors (evaluated by the same CEL: the search is under test)."""
    cel = dra_allocator.default_environment()
    return all(cel.compile(e).matches(device) for e in (*class_map[spec.device_class_name].selectors, *spec.selectors))


def alternatives(claim_: ResourceClaim, devices: list, class_map: dict) -> list[list[tuple[str, Any, list]]]:
    """Per request: its (name, spec, candidate combinations) in upstream's order."""
    out = []
    for r in claim_.spec.requests:
        specs = [(r.name, r.exactly)] if r.exactly is not None else [(f"{r.name}/{s.name}", s)
                                                                      for s in r.first_available]
        alts = []
        for name, spec in specs:
            matching = [d for d in devices if selected(spec, d[1], class_map)]
            if spec.allocation_mode == "All":
                combos = [tuple(matching)] if matching else []
            else:
                combos = list(itertools.combinations(matching, spec.count))
            alts.append((name, spec, combos))
        out.append(alts)
    return out


def choices(alts: list) -> Iterator[tuple[str, Any, tuple]]:
    for name, spec, combos in alts:
        for combo in combos:
            yield name, spec, combo


def valid(picks: list[list[tuple[str, Any, tuple]]], claims: list[ResourceClaim], allocated: frozenset,
          counters: dict) -> bool:
    used: set = set()
    consumed: dict = {}
    for claim_, claim_picks in zip(claims, picks):
        for _name, spec, combo in claim_picks:
            for device_id, d, pool in combo:
                if device_id in allocated or device_id in used:
                    return False
                used.add(device_id)
                if any(t.prevents_allocation(spec.tolerations) for t in d.taints):
                    return False
                for set_name, values in d.consumes_counters:
                    for k, v in values.items():
                        key = (pool.driver, pool.pool, set_name, k)
                        consumed[key] = consumed.get(key, Fraction(0)) + v
                        if consumed[key] > counters[(pool.driver, pool.pool)][set_name][k]:
                            return False
        for constraint in claim_.spec.constraints:
            values = []
            for name, _, combo in claim_picks:
                base = name.split("/")[0]
                if constraint.requests and base not in constraint.requests and name not in constraint.requests:
                    continue
                for _, d, _ in combo:
                    a = d.attributes.get(constraint.match_attribute)
                    if a is None:
                        return False
                    values.append(a.value)
            if len(set(values)) > 1:
                return False
    return True


def brute_force(claims: list[ResourceClaim], slices: list[ResourceSlice], allocated: frozenset,
                class_map: dict) -> list[list[tuple[str, tuple]]] | None:
    devices, counters = node_devices(slices, allocated)
    per_claim = [alternatives(c, devices, class_map) for c in claims]
    flat = [alts for claim_alts in per_claim for alts in claim_alts]
    shape = [len(c.spec.requests) for c in claims]
    for product in itertools.product(*(list(choices(a)) for a in flat)):
        picks, i = [], 0
        for n in shape:
            picks.append(list(product[i:i + n]))
            i += n
        if valid(picks, claims, allocated, counters):
            return [[(name, device_id) for name, _, combo in p for device_id, _, _ in combo] for p in picks]
    return None


@pytest.mark.parametrize("seed", range(400))
def test_the_allocator_finds_upstreams_first_allocation(seed):
    rng = random.Random(seed)
    slices, allocated = random_cluster(rng)
    claims = random_claims(rng)
    class_map = classes()
    expected = brute_force(claims, slices, allocated, class_map)
    cel = dra_allocator.default_environment()
    try:
        solution = Allocator(class_map, slices, allocated, cel).allocate(NODE, {}, claims)
    except Exception as e:  # pragma: no cover - reported with the case
        raise AssertionError(f"seed {seed}: {e}") from e
    got = None if solution is None else [[(r.request, r.device_id) for r in devices] for devices in solution]
    assert got == expected, f"seed {seed}"

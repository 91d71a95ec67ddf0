"""Objects for the DRA tests, built as upstream's ``allocator_testing.go`` builds them (its names and constants),
as API JSON parsed through the model (so every object also passes the API server's checks)."""

from __future__ import annotations

from typing import Any

from policy_scheduler.model.dra import DeviceClass, ResourceClaim, ResourceSlice

REGION1, REGION2 = "region-1", "region-2"
NODE1, NODE2 = "node-1", "node-2"
CLASS_A, CLASS_B = "class-a", "class-b"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
POOL1, POOL2, POOL3, POOL4 = "pool-1", "pool-2", "pool-3", "pool-4"
REQ0, REQ1, REQ2 = "req-0", "req-1", "req-2"
SUB0, SUB1 = "subReq-0", "subReq-1"
CLAIM0, CLAIM1 = "claim-0", "claim-1"
SLICE1, SLICE2 = "slice-1", "slice-2"
DEVICE0, DEVICE1, DEVICE2, DEVICE3 = "device-0", "device-1", "device-2", "device-3"
COUNTER_SET1 = "counter-set-1"
ALL_NODES = "allNodes"
PER_DEVICE = "perDevice"

INT_ATTRIBUTE = f"{DRIVER_A}/numa"
VERSION_ATTRIBUTE = f"{DRIVER_A}/driverVersion"
STRING_ATTRIBUTE = f"{DRIVER_A}/stringAttribute"
BOOL_ATTRIBUTE = f"{DRIVER_A}/boolAttribute"
NON_EXISTENT_ATTRIBUTE = f"{DRIVER_A}/NonExistentAttribute"

TAINT_NONE = {"key": "taint-key", "value": "taint-value", "effect": "None"}
TAINT_NO_SCHEDULE = {"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}
TAINT_NO_EXECUTE = {"key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}
TOLERATION_NO_SCHEDULE = {"operator": "Exists", "key": "taint-key", "effect": "NoSchedule"}
TOLERATION_NO_EXECUTE = {"operator": "Equal", "key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}


def node(name: str, region: str) -> tuple[str, dict[str, str]]:
    """A node as the allocator sees it: its name and labels."""
    return name, {"region": region, "planet": "earth"}


def device_class(name: str, driver: str, config: str | None = None) -> DeviceClass:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}
    if config:
        spec["config"] = [{"opaque": opaque(driver, config)}]
    return DeviceClass.from_dict({"metadata": {"name": name}, "spec": spec})


def opaque(driver: str, attribute: str) -> dict[str, Any]:
    return {"driver": driver, "parameters": {attribute: attribute + "Value"}}


def attrs(**values: Any) -> dict[str, Any]:
    out = {}
    for k, v in values.items():
        if isinstance(v, bool):
            out[k] = {"bool": v}
        elif isinstance(v, int):
            out[k] = {"int": v}
        elif isinstance(v, str) and v[:1].isdigit() and v.count(".") == 2:
            out[k] = {"version": v}
        else:
            out[k] = {"string": v}
    return out


def device(name: str, capacity: dict[str, str] | None = None, attributes: dict[str, Any] | None = None,
           **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if capacity:
        out["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if attributes:
        out["attributes"] = attributes
    out.update(extra)
    return out


def node_label_selector(key: str, *values: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]}


def local_node_selector(name: str) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}]}


def resource_slice(name: str, node_selection: Any, pool: str, driver: str, *devices: dict[str, Any],
                   count: int = 1, generation: int = 1, counters: list[dict[str, Any]] | None = None) -> ResourceSlice:
    spec: dict[str, Any] = {"driver": driver, "pool": {"name": pool, "generation": generation,
                                                       "resourceSliceCount": count}}
    if isinstance(node_selection, dict):
        spec["nodeSelector"] = node_selection
    elif node_selection == ALL_NODES:
        spec["allNodes"] = True
    elif node_selection == PER_DEVICE:
        spec["perDeviceNodeSelection"] = True
    elif node_selection is not None:
        spec["nodeName"] = node_selection
    if counters:
        spec["sharedCounters"] = counters
    else:
        spec["devices"] = list(devices)
    return ResourceSlice.from_dict({"metadata": {"name": name}, "spec": spec})


def one_device(name: str, node_selection: Any, pool: str, driver: str, **kw: Any) -> ResourceSlice:
    return resource_slice(name, node_selection, pool, driver, device(DEVICE1), **kw)


def many_devices(name: str, node_selection: Any, pool: str, driver: str, n: int) -> ResourceSlice:
    return resource_slice(name, node_selection, pool, driver, *(device(f"device-{i}") for i in range(n)))


def counter_set(name: str, **counters: str) -> dict[str, Any]:
    return {"name": name, "counters": {k: {"value": v} for k, v in counters.items()}}


def consumes(counter_set_name: str, **counters: str) -> list[dict[str, Any]]:
    return [{"counterSet": counter_set_name, "counters": {k: {"value": v} for k, v in counters.items()}}]


def request(name: str, class_name: str, count: int = 1, *selectors: str, mode: str | None = None,
            admin: bool | None = None, tolerations: list[dict] | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": class_name}
    if mode == "All":
        exactly["allocationMode"] = "All"
    else:
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if admin is not None:
        exactly["adminAccess"] = admin
    if tolerations:
        exactly["tolerations"] = tolerations
    return {"name": name, "exactly": exactly}


def sub_request(name: str, class_name: str, count: int = 1, *selectors: str, mode: str | None = None,
                tolerations: list[dict] | None = None) -> dict[str, Any]:
    out = request(name, class_name, count, *selectors, mode=mode, tolerations=tolerations)["exactly"]
    return {"name": name, **out}


def prioritized(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subs)}


def claim(name: str, *requests: dict[str, Any], constraints: list[dict] | None = None,
          config: list[dict] | None = None, namespace: str = "default") -> ResourceClaim:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    if config:
        devices["config"] = config
    return ResourceClaim.from_dict({"metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
                                    "spec": {"devices": devices}})


def result(request_name: str, driver: str, pool: str, device_name: str, admin: bool = False,
           *tolerations: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"request": request_name, "driver": driver, "pool": pool, "device": device_name}
    if admin:
        out["adminAccess"] = True
    if tolerations:
        out["tolerations"] = list(tolerations)
    return out


def allocation(selector: dict[str, Any] | None, *results: dict[str, Any],
               config: list[dict] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"devices": {"results": list(results)}}
    if config:
        out["devices"]["config"] = config
    if selector is not None:
        out["nodeSelector"] = selector
    return out

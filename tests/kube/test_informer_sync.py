"""When an informer counts as synced: after its whole first list, or, for the pods under 1.9's FIFO, once every
assigned pod is in the cache (the backlog then reaches the queue as if each pod were created just after the list)."""

from __future__ import annotations

import random
from typing import Any

from policy_scheduler.kube.client.informer import Reflector
from policy_scheduler.kube.daemon.lifecycle import queue_order, unassigned


def pod(name: str, created: str, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "ns", "creationTimestamp": created, "resourceVersion": "1"},
            "spec": spec}


class Recorder:
    """The handler: each object it sees, with whether the reflector said it was synced by then."""

    def __init__(self) -> None:
        self.reflector: Reflector | None = None
        self.seen: list[tuple[str, bool]] = []

    def on_add(self, obj: dict[str, Any]) -> None:
        assert self.reflector is not None
        self.seen.append((obj["metadata"]["name"], self.reflector.synced.is_set()))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.on_add(new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        raise AssertionError("nothing is deleted here")


def listed(seed: int) -> list[dict[str, Any]]:
    pods = [pod(f"bound-{i}", f"2026-01-01T00:00:{i:02d}Z", node=f"n{i % 3}") for i in range(20)]
    pods += [pod(f"pending-{i}", f"2026-01-01T00:00:{i:02d}Z") for i in range(20)]
    random.Random(seed).shuffle(pods)
    return pods


def reflector(handler: Recorder, synced_from: Any = None) -> Reflector:
    r = Reflector(None, "/api/v1/pods", handler, name="pods", list_order=queue_order,  # type: ignore[arg-type]
                  synced_from=synced_from)
    handler.reflector = r
    return r


def test_the_pods_are_synced_once_every_assigned_pod_is_in_and_the_backlog_follows_in_creation_order():
    for seed in range(5):
        handler = Recorder()
        r = reflector(handler, synced_from=unassigned)
        r.replace(listed(seed), "7", synced_from=unassigned)
        names = [name for name, _ in handler.seen]
        assert names[:20] == sorted(names[:20], key=lambda n: int(n.split("-")[1]))
        assert all(name.startswith("bound-") and not synced for name, synced in handler.seen[:20])
        assert names[20:] == [f"pending-{i}" for i in range(20)]
        assert all(synced for _, synced in handler.seen[20:])
        assert r.resource_version == "7" and len(r.store) == 40


def test_without_synced_from_the_whole_list_comes_first():
    handler = Recorder()
    r = reflector(handler)
    r.replace(listed(1), "7")
    assert len(handler.seen) == 40 and not any(synced for _, synced in handler.seen)


def test_a_list_without_pending_pods_is_synced_only_at_its_end():
    handler = Recorder()
    r = reflector(handler, synced_from=unassigned)
    items = [p for p in listed(2) if not unassigned(p)]
    r.replace(items, "7", synced_from=unassigned)
    assert len(handler.seen) == 20 and not r.synced.is_set()  # _list sets it after replace returns

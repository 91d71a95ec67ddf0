"""The daemon's scheduler cache: upstream ``schedulercache/cache_test.go`` behaviours (assume, confirm,
expire, forget, update, remove) with an injected clock, and heartbeat-proof node updates."""

from __future__ import annotations

import pytest

from policy_scheduler.cache.scheduler_cache import (
    CacheCorrupted,
    CacheError,
    SchedulerCache,
    node_fingerprint,
)
from policy_scheduler.model.node import Node
from policy_scheduler.model.pod import Pod


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make_pod(name: str, node: str, cpu: str = "100m", ports: tuple[int, ...] = ()) -> Pod:
    return Pod({
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": {"nodeName": node, "containers": [{
            "name": "c", "resources": {"requests": {"cpu": cpu, "memory": "500"}},
            "ports": [{"hostPort": p} for p in ports]}]},
    })


def make_node(name: str, heartbeat: str = "t0", labels: dict | None = None) -> dict:
    return {
        "metadata": {"name": name, "labels": labels or {}, "resourceVersion": heartbeat},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": heartbeat}],
                   "nodeInfo": {"bootID": heartbeat}},
    }


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def cache(clock):
    return SchedulerCache(ttl=10.0, clock=clock)


def requested_cpu(cache: SchedulerCache, node: str) -> int:
    info = cache.cluster.node_infos.get(node)
    return info.requested.milli_cpu if info else 0


def test_assumed_pods_count_on_their_node(cache):
    cache.assume_pod(make_pod("a", "n1", "100m", (80,)))
    cache.assume_pod(make_pod("b", "n1", "200m", (8080,)))
    info = cache.cluster.node_infos["n1"]
    assert info.requested.milli_cpu == 300
    assert set(info.used_ports) == {"TCP/0.0.0.0/80", "TCP/0.0.0.0/8080"}
    with pytest.raises(CacheError, match="pod a state wasn't initial but get assumed"):
        cache.assume_pod(make_pod("a", "n1"))


def test_expire_only_after_binding_finished_and_ttl(cache, clock):
    """TestExpirePod: a pod whose binding is in flight never expires; one finished expires after the TTL."""
    in_flight, finished = make_pod("in-flight", "n1", "100m"), make_pod("finished", "n1", "200m")
    cache.assume_pod(in_flight)
    cache.assume_pod(finished)
    cache.finish_binding(finished)
    clock.now += 9.0
    assert cache.cleanup_expired() == []
    clock.now += 2.0
    assert [p.name for p in cache.cleanup_expired()] == ["finished"]
    assert requested_cpu(cache, "n1") == 100
    clock.now += 1000
    assert cache.cleanup_expired() == []
    assert cache.is_assumed(in_flight.key)


def test_add_confirms_an_assumed_pod_which_then_never_expires(cache, clock):
    """TestAddPodWillConfirm."""
    pod = make_pod("a", "n1", "100m")
    cache.assume_pod(pod)
    cache.finish_binding(pod)
    cache.add_pod(pod)
    clock.now += 100
    assert cache.cleanup_expired() == []
    assert requested_cpu(cache, "n1") == 100
    assert not cache.is_assumed(pod.key)
    with pytest.raises(CacheError, match="pod was already in added state. Pod key: a"):
        cache.add_pod(pod)


def test_add_on_another_node_moves_the_assumed_pod(cache, caplog):
    """TestAddPodWillReplaceAssumed: the watch's node wins."""
    cache.assume_pod(make_pod("a", "n1", "100m"))
    cache.add_pod(make_pod("a", "n2", "100m"))
    assert requested_cpu(cache, "n1") == 0
    assert requested_cpu(cache, "n2") == 100
    assert "assumed to a different node than added to" in caplog.text


def test_add_after_expiration_adds_it_again(cache, clock):
    """TestAddPodAfterExpiration."""
    pod = make_pod("a", "n1", "100m")
    cache.assume_pod(pod)
    cache.finish_binding(pod)
    clock.now += 11
    cache.cleanup_expired()
    assert requested_cpu(cache, "n1") == 0
    cache.add_pod(pod)
    assert requested_cpu(cache, "n1") == 100


def test_forget(cache):
    pod = make_pod("a", "n1", "100m")
    cache.assume_pod(pod)
    with pytest.raises(CacheError, match="pod a state was assumed on a different node"):
        cache.forget_pod(make_pod("a", "n2"))
    cache.forget_pod(pod)
    assert requested_cpu(cache, "n1") == 0
    with pytest.raises(CacheError, match="pod a state wasn't assumed but get forgotten"):
        cache.forget_pod(pod)


def test_update_and_remove_of_added_pods(cache):
    """TestUpdatePod / TestRemovePod, and the fatal node change."""
    old, new = make_pod("a", "n1", "100m"), make_pod("a", "n1", "300m")
    with pytest.raises(CacheError, match="pod a state wasn't added but get updated"):
        cache.update_pod(old, new)
    cache.add_pod(old)
    cache.update_pod(old, new)
    assert requested_cpu(cache, "n1") == 300
    with pytest.raises(CacheCorrupted, match="Schedulercache is corrupted"):
        cache.update_pod(new, make_pod("a", "n2", "300m"))
    cache.remove_pod(new)
    assert "n1" not in cache.cluster.node_infos
    with pytest.raises(CacheError, match="pod state wasn't added but get removed. Pod key: a"):
        cache.remove_pod(new)


def test_status_only_updates_keep_the_accounted_object(cache):
    old = make_pod("a", "n1", "100m")
    cache.add_pod(old)
    raw = {**old.raw, "status": {"phase": "Running", "podIP": "10.0.0.9"}}
    new = Pod(raw)
    cache.update_pod(old, new)
    assert cache.cluster.node_infos["n1"].pods == [old]
    # ... which from now on holds the API server's latest object: the informer's store and the cache share it.
    assert old.raw is new.raw and old.phase == "Running"


def resized(pod: Pod, actuated: str, allocated: str, conditions: tuple[dict, ...] = ()) -> Pod:
    """``pod`` after the kubelet reported its container running with ``actuated`` cpu, admitted at ``allocated``."""
    return Pod({**pod.raw, "status": {"phase": "Running", "conditions": list(conditions), "containerStatuses": [
        {"name": "c", "resources": {"requests": {"cpu": actuated, "memory": "500"}},
         "allocatedResources": {"cpu": allocated, "memory": "500"}}]}})


def test_a_status_that_changes_the_accounting_re_accounts_the_node(cache):
    """In-place resize (cluster rules): the spec shrank to 500m while the container still runs at 1500m; the node
    holds 1500m until the kubelet reports 500m, then 500m."""
    spec = make_pod("a", "n1", "500m")
    running = resized(spec, "1500m", "500m")
    cache.add_pod(running)
    assert requested_cpu(cache, "n1") == 1500
    assert cache.cluster.node_infos["n1"].nonzero_milli_cpu == 1500
    done = resized(spec, "500m", "500m")
    cache.update_pod(running, done)
    assert requested_cpu(cache, "n1") == 500
    assert cache.cluster.node_infos["n1"].nonzero_milli_cpu == 500
    assert cache.cluster.node_infos["n1"].pods == [done]


def test_an_infeasible_resize_re_accounts_the_node(cache):
    spec = make_pod("a", "n1", "2500m")
    undecided = resized(spec, "1", "1")
    cache.add_pod(undecided)
    assert requested_cpu(cache, "n1") == 2500
    infeasible = resized(spec, "1", "1", ({"type": "PodResizePending", "status": "True", "reason": "Infeasible"},))
    cache.update_pod(undecided, infeasible)
    assert requested_cpu(cache, "n1") == 1000


def test_a_heartbeat_of_a_resized_pod_keeps_the_accounted_object(cache):
    spec = make_pod("a", "n1", "500m")
    running = resized(spec, "1500m", "500m")
    cache.add_pod(running)
    again = resized(spec, "1500m", "500m")
    again.raw["status"]["podIP"] = "10.0.0.9"
    cache.update_pod(running, again)
    assert cache.cluster.node_infos["n1"].pods == [running]
    assert running.raw is again.raw
    assert requested_cpu(cache, "n1") == 1500


def test_a_confirmation_with_a_resize_status_re_accounts_the_assumed_pod():
    """The assumed copy counted the spec (a pod being placed); the bound object the watch sends counts what the
    kubelet reports."""
    cache = SchedulerCache(ttl=10.0, clock=Clock())
    assumed = make_pod("a", "", "500m").with_node_name("n1")
    cache.assume_pod(assumed)
    cache.add_pod(resized(make_pod("a", "n1", "500m"), "1500m", "500m"))
    assert requested_cpu(cache, "n1") == 1500


def test_a_confirmed_pod_holds_the_api_servers_object_not_the_assumed_copy():
    """The watch's confirmation of an assumed pod re-accounts nothing, and the cache keeps one document per pod:
    the bound object the informer stores, not also the pending one the assumed copy was made from."""
    cache = SchedulerCache(ttl=10.0, clock=Clock())
    pending = make_pod("a", "", "100m")
    assumed = pending.with_node_name("n1")
    cache.assume_pod(assumed)
    cache.finish_binding(assumed)
    bound = Pod({**pending.raw, "spec": {**pending.raw["spec"], "nodeName": "n1"},
                 "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}})
    cache.add_pod(bound)
    assert cache.cluster.node_infos["n1"].pods == [assumed]
    assert assumed.raw is bound.raw
    assert requested_cpu(cache, "n1") == 100


def test_heartbeats_are_recognised_without_parsing(cache):
    first = make_node("n1", "t0")
    cache.add_node(first, Node(first))
    heartbeat = make_node("n1", "t1")
    assert node_fingerprint(first) == node_fingerprint(heartbeat)
    assert not cache.node_changed(heartbeat)
    relabelled = make_node("n1", "t2", labels={"zone": "a"})
    assert cache.node_changed(relabelled)
    not_ready = make_node("n1", "t3")
    not_ready["status"]["conditions"][0]["status"] = "False"
    assert cache.node_changed(not_ready)
    resized = make_node("n1", "t4")
    resized["status"]["allocatable"]["cpu"] = "8"
    assert cache.node_changed(resized)


def test_removed_node_keeps_its_pods_until_they_go(cache):
    raw = make_node("n1")
    cache.add_node(raw, Node(raw))
    pod = make_pod("a", "n1")
    cache.add_pod(pod)
    cache.remove_node("n1")
    assert cache.cluster.node_infos["n1"].node is None
    assert cache.cluster.node_list() == []
    cache.remove_pod(pod)
    assert "n1" not in cache.cluster.node_infos

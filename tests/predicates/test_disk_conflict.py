"""NoDiskConflict: upstream ``TestGCEDiskConflicts``, ``TestAWSDiskConflicts``, ``TestRBDDiskConflicts``
and ``TestISCSIDiskConflicts``, every row, plus the read-only rules."""

from __future__ import annotations

import pytest

from policy_scheduler.predicates import no_disk_conflict

from .conftest import make_node_info, make_pod, metadata

VOLUMES = {
    "GCE": ({"gcePersistentDisk": {"pdName": "foo"}}, {"gcePersistentDisk": {"pdName": "bar"}}),
    "AWS": ({"awsElasticBlockStore": {"volumeID": "foo"}}, {"awsElasticBlockStore": {"volumeID": "bar"}}),
    "RBD": (
        {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}},
        {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}},
    ),
    "ISCSI": (
        {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01", "fsType": "ext4", "lun": 0}},
        {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01", "fsType": "ext4", "lun": 0}},
    ),
}


def vol_pod(*volumes):
    return make_pod(volumes=[dict(v) for v in volumes])


def rows(kind: str):
    state, state2 = VOLUMES[kind]
    return [
        (f"{kind}: nothing", make_pod(), [], True),
        (f"{kind}: one state", make_pod(), [vol_pod(state)], True),
        (f"{kind}: same state", vol_pod(state), [vol_pod(state)], False),
        (f"{kind}: different state", vol_pod(state2), [vol_pod(state)], True),
    ]


CASES = rows("GCE") + rows("AWS") + rows("RBD") + rows("ISCSI")


@pytest.mark.parametrize(("name", "pod", "existing", "fits"), CASES, ids=[c[0] for c in CASES])
def test_disk_conflicts(name, pod, existing, fits) -> None:
    """Upstream TestGCEDiskConflicts / TestAWSDiskConflicts / TestRBDDiskConflicts / TestISCSIDiskConflicts."""
    node_info = make_node_info(None, existing)
    assert no_disk_conflict(pod, metadata(pod), node_info) == (fits, [] if fits else ["NoDiskConflict"])


def ro(volume: dict, read_only: bool) -> dict:
    (kind, src), = volume.items()
    return {kind: dict(src, readOnly=read_only)}


READ_ONLY = [
    ("GCE both read-only", "GCE", True, True, True),
    ("GCE one read-write", "GCE", True, False, False),
    ("AWS read-only does not help", "AWS", True, True, False),
    ("ISCSI both read-only", "ISCSI", True, True, True),
    ("ISCSI one read-write", "ISCSI", False, True, False),
    ("RBD both read-only", "RBD", True, True, True),
    ("RBD one read-write", "RBD", True, False, False),
]


@pytest.mark.parametrize(("name", "kind", "mine", "theirs", "fits"), READ_ONLY, ids=[c[0] for c in READ_ONLY])
def test_read_only_rules(name, kind, mine, theirs, fits) -> None:
    state = VOLUMES[kind][0]
    node_info = make_node_info(None, [vol_pod(ro(state, theirs))])
    assert no_disk_conflict(vol_pod(ro(state, mine)), None, node_info)[0] is fits


def test_rbd_needs_overlapping_monitors_same_pool_and_image() -> None:
    base = {"monitors": ["a", "b"], "pool": "p", "image": "i"}
    existing = make_node_info(None, [vol_pod({"rbd": base})])
    assert no_disk_conflict(vol_pod({"rbd": dict(base, monitors=["b", "z"])}), None, existing)[0] is False
    assert no_disk_conflict(vol_pod({"rbd": dict(base, pool="q")}), None, existing)[0] is True
    assert no_disk_conflict(vol_pod({"rbd": dict(base, image="j")}), None, existing)[0] is True


def test_iscsi_ignores_lun_and_target() -> None:
    existing = make_node_info(None, [vol_pod({"iscsi": {"iqn": "x", "lun": 0, "targetPortal": "a:1"}})])
    assert no_disk_conflict(vol_pod({"iscsi": {"iqn": "x", "lun": 1, "targetPortal": "b:2"}}), None, existing)[0] is False


def test_pvc_volumes_are_not_resolved() -> None:
    claim = {"persistentVolumeClaim": {"claimName": "c"}}
    assert no_disk_conflict(vol_pod(claim), None, make_node_info(None, [vol_pod(claim)])) == (True, [])

"""MaxEBSVolumeCount / MaxGCEPDVolumeCount / MaxAzureDiskVolumeCount: upstream
``TestEBSVolumeCountConflicts`` and ``TestGetMaxVols``, every row, plus the GCE/Azure filters and errors."""

from __future__ import annotations

import logging

import pytest

from policy_scheduler.errors import ConfigurationError, PredicateError
from policy_scheduler.predicates import new_max_pd_volume_count_predicate
from policy_scheduler.predicates.volume_count import get_max_vols

from .conftest import make_args, make_cluster, make_node_info, make_pod, metadata, pv_dict, pvc_dict


def vols(*volumes):
    return make_pod(volumes=[dict(v) for v in volumes])


def ebs(vid):
    return {"awsElasticBlockStore": {"volumeID": vid}}


def claim(name):
    return {"persistentVolumeClaim": {"claimName": name}}


ONE_VOL = vols(ebs("ovp"))
EBS_PVC = vols(claim("someEBSVol"))
SPLIT_PVC = vols(claim("someNonEBSVol"), claim("someEBSVol"))
TWO_VOL = vols(ebs("tvp1"), ebs("tvp2"))
SPLIT_VOLS = vols({"hostPath": {}}, ebs("svp"))
NON_APPLICABLE = vols({"hostPath": {}})
DELETED_PVC = vols(claim("deletedPVC"))
TWO_DELETED_PVC = vols(claim("deletedPVC"), claim("anotherDeletedPVC"))
DELETED_PV = vols(claim("pvcWithDeletedPV"))
DELETED_PV2 = vols(claim("pvcWithDeletedPV"))
ANOTHER_DELETED_PV = vols(claim("anotherPVCWithDeletedPV"))
EMPTY = make_pod()
UNBOUND_PVC = vols(claim("unboundPVC"))
UNBOUND_PVC2 = vols(claim("unboundPVC"))
ANOTHER_UNBOUND_PVC = vols(claim("anotherUnboundPVC"))

PVS = [pv_dict("someEBSVol", awsElasticBlockStore={"volumeID": "ebsVol"}), pv_dict("someNonEBSVol")]
PVCS = [
    pvc_dict("someEBSVol", volume_name="someEBSVol"),
    pvc_dict("someNonEBSVol", volume_name="someNonEBSVol"),
    pvc_dict("pvcWithDeletedPV", volume_name="pvcWithDeletedPV"),
    pvc_dict("anotherPVCWithDeletedPV", volume_name="anotherPVCWithDeletedPV"),
    pvc_dict("unboundPVC"),
    pvc_dict("anotherUnboundPVC"),
]

CASES = [
    ("fits when node capacity >= new pod's EBS volumes", ONE_VOL, [TWO_VOL, ONE_VOL], 4, True),
    ("doesn't fit when node capacity < new pod's EBS volumes", TWO_VOL, [ONE_VOL], 2, False),
    ("new pod's count ignores non-EBS volumes", SPLIT_VOLS, [TWO_VOL], 3, True),
    ("existing pods' counts ignore non-EBS volumes", TWO_VOL, [SPLIT_VOLS, NON_APPLICABLE, EMPTY], 3, True),
    ("new pod's count considers PVCs backed by EBS volumes", EBS_PVC, [SPLIT_VOLS, NON_APPLICABLE, EMPTY], 3, True),
    ("new pod's count ignores PVCs not backed by EBS volumes", SPLIT_PVC, [SPLIT_VOLS, ONE_VOL], 3, True),
    ("existing pods' counts considers PVCs backed by EBS volumes", TWO_VOL, [ONE_VOL, EBS_PVC], 3, False),
    ("already-mounted EBS volumes are always ok to allow", TWO_VOL, [ONE_VOL, TWO_VOL, EBS_PVC], 4, True),
    ("the same EBS volumes are not counted multiple times", SPLIT_VOLS, [ONE_VOL, ONE_VOL, EBS_PVC], 3, True),
    ("pod with missing PVC is counted towards the PV limit (max 2)", EBS_PVC, [ONE_VOL, DELETED_PVC], 2, False),
    ("pod with missing PVC is counted towards the PV limit (max 3)", EBS_PVC, [ONE_VOL, DELETED_PVC], 3, True),
    ("pod with missing two PVCs is counted towards the PV limit twice", EBS_PVC, [ONE_VOL, TWO_DELETED_PVC], 3, False),
    ("pod with missing PV is counted towards the PV limit (max 2)", EBS_PVC, [ONE_VOL, DELETED_PV], 2, False),
    ("pod with missing PV is counted towards the PV limit (max 3)", EBS_PVC, [ONE_VOL, DELETED_PV], 3, True),
    ("two pods missing the same PV are counted towards the PV limit only once", DELETED_PV2, [ONE_VOL, DELETED_PV], 2, True),
    ("two pods missing different PVs are counted towards the PV limit twice", ANOTHER_DELETED_PV, [ONE_VOL, DELETED_PV], 2, False),
    ("pod with unbound PVC is counted towards the PV limit (max 2)", EBS_PVC, [ONE_VOL, UNBOUND_PVC], 2, False),
    ("pod with unbound PVC is counted towards the PV limit (max 3)", EBS_PVC, [ONE_VOL, UNBOUND_PVC], 3, True),
    ("the same unbound PVC in multiple pods is counted towards the PV limit only once", UNBOUND_PVC2, [ONE_VOL, UNBOUND_PVC], 2, True),
    ("two different unbound PVCs are counted towards the PV limit as two volumes", ANOTHER_UNBOUND_PVC, [ONE_VOL, UNBOUND_PVC], 2, False),
]


@pytest.mark.parametrize(("name", "pod", "existing", "max_vols", "fits"), CASES, ids=[c[0] for c in CASES])
def test_ebs_volume_count_conflicts(name, pod, existing, max_vols, fits, clean_env) -> None:
    """Upstream TestEBSVolumeCountConflicts (KUBE_MAX_PD_VOLS set per row)."""
    clean_env.setenv("KUBE_MAX_PD_VOLS", str(max_vols))
    predicate = new_max_pd_volume_count_predicate("EBS", make_args(make_cluster(pvs=PVS, pvcs=PVCS)))
    assert predicate(pod, metadata(pod), make_node_info(None, existing)) == (fits, [] if fits else ["MaxVolumeCount"])


GET_MAX_VOLS = [
    ("Unable to parse maximum PD volumes value, using default value", "invalid", 39,
     'Unable to parse maximum PD volumes value, using default of 39: strconv.Atoi: parsing "invalid": invalid syntax'),
    ("Maximum PD volumes must be a positive value, using default value", "-2", 39,
     "Maximum PD volumes must be a positive value, using default of 39"),
    ("Parse maximum PD volumes value from env", "40", 40, None),
]


@pytest.mark.parametrize(("name", "raw", "expected", "log"), GET_MAX_VOLS, ids=[c[0] for c in GET_MAX_VOLS])
def test_get_max_vols(name, raw, expected, log, clean_env, caplog) -> None:
    """Upstream TestGetMaxVols, with the logged error texts."""
    clean_env.setenv("KUBE_MAX_PD_VOLS", raw)
    with caplog.at_level(logging.ERROR, logger="policy_scheduler.predicates.volume_count"):
        assert get_max_vols(39) == expected
    assert [r.getMessage() for r in caplog.records] == ([log] if log else [])


@pytest.mark.parametrize(("kind", "default"), [("EBS", 39), ("GCE", 16), ("AzureDisk", 16)])
def test_defaults(kind, default, clean_env) -> None:
    predicate = new_max_pd_volume_count_predicate(kind, make_args())
    assert predicate.max_volumes == default
    assert len(predicate.random_volume_id_prefix) == 32


def test_env_is_read_at_construction(clean_env) -> None:
    clean_env.setenv("KUBE_MAX_PD_VOLS", "1")
    predicate = new_max_pd_volume_count_predicate("GCE", make_args())
    clean_env.setenv("KUBE_MAX_PD_VOLS", "50")
    assert predicate.max_volumes == 1


def gce(name):
    return {"gcePersistentDisk": {"pdName": name}}


def azure(name):
    return {"azureDisk": {"diskName": name}}


@pytest.mark.parametrize(("kind", "make"), [("GCE", gce), ("AzureDisk", azure)])
def test_gce_and_azure_filters(kind, make, clean_env) -> None:
    clean_env.setenv("KUBE_MAX_PD_VOLS", "2")
    pvs = [pv_dict("pv", **make("fromPV")), pv_dict("ebs", **ebs("x"))]
    pvcs = [pvc_dict("c", volume_name="pv"), pvc_dict("e", volume_name="ebs")]
    predicate = new_max_pd_volume_count_predicate(kind, make_args(make_cluster(pvs=pvs, pvcs=pvcs)))
    existing = make_node_info(None, [vols(make("a"), ebs("ignored")), vols(claim("e"))])
    assert predicate(vols(claim("c")), None, existing) == (True, [])
    assert predicate(vols(make("b"), claim("c")), None, existing) == (False, ["MaxVolumeCount"])


def test_unresolvable_claim_counts_for_every_kind(clean_env) -> None:
    clean_env.setenv("KUBE_MAX_PD_VOLS", "1")
    for kind in ("EBS", "GCE", "AzureDisk"):
        predicate = new_max_pd_volume_count_predicate(kind, make_args())
        assert predicate(vols(claim("missing")), None, make_node_info(None, [vols(claim("other"))]))[0] is False


def test_claims_are_namespaced(clean_env) -> None:
    clean_env.setenv("KUBE_MAX_PD_VOLS", "1")
    predicate = new_max_pd_volume_count_predicate("EBS", make_args())
    pod = make_pod(namespace="a", volumes=[claim("c")])
    same = make_pod(namespace="a", volumes=[claim("c")])
    other = make_pod(namespace="b", volumes=[claim("c")])
    assert predicate(pod, None, make_node_info(None, [same]))[0] is True
    assert predicate(pod, None, make_node_info(None, [other]))[0] is False


def test_claim_without_name_is_an_error(clean_env) -> None:
    predicate = new_max_pd_volume_count_predicate("EBS", make_args())
    with pytest.raises(PredicateError, match="^PersistentVolumeClaim had no name$"):
        predicate(vols(claim("")), None, make_node_info())
    with pytest.raises(PredicateError, match="^PersistentVolumeClaim had no name$"):
        predicate(ONE_VOL, None, make_node_info(None, [vols(claim(""))]))


def test_unknown_filter_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="Wrong filterName"):
        new_max_pd_volume_count_predicate("NFS", make_args())

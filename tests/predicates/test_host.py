"""PodFitsHost (registered ``HostName``): upstream ``TestPodFitsHost``, every row."""

from __future__ import annotations

import pytest

from policy_scheduler.errors import PredicateError
from policy_scheduler.predicates import pod_fits_host

from .conftest import make_node, make_node_info, make_pod, metadata

CASES = [
    ("no host specified", make_pod(), "", True),
    ("host matches", make_pod(node_name="foo"), "foo", True),
    ("host doesn't match", make_pod(node_name="bar"), "foo", False),
]


@pytest.mark.parametrize(("name", "pod", "node_name", "fits"), CASES, ids=[c[0] for c in CASES])
def test_pod_fits_host(name, pod, node_name, fits) -> None:
    """Upstream TestPodFitsHost."""
    node_info = make_node_info(make_node(node_name))
    got_fits, reasons = pod_fits_host(pod, metadata(pod), node_info)
    assert got_fits is fits
    assert reasons == ([] if fits else ["HostName"])


def test_no_node_name_needs_no_node() -> None:
    assert pod_fits_host(make_pod(), None, None) == (True, [])


def test_null_node_is_an_error() -> None:
    with pytest.raises(PredicateError, match="^node not found$"):
        pod_fits_host(make_pod(node_name="foo"), None, make_node_info())

"""What the informers store: the API server's objects without managedFields, their keys and short strings shared
(a watch event's object rebuilt, a listed one's strings interned in place)."""

from __future__ import annotations

import json

from policy_scheduler.kube.client.informer import SHARED_STRING_MAX, share_values, shared, trim

POD = {
    "kind": "Pod", "apiVersion": "v1",
    "metadata": {"name": "web-0", "namespace": "default", "uid": "9c67de24-2d6f-44cb-877a-689296118a75",
                 "labels": {"app": "web"},
                 "managedFields": [{"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {}}}],
                 "annotations": {"note": "x" * (SHARED_STRING_MAX + 1)}},
    "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9", "ports": [{"containerPort": 80}]}],
             "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                              "tolerationSeconds": 300}]},
    "status": {"phase": "Pending"},
}


def decoded(name: str) -> dict:
    """The pod as one watch event decodes it: a document of its own."""
    return json.loads(json.dumps({**POD, "metadata": {**POD["metadata"], "name": name}}))


def test_stored_objects_drop_managed_fields_and_keep_everything_else():
    expected = json.loads(json.dumps(POD))
    del expected["metadata"]["managedFields"]
    assert trim(decoded("web-0")) == expected
    assert shared(trim(decoded("web-0"))) == expected
    listed = trim(decoded("web-0"))
    share_values(listed)
    assert listed == expected


def test_objects_decoded_one_by_one_share_their_keys_and_short_strings():
    a, b = shared(trim(decoded("web-0"))), shared(trim(decoded("web-1")))
    keys_a = [k for k in a["spec"]["tolerations"][0]]
    keys_b = [k for k in b["spec"]["tolerations"][0]]
    assert all(x is y for x, y in zip(keys_a, keys_b))
    assert a["spec"]["tolerations"][0]["key"] is b["spec"]["tolerations"][0]["key"]
    assert a["spec"]["containers"][0]["image"] is b["spec"]["containers"][0]["image"]
    assert next(iter(a["metadata"])) is next(iter(b["metadata"]))
    # Long strings (annotations' text, say) are left as they came: interning them would cost more than it saves.
    assert a["metadata"]["annotations"]["note"] == b["metadata"]["annotations"]["note"]
    assert a["metadata"]["annotations"]["note"] is not b["metadata"]["annotations"]["note"]


def test_listed_objects_share_their_short_strings_in_place():
    """A list is one document (its objects share their keys already): only the strings are interned, in place."""
    a, b = decoded("web-0"), decoded("web-1")
    for obj in (a, b):
        share_values(trim(obj))
    assert a["spec"]["tolerations"][0]["key"] is b["spec"]["tolerations"][0]["key"]
    assert a["spec"]["containers"][0]["image"] is b["spec"]["containers"][0]["image"]
    assert a["status"]["phase"] is b["status"]["phase"]
    assert a["metadata"]["annotations"]["note"] is not b["metadata"]["annotations"]["note"]

"""Read a cluster snapshot (the kinds the scheduler reads) from a live API server."""

from __future__ import annotations

from typing import Any

from ...errors import UserError
from ...model.openapi import OpenAPIValidator, resolve_version
from ...offline.snapshot import NO_CHECKS, Checks, Snapshot, load_objects
from .kubeconfig import api_client
from .rest import ApiError, RestClient
from .version import server_line

# kind -> the group versions to list it from, preferred first. Kinds the server may not serve
# (PriorityClass before 1.11 without --runtime-config, PodDisruptionBudget as policy/v1 before 1.21,
# CSINode before 1.17) are tried version by version; a kind no version of which is served is left out.
_LISTS: tuple[tuple[str, tuple[str, ...], str, bool], ...] = (
    # (kind, apiVersions, resource, required)
    ("Node", ("v1",), "nodes", True),
    ("Pod", ("v1",), "pods", True),
    ("Service", ("v1",), "services", True),
    ("ReplicationController", ("v1",), "replicationcontrollers", True),
    ("ReplicaSet", ("apps/v1",), "replicasets", True),
    ("StatefulSet", ("apps/v1",), "statefulsets", True),
    ("PersistentVolume", ("v1",), "persistentvolumes", True),
    ("PersistentVolumeClaim", ("v1",), "persistentvolumeclaims", True),
    ("StorageClass", ("storage.k8s.io/v1",), "storageclasses", True),
    ("CSINode", ("storage.k8s.io/v1",), "csinodes", False),
    # Namespace labels (pod (anti-)affinity namespaceSelector); without them pods' namespaces have no labels.
    ("Namespace", ("v1",), "namespaces", False),
    ("PriorityClass", ("scheduling.k8s.io/v1", "scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha1"),
     "priorityclasses", False),
    ("PodDisruptionBudget", ("policy/v1", "policy/v1beta1"), "poddisruptionbudgets", False),
    # Dynamic resource allocation (served as v1 from 1.34). The templates too: offline, the commands play the
    # resourceclaim controller for pods whose claims it has not made yet.
    ("DeviceClass", ("resource.k8s.io/v1",), "deviceclasses", False),
    ("ResourceSlice", ("resource.k8s.io/v1",), "resourceslices", False),
    ("ResourceClaim", ("resource.k8s.io/v1",), "resourceclaims", False),
    ("ResourceClaimTemplate", ("resource.k8s.io/v1",), "resourceclaimtemplates", False),
)


def read_cluster_snapshot(
    kubeconfig: str | None = None, context: str | None = None, master: str | None = None,
    validate: bool = True, kubernetes_version: str | None = None,
) -> Snapshot:
    """List the kinds the scheduler reads; validate them against ``kubernetes_version``'s schema, by
    default the server's own release (the nearest bundled schema when it has none)."""
    rest = RestClient(api_client(kubeconfig, context, master), qps=1000, burst=1000)
    objects: list[dict[str, Any]] = []
    for kind, api_versions, resource, required in _LISTS:
        for i, api_version in enumerate(api_versions):
            prefix = "/api" if api_version == "v1" else "/apis"
            try:
                items = rest.get(f"{prefix}/{api_version}/{resource}").get("items") or ()
            except ApiError as e:
                if e.not_found and (not required or i + 1 < len(api_versions)):
                    continue
                raise UserError(f"listing {kind}s from {rest.host}: {e}") from None
            # The raw JSON, as the API server sent it: the engine parses it once itself.
            objects.extend({**item, "kind": kind, "apiVersion": api_version} for item in items)
            break
    line = server_line(rest)
    checks = NO_CHECKS
    if validate:
        if kubernetes_version:
            version = resolve_version(kubernetes_version)
        else:  # the server's release, or the nearest bundled schema's; the newest if unreadable
            version = resolve_version(None if line is None else f"{line[0]}.{line[1]}", clamp=True)
        checks = Checks(OpenAPIValidator(version))
    snapshot = load_objects(objects, rest.host, checks)
    snapshot.kubernetes_line = line
    return snapshot


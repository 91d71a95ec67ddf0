"""Read a cluster snapshot (the kinds the scheduler reads) from a live API server."""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from ..errors import UserError
from ..offline.snapshot import Snapshot, load_objects
from .client import api_client

# (kind, apiVersion, api class, list method)
_LISTS = (
    ("Node", "v1", client.CoreV1Api, "list_node"),
    ("Pod", "v1", client.CoreV1Api, "list_pod_for_all_namespaces"),
    ("Service", "v1", client.CoreV1Api, "list_service_for_all_namespaces"),
    ("ReplicationController", "v1", client.CoreV1Api, "list_replication_controller_for_all_namespaces"),
    ("ReplicaSet", "apps/v1", client.AppsV1Api, "list_replica_set_for_all_namespaces"),
    ("StatefulSet", "apps/v1", client.AppsV1Api, "list_stateful_set_for_all_namespaces"),
    ("PersistentVolume", "v1", client.CoreV1Api, "list_persistent_volume"),
    ("PersistentVolumeClaim", "v1", client.CoreV1Api, "list_persistent_volume_claim_for_all_namespaces"),
    ("StorageClass", "storage.k8s.io/v1", client.StorageV1Api, "list_storage_class"),
)


def read_cluster_snapshot(
    kubeconfig: str | None = None, context: str | None = None, master: str | None = None
) -> Snapshot:
    api = api_client(kubeconfig, context, master)
    objects: list[dict[str, Any]] = []
    for kind, api_version, api_class, method in _LISTS:
        try:
            # The raw JSON, as the API server sent it: the engine parses it once itself.
            response = getattr(api_class(api), method)(_preload_content=False)
            items = json.loads(response.data).get("items") or ()
        except ApiException as e:
            raise UserError(f"listing {kind}s from {api.configuration.host}: {e.status} {e.reason}") from None
        except (HTTPError, ValueError) as e:
            raise UserError(f"listing {kind}s from {api.configuration.host}: {e}") from None
        for item in items:
            objects.append({**item, "kind": kind, "apiVersion": api_version})
    return load_objects(objects, api.configuration.host)

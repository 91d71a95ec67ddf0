"""Reading a Policy from its ConfigMap (``--policy-configmap``), for the daemon and for ``migrate``."""

from __future__ import annotations

from typing import Any

from ...algorithm_source import AlgorithmSource
from ...api import load_policy_from_configmap
from ...errors import UserError
from .kubeconfig import api_client
from .rest import ApiError, RestClient


def get_policy_configmap(rest: RestClient, namespace: str, name: str) -> dict[str, Any]:
    """The ConfigMap object; a failure in kube-scheduler's words."""
    try:
        return rest.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
    except ApiError as e:
        raise UserError(f"couldn't get policy config map {namespace}/{name}: {e.message}") from None


def policy_configmap_source(namespace: str, name: str, kubeconfig: str | None = None,
                            context: str | None = None) -> AlgorithmSource:
    """The Policy stored under ``policy.cfg`` of ConfigMap ``namespace/name`` on the API server."""
    rest = RestClient(api_client(kubeconfig, context), qps=0)
    configmap = get_policy_configmap(rest, namespace, name)
    return AlgorithmSource(label=f"ConfigMap {namespace}/{name}", policy=load_policy_from_configmap(configmap))

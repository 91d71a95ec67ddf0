"""The API client delegated authentication and authorization ask with: ``--authentication-kubeconfig`` /
``--authorization-kubeconfig``, else the in-cluster ServiceAccount, else none (upstream's
``RemoteKubeConfigFileOptional``: then tokens are not reviewed, or access not reviewed, with a warning).

Its own connection pool, apart from the scheduler's client: reviews never wait on the scheduling loop's
connections or rate limit, and it on theirs.
"""

from __future__ import annotations

import os

import yaml
from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from ... import __version__
from ...errors import UserError
from ..client.kubeconfig import kubeconfig_syntax_problem, load_kubeconfig

POOL_SIZE = 8
SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"


def delegated_client(kubeconfig: str, flag: str, purpose: str) -> client.ApiClient | None:
    """The client for ``purpose`` (authentication or authorization); None out of a cluster without a kubeconfig."""
    configuration = client.Configuration()
    try:
        if kubeconfig:
            if not os.path.exists(kubeconfig):
                raise UserError(f"--{flag} {kubeconfig}: no such file")
            load_kubeconfig(kubeconfig, None, configuration)
        elif os.environ.get("KUBERNETES_SERVICE_HOST") and os.path.exists(SERVICE_ACCOUNT_TOKEN):
            config.load_incluster_config(client_configuration=configuration)
        else:
            return None
    except UserError:
        raise
    except (ConfigException, OSError, ValueError, TypeError, KeyError, yaml.YAMLError) as exc:
        where = f"--{flag} {kubeconfig}" if kubeconfig else "the in-cluster configuration"
        if isinstance(exc, yaml.YAMLError):
            raise UserError(f"--{flag} {kubeconfig_syntax_problem(kubeconfig, exc)}") from None
        raise UserError(f"{where}: cannot load a client configuration: {exc}") from None
    configuration.connection_pool_maxsize = POOL_SIZE
    configuration.retries = False  # one attempt: a review that cannot be made fails closed at once
    api = client.ApiClient(configuration)
    api.user_agent = f"policy-scheduler/{__version__} delegated-{purpose}"
    return api

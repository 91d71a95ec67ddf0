"""API client configuration: kubeconfig (with context), in-cluster config, ``--master`` override."""

from __future__ import annotations

import os
import threading

import yaml
from kubernetes import client, config
from kubernetes.config import kube_config
from kubernetes.config.config_exception import ConfigException

from ...errors import UserError
from ...syntax import syntax_problem, yaml_problem
from . import credentials

# The client writes a kubeconfig's inline certificates to temporary files it caches by content, and records a
# file's name before writing it: a second thread loading the same kubeconfig meanwhile gets an empty file (seen in
# CI: "no certificate or crl found"). One load at a time in this process.
_KUBECONFIG_LOADING = threading.Lock()


def api_client(
    kubeconfig: str | None = None, context: str | None = None, master: str | None = None, pool_size: int | None = None
) -> client.ApiClient:
    """Build an ApiClient the way kube-scheduler finds its API server.

    An explicit kubeconfig (or ``$KUBECONFIG`` / ``~/.kube/config``) wins; inside a pod the in-cluster
    service account is used; ``master`` overrides the server address either way. ``pool_size`` bounds
    the connections kept open to the server (concurrent binds and watches each hold one).
    """
    configuration = client.Configuration()
    if kubeconfig and not os.path.exists(kubeconfig):
        raise UserError(f"{kubeconfig}: no such file (--kubeconfig)")
    try:
        if kubeconfig or not _in_cluster():
            load_kubeconfig(kubeconfig, context, configuration)
        else:
            config.load_incluster_config(client_configuration=configuration)
    except (ConfigException, OSError) as e:
        if not master:
            raise UserError(f"cannot load a Kubernetes client configuration: {e}") from None
    except yaml.YAMLError as e:  # the client parses the file itself; say what is wrong with it, on one line
        raise UserError(kubeconfig_syntax_problem(kubeconfig, e)) from None
    if master:
        configuration.host = master
    if pool_size:
        configuration.connection_pool_maxsize = pool_size
    return client.ApiClient(configuration)


def load_kubeconfig(kubeconfig: str | None, context: str | None, configuration: client.Configuration) -> None:
    """Load ``kubeconfig`` (None: ``$KUBECONFIG`` or ``~/.kube/config``) into ``configuration``, one load at a time,
    its inline certificates and keys kept in memory (:mod:`.credentials`)."""
    with _KUBECONFIG_LOADING:
        config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration,
                                temp_file_path=credentials.directory())
        credentials.keep_in_memory(configuration)


def kubeconfig_syntax_problem(kubeconfig: str | None, error: yaml.YAMLError) -> str:
    """``<file>: invalid YAML: ...`` for the kubeconfig file (of ``$KUBECONFIG``'s list, the first) that does not
    parse, in its format (:mod:`policy_scheduler.syntax`)."""
    paths = [kubeconfig] if kubeconfig else kube_config.KUBE_CONFIG_DEFAULT_LOCATION.split(os.pathsep)
    for path in (os.path.expanduser(p) for p in paths if p):
        try:
            with open(path, encoding="utf-8") as handle:
                problem = syntax_problem(handle.read(), path)
        except (OSError, UnicodeDecodeError):
            continue
        if problem:
            return f"{path}: {problem}"
    return f"{kubeconfig or kube_config.KUBE_CONFIG_DEFAULT_LOCATION}: invalid YAML: {yaml_problem(error)}"


def _in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and os.path.exists(
        "/var/run/secrets/kubernetes.io/serviceaccount/token"
    )

"""The Kubernetes line of an API server (``/version``): which upstream release's wording the cluster's rules
use for that cluster (:data:`policy_scheduler.features.KubernetesLine`). The daemon reads it once at start,
``--from-cluster`` once per snapshot."""

from __future__ import annotations

import logging

from ...features import KubernetesLine, parse_line
from .rest import ApiError, RestClient

log = logging.getLogger(__name__)


def server_line(rest: RestClient) -> KubernetesLine | None:
    """The server's line from ``/version`` (``major`` ``"1"``, ``minor`` ``"36"``, or ``"36+"`` as some
    providers write it); None, logged, when it cannot be read (callers then use the newest line)."""
    try:
        info = rest.get("/version")
        line = parse_line(info["major"], info["minor"])
    except (ApiError, KeyError, TypeError) as e:
        log.info("cannot read the version of %s (%s): the newest line's schema and wording", rest.host, e)
        return None
    if line is None:
        log.info("cannot read the version of %s (%r): the newest line's schema and wording", rest.host, info)
    return line

"""Serving the daemon's endpoints as kube-scheduler does since 1.23: HTTPS with the cluster's own
authentication and authorization (delegated to the API server), and 1.9's plain-HTTP port only when asked for.
The listener (:mod:`.server`) answers the health checks (:mod:`.healthz`), ``/metrics``, ``/configz`` and the
pprof pages (:mod:`.pprof`); :mod:`.endpoints` builds the listeners with their TLS, certificates and guard.
See ``docs/running.md`` ("Security")."""

from .endpoints import Endpoints, HealthChecks

__all__ = ["Endpoints", "HealthChecks"]

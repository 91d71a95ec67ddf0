"""Delegated authorization, as upstream's ``DelegatingAuthorizationOptions`` builds it for kube-scheduler: the
``--authorization-always-allow-paths`` (exact, or a prefix ending in ``*``) and the groups always allowed
(``system:masters``) pass without a review; anything else is a ``SubjectAccessReview`` of the non-resource path
and verb, through the official client, answers cached (allowed ``--authorization-webhook-cache-authorized-ttl``,
denied ``--authorization-webhook-cache-unauthorized-ttl``).

A review that cannot be made fails closed: :class:`AuthorizationUnavailable` (upstream answers 500), never
cached, one attempt (no retries: a scrape waits for at most one request timeout).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kubernetes import client

from .authn import UserInfo, brief_error
from .ttlcache import TTLCache

log = logging.getLogger(__name__)

REVIEW_TIMEOUT = (5.0, 10.0)


class AuthorizationUnavailable(Exception):
    """The access review could not be made."""


class PathMatcher:
    """Upstream's ``path.NewAuthorizer``: exact paths and ``prefix*``; a leading ``/`` is optional on both sides."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.exact: set[str] = set()
        self.prefixes: list[str] = []
        for path in paths:
            path = path.lstrip("/")
            if path.endswith("*"):
                self.prefixes.append(path[:-1])
            else:
                self.exact.add(path)

    def matches(self, path: str) -> bool:
        path = path.lstrip("/")
        return path in self.exact or any(path.startswith(prefix) for prefix in self.prefixes)


class DelegatingAuthorizer:
    def __init__(self, api: client.ApiClient | None, *, always_allow_paths: Iterable[str] = (),
                 always_allow_groups: Iterable[str] = (), allowed_ttl: float = 10.0,
                 denied_ttl: float = 10.0) -> None:
        self.api = client.AuthorizationV1Api(api) if api is not None else None
        self.paths = PathMatcher(always_allow_paths)
        self.groups = frozenset(always_allow_groups)
        self.allowed_ttl, self.denied_ttl = allowed_ttl, denied_ttl
        self._cache: TTLCache[tuple[bool, str]] = TTLCache()

    def authorize(self, user: UserInfo, verb: str, path: str) -> tuple[bool, str]:
        """(allowed, reason) for ``user`` doing ``verb`` on the non-resource ``path``; AuthorizationUnavailable
        when it takes a review that cannot be made."""
        if self.paths.matches(path) or self.groups.intersection(user.groups):
            return True, ""
        if self.api is None:  # no authorization kubeconfig out of a cluster: no one else is allowed
            return False, "no authorizer is configured (--authorization-kubeconfig)"
        key = (user.name, user.uid, user.groups, tuple(sorted(user.extra.items())), verb, path)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        answer = self._ask(user, verb, path)
        self._cache.put(key, answer, self.allowed_ttl if answer[0] else self.denied_ttl)
        return answer

    def _ask(self, user: UserInfo, verb: str, path: str) -> tuple[bool, str]:
        assert self.api is not None
        spec = client.V1SubjectAccessReviewSpec(
            user=user.name, uid=user.uid or None, groups=list(user.groups) or None,
            extra={k: list(v) for k, v in user.extra.items()} or None,
            non_resource_attributes=client.V1NonResourceAttributes(path=path, verb=verb))
        try:
            status = self.api.create_subject_access_review(client.V1SubjectAccessReview(spec=spec),
                                                           _request_timeout=REVIEW_TIMEOUT).status
        except Exception as exc:  # the API server away or refusing: fail closed (not cached)
            log.warning("access review failed: %s", brief_error(exc))
            raise AuthorizationUnavailable("the access review could not be made") from None
        return bool(status is not None and status.allowed), (status.reason or "") if status is not None else ""

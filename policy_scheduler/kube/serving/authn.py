"""Delegated authentication, as upstream's ``DelegatingAuthenticatorConfig`` builds it for kube-scheduler:

1. a client certificate, verified against the client CA in the TLS handshake: the user is its CommonName and
   the groups its Organizations (``x509.CommonNameUserConversion``);
2. a bearer token, reviewed by the API server (``TokenReview``, through the official client), answers cached for
   ``--authentication-token-webhook-cache-ttl``; a token the API server does not authenticate, or cannot review,
   fails the request (401), as upstream's bearer-token authenticator does, whatever the path;
3. otherwise the request is anonymous: ``system:anonymous`` in ``system:unauthenticated``.

Authenticated users get the group ``system:authenticated``. Without a client for reviews a token is ignored
(the request is anonymous), as upstream without an authentication kubeconfig. Tokens are never logged; the
cache keys them by their SHA-256.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from cryptography import x509
from cryptography.x509.oid import NameOID
from kubernetes import client

from .ttlcache import TTLCache

log = logging.getLogger(__name__)

ANONYMOUS_USER = "system:anonymous"
UNAUTHENTICATED_GROUP = "system:unauthenticated"
AUTHENTICATED_GROUP = "system:authenticated"
REVIEW_TIMEOUT = (5.0, 10.0)  # connect, read (seconds); upstream's TokenRequestTimeout is 10 s


@dataclass(frozen=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def authenticated(self) -> UserInfo:
        """With ``system:authenticated`` added (upstream's ``AuthenticatedGroupAdder``)."""
        if AUTHENTICATED_GROUP in self.groups:
            return self
        return UserInfo(self.name, self.uid, (*self.groups, AUTHENTICATED_GROUP), self.extra)


ANONYMOUS = UserInfo(ANONYMOUS_USER, groups=(UNAUTHENTICATED_GROUP,))


class AuthenticationFailed(Exception):
    """The request carries credentials that do not authenticate it (or that could not be checked): 401."""


class TokenReviewer:
    """``TokenReview`` through the API server, answers cached (reviews that fail are not)."""

    def __init__(self, api: client.ApiClient, ttl: float) -> None:
        self.api = client.AuthenticationV1Api(api)
        self.ttl = ttl
        self._cache: TTLCache[UserInfo | str] = TTLCache()

    def review(self, token: str) -> UserInfo:
        """The token's user; AuthenticationFailed when it is not authenticated or the review cannot be made."""
        key = hashlib.sha256(token.encode()).digest()
        cached = self._cache.get(key)
        if cached is None:
            cached = self._ask(token)
            self._cache.put(key, cached, self.ttl)
        if isinstance(cached, str):
            raise AuthenticationFailed(cached)
        return cached

    def _ask(self, token: str) -> UserInfo | str:
        body = client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token))
        try:
            status = self.api.create_token_review(body, _request_timeout=REVIEW_TIMEOUT).status
        except Exception as exc:  # the API server away or refusing: fail closed (not cached)
            log.warning("token review failed: %s", brief_error(exc))
            raise AuthenticationFailed("the token review could not be made") from None
        if status is None or not status.authenticated or status.user is None:
            return (status.error if status is not None and status.error else "") or "invalid bearer token"
        user = status.user
        return UserInfo(user.username or "", user.uid or "", tuple(user.groups or ()),
                        {k: tuple(v or ()) for k, v in (user.extra or {}).items()})


class DelegatingAuthenticator:
    def __init__(self, reviewer: TokenReviewer | None) -> None:
        self.reviewer = reviewer

    def authenticate(self, authorization: str | None, peer_certificate: bytes | None) -> UserInfo:
        """The request's user from its ``Authorization`` header and its verified client certificate (DER)."""
        if peer_certificate:
            user = certificate_user(peer_certificate)
            if user is not None:
                return user.authenticated()
        token = bearer_token(authorization)
        if token is not None and self.reviewer is not None:
            return self.reviewer.review(token).authenticated()
        return ANONYMOUS


def bearer_token(header: str | None) -> str | None:
    """The token of ``Authorization: Bearer <token>`` (upstream's ``bearertoken`` parsing); None without one."""
    parts = (header or "").strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


def certificate_user(der: bytes) -> UserInfo | None:
    """CommonName and Organizations of a client certificate; None when it has no CommonName."""
    try:
        subject = x509.load_der_x509_certificate(der).subject
    except ValueError:
        return None
    names = [str(a.value) for a in subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    if not names or not names[0]:
        return None
    groups = tuple(str(a.value) for a in subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME))
    return UserInfo(names[0], groups=groups)


def brief_error(exc: Exception) -> str:
    """An error in a few words (an ApiException's status and reason, not its headers and body)."""
    status = getattr(exc, "status", None)
    if status:
        return f"{status} {getattr(exc, 'reason', '')}".strip()
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]

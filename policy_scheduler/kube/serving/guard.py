"""The secure port's filter in front of every path: authenticate, then authorize the non-resource request,
answering refusals as upstream's handler chain does (the same status codes, the same ``Status`` bodies):

- 401 ``Unauthorized``: credentials that do not authenticate (or cannot be checked), on any path;
- 403 ``forbidden: User "<name>" cannot <verb> path "<path>"``: not allowed;
- 500: the access review could not be made (fail closed; upstream's ``InternalError``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from http import HTTPStatus

from .authn import AuthenticationFailed, DelegatingAuthenticator
from .authz import AuthorizationUnavailable, DelegatingAuthorizer

log = logging.getLogger(__name__)

JSON = "application/json"
TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class Refusal:
    status: int
    content_type: str
    body: bytes


class RequestGuard:
    def __init__(self, authenticator: DelegatingAuthenticator, authorizer: DelegatingAuthorizer) -> None:
        self.authenticator = authenticator
        self.authorizer = authorizer

    def admit(self, method: str, path: str, authorization: str | None,
              peer_certificate: bytes | None) -> Refusal | None:
        """None when the request may be served; else the answer to send instead."""
        try:
            user = self.authenticator.authenticate(authorization, peer_certificate)
        except AuthenticationFailed as exc:
            log.debug("unable to authenticate a request for %s: %s", path, exc)
            return _status(HTTPStatus.UNAUTHORIZED, "Unauthorized", "Unauthorized")
        verb = method.lower()
        try:
            allowed, reason = self.authorizer.authorize(user, verb, path)
        except AuthorizationUnavailable as exc:
            return Refusal(HTTPStatus.INTERNAL_SERVER_ERROR, TEXT,
                           f"Internal Server Error: {json.dumps(path)}: {exc}\n".encode())
        if allowed:
            return None
        message = f"forbidden: User {json.dumps(user.name)} cannot {verb} path {json.dumps(path)}"
        log.debug("refused %s %s to %s (not allowed)%s", verb, path, user.name, f": {reason}" if reason else "")
        return _status(HTTPStatus.FORBIDDEN, "Forbidden", message + (f": {reason}" if reason else ""), details=True)


def _status(code: int, reason: str, message: str, details: bool = False) -> Refusal:
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
              "reason": reason, **({"details": {}} if details else {}), "code": code}
    return Refusal(code, JSON, (json.dumps(status, indent=2) + "\n").encode())

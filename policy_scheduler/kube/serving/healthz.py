"""The health endpoints' answers, as the apiserver's healthz package gives them: ``/healthz``, ``/livez`` and
``/readyz``, each with ``?verbose``, and ``/<endpoint>/<check>`` for one check. Every endpoint has the ``ping``
check; a check answers None when healthy, else the reason, and a check that raises fails with the exception.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from http import HTTPStatus

log = logging.getLogger(__name__)

PING = "ping"
HEALTH_ENDPOINTS = ("healthz", "livez", "readyz")
TEXT = "text/plain; charset=utf-8"

Check = Callable[[], str | None]


def ping() -> str | None:
    return None


def not_found() -> tuple[int, str, bytes]:
    return HTTPStatus.NOT_FOUND, TEXT, b"404 page not found\n"


def aggregate(endpoint: str, checks: Mapping[str, Check], verbose: bool) -> tuple[int, str, bytes]:
    """Answer ``/<endpoint>``: (status, content type, body)."""
    # healthz.go handleRootHealthz: any failure -> 500 listing every check with the reason withheld
    # (the endpoint is public); ?verbose shows the reasons (1.9 withholds them there too).
    lines: list[str] = []
    failed = False
    for name, check in checks.items():
        reason = _run_check(name, check)
        if reason is None:
            lines.append(f"[+]{name} ok\n")
        else:
            failed = True
            lines.append(f"[-]{name} failed: {reason if verbose else 'reason withheld'}\n")
    if failed:
        return (
            HTTPStatus.INTERNAL_SERVER_ERROR,
            TEXT,
            ("".join(lines) + f"{endpoint} check failed\n").encode(),
        )
    if not verbose:
        return HTTPStatus.OK, TEXT, b"ok"
    return HTTPStatus.OK, TEXT, ("".join(lines) + f"{endpoint} check passed\n").encode()


def single_check(checks: Mapping[str, Check], name: str) -> tuple[int, str, bytes]:
    """Answer ``/<endpoint>/<name>``: (status, content type, body); 404 for a check that is not there."""
    check = checks.get(name)
    if check is None:
        return not_found()
    reason = _run_check(name, check)
    if reason is None:
        return HTTPStatus.OK, TEXT, b"ok"
    return HTTPStatus.INTERNAL_SERVER_ERROR, TEXT, f"internal server error: {reason}\n".encode()


def _run_check(name: str, check: Check) -> str | None:
    try:
        return check()
    except Exception as e:  # a raising check is a failing check
        log.debug("healthz check %s raised", name, exc_info=True)
        return f"{type(e).__name__}: {e}"

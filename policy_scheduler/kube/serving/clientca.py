"""The client CA: the authorities client certificates are verified against, and a version that changes with
them. From ``--client-ca-file`` (read again when the file changes), or from the cluster: the key
``client-ca-file`` of ConfigMap ``kube-system/extension-apiserver-authentication``, which kube-apiserver keeps,
listed and then watched (upstream's ``DynamicCAFromConfigMapController``).

A bundle that does not parse leaves the previous one in force (logged). No bundle: client certificates are not
asked for.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from cryptography import x509
from kubernetes import client

from ...errors import UserError
from ..client.rest import ApiError, RestClient, WatchStream

log = logging.getLogger(__name__)

NAMESPACE = "kube-system"
CONFIGMAP = "extension-apiserver-authentication"
KEY = "client-ca-file"
REQUEST_TIMEOUT = (5.0, 10.0)  # connect, read (seconds) for the look-up
WATCH_SECONDS = 60  # a watch is renewed this often (its stop is noticed at the latest then)
RETRY_MAX = 30.0


def _checked(pem: bytes | None, source: str) -> bytes | None:
    """The bundle if it holds at least one certificate; ValueError otherwise."""
    if not pem or not pem.strip():
        return None
    try:
        x509.load_pem_x509_certificates(pem)
    except ValueError:
        raise ValueError(f"{source}: no PEM certificate could be read") from None
    return pem


class FileClientCA:
    """``--client-ca-file``: checked at start (UserError), then followed."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._version = 0
        self._signature = self._stat()
        try:
            self._pem = _checked(self._read(), f"--client-ca-file {path}")
        except (OSError, ValueError) as exc:
            message = f"--client-ca-file {path}: {(exc.strerror or str(exc)).lower()}" if isinstance(
                exc, OSError) else str(exc)
            raise UserError(message) from None
        if self._pem is None:
            raise UserError(f"--client-ca-file {path}: no PEM certificate could be read")

    def bundle(self) -> tuple[bytes | None, int]:
        with self._lock:
            signature = self._stat()
            if signature != self._signature:
                self._signature = signature
                try:
                    pem = _checked(self._read(), f"--client-ca-file {self.path}")
                except (OSError, ValueError) as exc:
                    log.warning("client CA file changed but cannot be used (the previous CA stays): %s", exc)
                else:
                    if pem is not None and pem != self._pem:
                        self._pem, self._version = pem, self._version + 1
                        log.info("client CA reloaded from %s", self.path)
            return self._pem, self._version

    def start(self) -> None:
        """(Nothing runs: the file is looked at on each connection.)"""

    def stop(self) -> None:
        """(Nothing to stop.)"""

    def _read(self) -> bytes:
        with open(self.path, "rb") as handle:
            return handle.read()

    def _stat(self) -> tuple:
        try:
            st = os.stat(self.path)
        except OSError as exc:
            return (exc.errno,)
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class ConfigMapClientCA:
    """The cluster's client CA, followed from the ConfigMap by a background list-and-watch (raw JSON through the
    official client's REST layer: the generated core models cost seconds to import)."""

    def __init__(self, api: client.ApiClient, namespace: str = NAMESPACE, name: str = CONFIGMAP,
                 key: str = KEY) -> None:
        self.rest = RestClient(api, qps=0, burst=1, timeout=REQUEST_TIMEOUT[1],
                               user_agent=api.user_agent or "policy-scheduler")
        self.namespace, self.name, self.key = namespace, name, key
        self._lock = threading.Lock()
        self._pem: bytes | None = None
        self._version = 0
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._stream: WatchStream | None = None

    @property
    def source(self) -> str:
        return f"configmap/{self.name} in {self.namespace} ({self.key})"

    @property
    def _path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/configmaps"

    def bundle(self) -> tuple[bytes | None, int]:
        with self._lock:
            return self._pem, self._version

    def lookup(self) -> None:
        """Read the ConfigMap once now; raises ApiError. A missing ConfigMap or key is no error: no client CA
        (yet)."""
        try:
            configmap = self.rest.get(f"{self._path}/{self.name}", timeout=REQUEST_TIMEOUT)
        except ApiError as exc:
            if not exc.not_found:
                raise
            log.warning("%s not found: client certificate authentication is off until it appears", self.source)
            return
        self._update(configmap)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._follow, name="client-ca", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        stream = self._stream
        if stream is not None:
            stream.close()

    def _update(self, configmap: dict[str, Any] | None) -> None:
        text = ((configmap or {}).get("data") or {}).get(self.key)
        try:
            pem = _checked(text.encode() if text else None, self.source)
        except ValueError as exc:
            log.warning("%s (the previous client CA stays)", exc)
            return
        with self._lock:
            if pem != self._pem:
                self._pem, self._version = pem, self._version + 1
                log.info("client CA %s from %s", "loaded" if pem else "removed", self.source)

    def _follow(self) -> None:
        delay = 1.0
        selector = {"fieldSelector": f"metadata.name={self.name}"}
        while not self._stopping.is_set():
            try:
                listed = self.rest.get(self._path, selector, timeout=REQUEST_TIMEOUT)
                items = listed.get("items") or []
                self._update(items[0] if items else None)
                query = {**selector, "resourceVersion": listed["metadata"]["resourceVersion"],
                         "timeoutSeconds": WATCH_SECONDS, "allowWatchBookmarks": "true"}
                self._stream = self.rest.watch(self._path, query, read_timeout=WATCH_SECONDS + 10)
                for event in self._stream:
                    if self._stopping.is_set():
                        return
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        self._update(event.get("object"))
                    elif event.get("type") == "DELETED":
                        self._update(None)
                    elif event.get("type") == "ERROR":  # 410 Gone and the like: list again
                        break
                delay = 1.0
            except (ApiError, KeyError, TypeError) as exc:  # the API server away: list again after a pause
                if self._stopping.is_set():
                    return
                log.debug("following %s: %s; retrying in %.0fs", self.source, exc, delay)
                self._stopping.wait(delay)
                delay = min(delay * 2, RETRY_MAX)

"""The serving certificate: a key pair checked with ``cryptography`` (the chain parses, the key is unencrypted
and matches the leaf), read from ``--tls-cert-file`` / ``--tls-private-key-file`` and read again when the files
change (upstream's ``DynamicServingContentFromFiles``), or fixed (the self-signed one made in memory).

A change is noticed on the next connection (one ``stat`` per file); files that do not make a valid pair (a
rotation half done) leave the previous pair in use, with one warning per state of the files.
"""

from __future__ import annotations

import datetime
import logging
import os
import threading
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes

from ...errors import UserError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KeyPair:
    cert_pem: bytes
    key_pem: bytes
    subject: str
    not_after: datetime.datetime

    @classmethod
    def parse(cls, cert_pem: bytes, key_pem: bytes, source: str) -> KeyPair:
        """Check the pair; UserError naming ``source`` when the chain or key is unreadable or they do not match."""
        try:
            chain = x509.load_pem_x509_certificates(cert_pem)
        except ValueError:
            raise UserError(f"{source}: no PEM certificate could be read") from None
        key = _private_key(key_pem, source)
        public = serialization.PublicFormat.SubjectPublicKeyInfo
        if chain[0].public_key().public_bytes(serialization.Encoding.DER, public) != key.public_key().public_bytes(
                serialization.Encoding.DER, public):
            raise UserError(f"{source}: the private key does not match the certificate's public key")
        leaf = chain[0]
        return cls(cert_pem, key_pem, leaf.subject.rfc4514_string(), leaf.not_valid_after_utc)


def _private_key(key_pem: bytes, source: str) -> PrivateKeyTypes:
    try:
        return serialization.load_pem_private_key(key_pem, password=None)
    except TypeError:
        raise UserError(f"{source}: the private key is encrypted (give an unencrypted key)") from None
    except ValueError:
        raise UserError(f"{source}: no PEM private key could be read") from None
    except UnsupportedAlgorithm as exc:
        raise UserError(f"{source}: the private key could not be read: {exc}") from None


FILE_FLAGS = ("--tls-cert-file", "--tls-private-key-file")


def read_key_pair(cert_file: str, key_file: str, flags: tuple[str, str] = FILE_FLAGS) -> KeyPair:
    """The pair in the two files; UserError naming the flags (that gave them) and the files."""
    cert_pem = _read(cert_file, flags[0])
    key_pem = _read(key_file, flags[1])
    source = (f"{flags[0]} {cert_file}, {flags[1]} {key_file}" if flags[0] != flags[1]
              else f"{flags[0]}: {cert_file}, {key_file}")
    return KeyPair.parse(cert_pem, key_pem, source)


def _read(path: str, flag: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise UserError(f"{flag} {path}: {(exc.strerror or str(exc)).lower()}") from None


class ServingCertificate:
    """The key pair in force and a version number that changes with it."""

    def __init__(self, pair: KeyPair, files: tuple[str, str] | None = None,
                 flags: tuple[str, str] = FILE_FLAGS) -> None:
        self._pair = pair
        self._files = files
        self._flags = flags
        self._version = 0
        self._lock = threading.Lock()
        self._seen = self._signature() if files else None
        self._rejected: tuple | None = None

    @classmethod
    def from_files(cls, cert_file: str, key_file: str, flags: tuple[str, str] = FILE_FLAGS) -> ServingCertificate:
        """Read and check the files now (UserError at start, naming ``flags``), then follow them."""
        return cls(read_key_pair(cert_file, key_file, flags), (cert_file, key_file), flags)

    @classmethod
    def fixed(cls, pair: KeyPair) -> ServingCertificate:
        return cls(pair)

    @property
    def files(self) -> tuple[str, str] | None:
        return self._files

    def current(self) -> tuple[KeyPair, int]:
        """The pair to serve now (the files read again if they changed since the last look), and its version."""
        if self._files is None:
            return self._pair, self._version
        with self._lock:
            signature = self._signature()
            if signature != self._seen and signature != self._rejected:
                try:
                    pair = read_key_pair(*self._files, self._flags)
                except UserError as exc:
                    self._rejected = signature
                    log.warning("the serving certificate files changed but cannot be used (the previous "
                                "certificate stays in use): %s", exc)
                else:
                    self._pair, self._seen, self._rejected = pair, signature, None
                    self._version += 1
                    log.info("serving certificate reloaded from %s: %s, valid until %s", self._files[0],
                             pair.subject, pair.not_after.isoformat())
            return self._pair, self._version

    def _signature(self) -> tuple:
        """What identifies the files' content without reading them (a renamed-in replacement changes the inode)."""
        assert self._files is not None
        out = []
        for path in self._files:
            try:
                st = os.stat(path)
                out.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
            except OSError as exc:
                out.append((exc.errno,))
        return tuple(out)

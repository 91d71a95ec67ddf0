"""Certificates for the tests, made with ``cryptography``: a client CA (given to an API server with
``--client-ca-file``, or to the daemon directly) and the client certificates it signs, and HTTPS client
contexts for the schedulers' secure ports (their serving certificates are self-signed: not verified here)."""

from __future__ import annotations

import atexit
import datetime
import shutil
import ssl
import tempfile
import threading
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

#: The client certificate the test helpers read /metrics with: in system:masters, which delegated authorization
#: allows without a review, so reading it never depends on the API server (whose faults some tests inject).
SCRAPER = ("test-scraper", ("system:masters",))


def _name(cn: str, groups: tuple[str, ...] = ()) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]
                     + [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group) for group in groups])


def _pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


class TestPKI:
    """A CA in ``directory`` (``ca.crt``, ``ca.key``) and the client certificates it issues (PEM files holding the
    certificate and its key, one per subject)."""

    __test__ = False  # (not a test class)

    def __init__(self, directory: Path, name: str = "test client CA") -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        self.cert = (x509.CertificateBuilder().subject_name(_name(name)).issuer_name(_name(name))
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .sign(self.key, hashes.SHA256()))
        self.ca_path = directory / "ca.crt"
        self.ca_path.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))
        (directory / "ca.key").write_bytes(_pem(self.key))
        self._issued: dict[tuple[str, tuple[str, ...]], Path] = {}
        self._lock = threading.Lock()

    def client_certificate(self, cn: str, groups: tuple[str, ...] = ()) -> Path:
        """A PEM file with a client certificate for user ``cn`` in ``groups`` and its key."""
        with self._lock:
            path = self._issued.get((cn, groups))
            if path is None:
                key = ec.generate_private_key(ec.SECP256R1())
                now = datetime.datetime.now(datetime.timezone.utc)
                cert = (x509.CertificateBuilder().subject_name(_name(cn, groups)).issuer_name(self.cert.subject)
                        .public_key(key.public_key()).serial_number(x509.random_serial_number())
                        .not_valid_before(now - datetime.timedelta(hours=1))
                        .not_valid_after(now + datetime.timedelta(days=1))
                        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                        .sign(self.key, hashes.SHA256()))
                path = self.directory / f"client-{len(self._issued)}.pem"
                path.write_bytes(cert.public_bytes(serialization.Encoding.PEM) + _pem(key))
                self._issued[(cn, groups)] = path
            return path


def client_context(certificate: Path | None = None) -> ssl.SSLContext:
    """An HTTPS client context that does not verify the server (a self-signed serving certificate), presenting
    ``certificate`` when given."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if certificate is not None:
        context.load_cert_chain(certificate)
    return context


_shared: TestPKI | None = None
_shared_lock = threading.Lock()


def shared_pki() -> TestPKI:
    """This process's PKI (made once, removed at exit)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            directory = Path(tempfile.mkdtemp(prefix="policy-scheduler-pki-"))
            atexit.register(shutil.rmtree, directory, True)
            _shared = TestPKI(directory)
        return _shared

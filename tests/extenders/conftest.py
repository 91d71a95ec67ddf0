"""The example extender on 127.0.0.1 (HTTP and HTTPS), certificates made for the test, small clusters."""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from examples.extender.server import ExampleExtender, ExtenderServer, tls_context


@dataclass
class Certs:
    """A CA, a server certificate for 127.0.0.1 and ``extender.example``, a client certificate (PEM files)."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _issue(subject: str, issuer_key, issuer: x509.Name, *, ca: bool = False, san: list | None = None,
           client: bool = False):
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(issuer)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
            decipher_only=False), critical=True)
        builder = builder.add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
    if client:
        builder = builder.add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    cert = builder.sign(issuer_key or key, hashes.SHA256())
    return key, cert


def _write(directory: Path, name: str, key, cert) -> tuple[Path, Path]:
    cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@pytest.fixture(scope="session")
def certs(tmp_path_factory) -> Certs:
    directory = tmp_path_factory.mktemp("certs")
    ca_key, ca_cert = _issue("test extender CA", None, _name("test extender CA"), ca=True)
    ca_path, _ = _write(directory, "ca", ca_key, ca_cert)
    server_key, server_cert = _issue("example extender", ca_key, ca_cert.subject, san=[
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("extender.example")])
    server_cert_path, server_key_path = _write(directory, "server", server_key, server_cert)
    client_key, client_cert = _issue("policy-scheduler", ca_key, ca_cert.subject, client=True)
    client_cert_path, client_key_path = _write(directory, "client", client_key, client_cert)
    other_key, other_cert = _issue("another CA", None, _name("another CA"), ca=True)
    other_path, _ = _write(directory, "other-ca", other_key, other_cert)
    return Certs(ca_path, server_cert_path, server_key_path, client_cert_path, client_key_path, other_path)


@pytest.fixture
def server() -> Iterator[ExtenderServer]:
    """The example extender over plain HTTP on 127.0.0.1."""
    s = ExtenderServer(("127.0.0.1", 0), ExampleExtender()).start()
    yield s
    s.stop()


@pytest.fixture
def https_server(certs: Certs) -> Iterator[ExtenderServer]:
    """The example extender over HTTPS (the test CA's server certificate)."""
    s = ExtenderServer(("127.0.0.1", 0), ExampleExtender(), tls_context(str(certs.server_cert),
                                                                      str(certs.server_key))).start()
    yield s
    s.stop()


@pytest.fixture
def mtls_server(certs: Certs) -> Iterator[ExtenderServer]:
    """HTTPS that requires a client certificate from the test CA."""
    context = tls_context(str(certs.server_cert), str(certs.server_key), str(certs.ca))
    s = ExtenderServer(("127.0.0.1", 0), ExampleExtender(), context).start()
    yield s
    s.stop()

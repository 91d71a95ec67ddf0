"""The self-signed serving certificate made at start when no certificate files are given, as upstream's
``GenerateSelfSignedCertKey``: a CA (``<host>-ca@<unix time>``) and a serving certificate it signs
(``<host>@<unix time>``, server auth, valid from an hour ago for a year), RSA 2048, the chain served leaf first.

Kept in memory, or with ``--cert-dir`` in ``<dir>/policy-scheduler.crt`` and ``.key`` (made once, reused at the
next start, and then followed like any certificate files).
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import os
from collections.abc import Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ...errors import UserError
from .certificates import KeyPair, ServingCertificate

log = logging.getLogger(__name__)

PAIR_NAME = "policy-scheduler"
VALIDITY = datetime.timedelta(days=365)
BACKDATE = datetime.timedelta(hours=1)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def self_signed(host: str, ips: Sequence[IPAddress] = (), dns: Sequence[str] = ()) -> KeyPair:
    """A CA and a serving certificate for ``host`` (a name or an IP), the ``ips`` and the ``dns`` names."""
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp = int(now.timestamp())
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}-ca@{stamp}")])
    ca = (_builder(ca_name, ca_name, ca_key.public_key(), now)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(_usage(cert_sign=True), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    names: list[x509.GeneralName] = []
    try:
        names.append(x509.IPAddress(ipaddress.ip_address(host)))
    except ValueError:
        names.append(x509.DNSName(host))
    names += [x509.IPAddress(ip) for ip in ips] + [x509.DNSName(name) for name in dns]
    leaf = (_builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{stamp}")]), ca_name,
                     key.public_key(), now)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_usage(cert_sign=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName(_unique(names)), critical=False)
            .sign(ca_key, hashes.SHA256()))
    cert_pem = leaf.public_bytes(serialization.Encoding.PEM) + ca.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    return KeyPair.parse(cert_pem, key_pem, "the self-signed certificate")


def _builder(subject: x509.Name, issuer: x509.Name, public_key: rsa.RSAPublicKey,
             now: datetime.datetime) -> x509.CertificateBuilder:
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
            .serial_number(x509.random_serial_number()).not_valid_before(now - BACKDATE)
            .not_valid_after(now + VALIDITY))


def _usage(cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=True, key_encipherment=True, key_cert_sign=cert_sign,
                         content_commitment=False, data_encipherment=False, key_agreement=False, crl_sign=False,
                         encipher_only=False, decipher_only=False)


def _unique(names: list[x509.GeneralName]) -> list[x509.GeneralName]:
    out: list[x509.GeneralName] = []
    for name in names:
        if name not in out:
            out.append(name)
    return out


def default_serving_certificate(bind_address: str, cert_dir: str) -> ServingCertificate:
    """kube-scheduler's default: for ``localhost`` and 127.0.0.1, plus the bind address (or the name localhost
    when it binds every interface); in memory, or kept in ``cert_dir``."""
    ip = ipaddress.ip_address(bind_address)
    ips: list[IPAddress] = [ipaddress.ip_address("127.0.0.1")]
    dns: list[str] = []
    if ip.is_unspecified:
        dns.append("localhost")
    else:
        ips.append(ip)
    if not cert_dir:
        pair = self_signed("localhost", ips, dns)
        log.info("generated a self-signed serving certificate in memory: %s", pair.subject)
        return ServingCertificate.fixed(pair)
    cert_file, key_file = (os.path.join(cert_dir, f"{PAIR_NAME}.{ext}") for ext in ("crt", "key"))
    if not (os.access(cert_file, os.R_OK) and os.access(key_file, os.R_OK)):
        pair = self_signed("localhost", ips, dns)
        try:
            os.makedirs(cert_dir, mode=0o755, exist_ok=True)
            _write(cert_file, pair.cert_pem, 0o644)
            _write(key_file, pair.key_pem, 0o600)
        except OSError as exc:
            raise UserError(f"--cert-dir {cert_dir}: cannot write the self-signed certificate: "
                            f"{(exc.strerror or str(exc)).lower()}") from None
        log.info("generated a self-signed serving certificate (%s, %s)", cert_file, key_file)
    return ServingCertificate.from_files(cert_file, key_file, ("--cert-dir", "--cert-dir"))


def _write(path: str, data: bytes, mode: int) -> None:
    """Write through a temporary file renamed into place, created with its final mode (the key never readable
    by others, not even for a moment)."""
    partial = f"{path}.tmp-{os.getpid()}"
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(partial, path)
    except BaseException:
        try:
            os.unlink(partial)
        except OSError:
            pass
        raise

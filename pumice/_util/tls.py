"""Self-signed serving certificates (the API server's, the admission webhook's).

:func:`self_signed` makes one ECDSA P-256 certificate that is its own CA (so it doubles as the
``caBundle`` / ``certificate-authority-data`` that clients pin), valid for the given DNS names and
IP addresses for ten years. Time comes from the caller (the project clock), so that tests under a
virtual clock get certificates valid in their time.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import re
import ssl
from collections.abc import Iterable

__all__ = ["key_pair_error", "self_signed"]

_PEM_BEGIN = re.compile(rb"-----BEGIN ([^-\r\n]*)-----")


def self_signed(common_name: str, hosts: Iterable[str], *, now: _dt.datetime) -> tuple[bytes, bytes]:
    """A self-signed certificate for ``hosts`` (DNS names or IP addresses) as ``(cert_pem, key_pem)``.

    Args:
        common_name: the subject and issuer CN.
        hosts: subject alternative names; entries that parse as IP addresses become IP SANs.
        now: the start of validity (5 minutes are taken off for clock skew).
    """
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    alt: list[x509.GeneralName] = []
    for h in dict.fromkeys(hosts):
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            alt.append(x509.DNSName(h))
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _dt.timedelta(minutes=5)).not_valid_after(now + _dt.timedelta(days=3650))
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def _block_types(pem: bytes) -> list[str]:
    return [m.group(1).decode("latin-1") for m in _PEM_BEGIN.finditer(pem)]


def key_pair_error(cert_pem: bytes, key_pem: bytes, error: ssl.SSLError) -> str:
    """Why a certificate and key do not make a serving key pair, in Go's ``tls.X509KeyPair``
    words (what a Go server such as Volcano's webhook-manager says about the same files) when the
    PEM blocks show it, else the OpenSSL error of ``load_cert_chain`` (``error``): no
    ``CERTIFICATE`` block in the certificate input (``but did find a private key; PEM inputs
    may have been switched``), a certificate where the key should be, no ``PRIVATE KEY`` block,
    or a key that does not match the certificate.

    Mirrors: Go crypto/tls tls.go X509KeyPair (its error texts)."""
    cert_types = _block_types(cert_pem)
    if "CERTIFICATE" not in cert_types:
        if not cert_types:
            return "tls: failed to find any PEM data in certificate input"
        if len(cert_types) == 1 and cert_types[0].endswith("PRIVATE KEY"):
            return ("tls: failed to find certificate PEM data in certificate input, but did find a private key; "
                    "PEM inputs may have been switched")
        return ('tls: failed to find "CERTIFICATE" PEM block in certificate input after skipping PEM blocks of '
                f"the following types: [{' '.join(cert_types)}]")
    skipped: list[str] = []
    for t in _block_types(key_pem):
        if t == "PRIVATE KEY" or t.endswith(" PRIVATE KEY"):
            break
        skipped.append(t)
    else:
        if not skipped:
            return "tls: failed to find any PEM data in key input"
        if skipped == ["CERTIFICATE"]:
            return "tls: found a certificate rather than a key in the PEM for the private key"
        return ('tls: failed to find PEM block with type ending in "PRIVATE KEY" in key input after skipping PEM '
                f"blocks of the following types: [{' '.join(skipped)}]")
    if "KEY_VALUES_MISMATCH" in str(error):
        return "tls: private key does not match public key"
    return str(error)

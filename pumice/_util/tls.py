"""Self-signed serving certificates (the API server's, the admission webhook's).

:func:`self_signed` makes one ECDSA P-256 certificate that is its own CA (so it doubles as the
``caBundle`` / ``certificate-authority-data`` that clients pin), valid for the given DNS names and
IP addresses for ten years. Time comes from the caller (the project clock), so that tests under a
virtual clock get certificates valid in their time.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
from collections.abc import Iterable

__all__ = ["self_signed"]


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

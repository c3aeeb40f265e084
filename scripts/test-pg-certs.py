"""Writes the certificates of the test PostgreSQL server's TLS into the folder it is given:
ca.pem (an authority of the tests), server.pem and server.key (for localhost and 127.0.0.1,
signed by it) and other-ca.pem (an authority that signed nothing of the server's)."""

import datetime
import ipaddress
import os
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

folder = sys.argv[1]
now = datetime.datetime.now(datetime.timezone.utc)
start, end = now - datetime.timedelta(days=1), now + datetime.timedelta(days=30)


def name(common):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def authority(common):
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name(common))
        .issuer_name(name(common))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return key, cert


def pem(path, data, private=False):
    with open(os.path.join(folder, path), "wb") as f:
        f.write(data)
    if private:
        os.chmod(os.path.join(folder, path), 0o600)


ca_key, ca = authority("toolhost tests CA")
_, other = authority("toolhost tests other CA")
server_key = ec.generate_private_key(ec.SECP256R1())
server = (
    x509.CertificateBuilder()
    .subject_name(name("localhost"))
    .issuer_name(ca.subject)
    .public_key(server_key.public_key())
    .serial_number(x509.random_serial_number())
    .not_valid_before(start)
    .not_valid_after(end)
    .add_extension(
        x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        ),
        critical=False,
    )
    .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    .sign(ca_key, hashes.SHA256())
)
pem("ca.pem", ca.public_bytes(serialization.Encoding.PEM))
pem("other-ca.pem", other.public_bytes(serialization.Encoding.PEM))
pem("server.pem", server.public_bytes(serialization.Encoding.PEM))
pem(
    "server.key",
    server_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ),
    private=True,
)

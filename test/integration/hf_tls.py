"""Test certificate authorities made with the openssl command line: a CA per
call, and certificates it signs for 127.0.0.1 (server and client use), all
under the test's tmp_path, valid for a day."""

import subprocess
from dataclasses import dataclass
from pathlib import Path

OPENSSL = "openssl"


@dataclass(frozen=True)
class Certificate:
    cert_file: Path
    key_file: Path
    # The CA that signed it: what a peer must trust to accept it.
    ca_file: Path


def _openssl(*args, cwd: Path) -> None:
    r = subprocess.run([OPENSSL, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, f"openssl {' '.join(map(str, args))}: {r.stderr.strip()}"


class TestCa:
    """A self-signed CA in `directory` (created)."""

    __test__ = False  # not a pytest test class

    def __init__(self, directory: Path, name: str):
        self.dir = Path(directory).resolve()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.cert_file = self.dir / "ca.crt"
        self._key = self.dir / "ca.key"
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                 "-subj", f"/CN={name}", "-keyout", self._key, "-out", self.cert_file,
                 cwd=self.dir)

    def issue(self, name: str, ip: str = "127.0.0.1", dns: str = "",
              uri: str = "") -> Certificate:
        """A certificate for `ip` (subjectAltName, with `dns` as a DNS name
        and `uri` as a URI too if given), good for servers and clients,
        signed by this CA."""
        key, csr, cert = (self.dir / f"{name}.{ext}" for ext in ("key", "csr", "crt"))
        ext = self.dir / f"{name}.ext"
        san = f"IP:{ip}" + (f",DNS:{dns}" if dns else "") + (f",URI:{uri}" if uri else "")
        ext.write_text(f"subjectAltName={san}\nextendedKeyUsage=serverAuth,clientAuth\n")
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
                 "-keyout", key, "-out", csr, cwd=self.dir)
        _openssl("x509", "-req", "-in", csr, "-CA", self.cert_file, "-CAkey", self._key,
                 "-CAcreateserial", "-days", "1", "-extfile", ext, "-out", cert, cwd=self.dir)
        return Certificate(cert_file=cert, key_file=key, ca_file=self.cert_file)

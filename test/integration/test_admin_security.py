"""The admin endpoint of a real `holdfast serve` against careless or hostile
clients (issue 11, docs/security.md "Admin endpoint"):

- slow and idle connections, more than the server keeps open, never stop
  /readyz from answering (the header deadline and the connection cap with
  eviction of the longest-waiting connection);
- /debug/snapshot never shows a gateway's TLS private key;
- bound to an address other hosts can reach, the endpoint requires a bearer
  token (and serve refuses to start without one); the token file is re-read
  when it changes.

Only the holdfast binary is needed. Everything runs on loopback; the one
server bound to 0.0.0.0 requires a token. Each test is bounded: at most a few
hundred connections, for a few seconds.
"""

import json
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from hf_admin import Admin
from hf_process import environ_without_grpc, wait_for_file
from hf_wait import wait_for
from hf_world import START_TIMEOUT, Binaries

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "test/fixtures/gateway/everything.yaml"
# The server's documented default (docs/reference.md): a head must arrive
# within 5 s of a connection's first byte.
HEADER_TIMEOUT = 5.0


@pytest.fixture(scope="module")
def holdfast_binary() -> Path:
    binary = Binaries.from_env().holdfast
    if not binary.exists():
        pytest.fail(f"missing {binary} (set HOLDFAST_BUILD_DIR or HOLDFAST_BIN)", pytrace=False)
    return binary


class Serve:
    """`holdfast serve --config-dir` on port 0 with extra flags."""

    def __init__(self, procs, binary: Path, tmp_path: Path, *extra: str,
                 admin_listen: str = "127.0.0.1:0"):
        self.config = tmp_path / "config"
        self.config.mkdir(exist_ok=True)
        self.ports_file = tmp_path / "ports.json"
        self.ports_file.unlink(missing_ok=True)
        self.proc = procs.start("holdfast", [
            binary, "serve", "--config-dir", self.config,
            "--xds-listen", "127.0.0.1:0",
            "--ports-file", self.ports_file,
            "--state-dir", tmp_path / "state",
            "--admin-listen", admin_listen, *extra,
        ], env=environ_without_grpc())

    def admin(self, token=None) -> Admin:
        ports = json.loads(wait_for_file(self.ports_file, self.proc, START_TIMEOUT))
        return Admin(int(ports["admin"]), token=token)


def ready(admin: Admin) -> None:
    wait_for(lambda: admin.get("/readyz")[0], lambda s: s == 200, timeout=START_TIMEOUT,
             what="/readyz to return 200")


def _probe(admin: Admin, latencies: list, what: str) -> None:
    start = time.monotonic()
    status, body = admin.get("/readyz", timeout=2)
    latencies.append(time.monotonic() - start)
    assert status == 200, f"/readyz with {what}: {status} {body}"


def _trickle(clients: list) -> None:
    for s in clients:
        try:
            s.send(b"a")
        except OSError:
            pass  # cut off by the server: that is the point


def _closed_by_server(s: socket.socket) -> bool:
    try:
        data = s.recv(4096)
    except BlockingIOError:
        return False
    except OSError:
        return True
    return data == b"" or data.startswith(b"HTTP/1.1 408 ")


def test_slow_and_idle_clients_never_stop_readyz(procs, holdfast_binary, tmp_path):
    server = Serve(procs, holdfast_binary, tmp_path)
    shutil.copy(FIXTURE, server.config / "everything.yaml")
    admin = server.admin()
    ready(admin)
    held = []

    def open_client(slow: bool) -> socket.socket:
        s = socket.create_connection(("127.0.0.1", admin.port), timeout=2)
        s.setblocking(False)
        if slow:
            s.send(b"GET /readyz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        held.append(s)
        return s

    latencies = []
    try:
        # A flood, more than the connection cap: half send the start of a
        # head and trickle the rest, half send nothing, and more keep coming.
        # Against the old thread-per-request server, 8 such clients were
        # enough to stop /readyz.
        for i in range(200):
            open_client(slow=i % 2 == 0)
        end = time.monotonic() + 3
        while time.monotonic() < end:
            _trickle(held)
            for _ in range(5):
                open_client(slow=True)
            _probe(admin, latencies, f"{len(held)} slow clients opened")
            time.sleep(0.2)
        # Fewer slow clients than the cap, so none is evicted: the header
        # deadline alone cuts them off.
        slow = [open_client(slow=True) for _ in range(20)]
        end = time.monotonic() + HEADER_TIMEOUT + 1.5
        while time.monotonic() < end:
            _trickle(slow)
            _probe(admin, latencies, "20 slow clients")
            time.sleep(0.2)
        still_open = [s for s in slow if not _closed_by_server(s)]
        assert not still_open, f"{len(still_open)} slow clients outlived the header deadline"
    finally:
        for s in held:
            s.close()
    assert max(latencies) < 1.0, f"slowest /readyz took {max(latencies):.2f}s"
    samples = admin.metrics()
    cut = {dict(labels)["reason"]: value for (name, labels), value in samples.items()
           if name == "holdfast_admin_connections_cut_total"}
    assert cut["evicted"] > 0, cut
    assert cut["header_timeout"] >= 20, cut


def test_debug_snapshot_shows_no_private_key(procs, holdfast_binary, tmp_path):
    server = Serve(procs, holdfast_binary, tmp_path)
    # The fixture's Secret `cert` holds a PEM private key; Gateway
    # `tls-secret` serves it inline in its listener's DownstreamTlsContext.
    assert "BEGIN PRIVATE KEY" in FIXTURE.read_text()
    shutil.copy(FIXTURE, server.config / "everything.yaml")
    admin = server.admin()
    ready(admin)
    # Ready comes with the first snapshot, which may precede the copied file.
    status, body = wait_for(lambda: admin.get("/debug/snapshot"),
                            lambda got: got[0] == 200 and "tls-secret" in got[1],
                            timeout=START_TIMEOUT, what="the fixture's gateway in /debug/snapshot")
    assert "DownstreamTlsContext" in body, body[:2000]
    assert "PRIVATE KEY" not in body, "the gateway's private key is shown"
    assert '"private_key": {\n' in body and "[redacted]" in body
    assert "BEGIN CERTIFICATE" in body  # certificates are public: still shown


def test_serve_refuses_a_reachable_admin_endpoint_without_a_token(procs, holdfast_binary,
                                                                   tmp_path):
    server = Serve(procs, holdfast_binary, tmp_path, admin_listen="0.0.0.0:0")
    try:
        code = server.proc.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        code = None
    assert code == 1, "serve started with an unauthenticated admin endpoint on 0.0.0.0"
    log = server.proc.log_path.read_text()
    assert "--admin-token-file" in log and "reachable from other hosts" in log, log
    assert not server.ports_file.exists()


def test_reachable_admin_endpoint_requires_the_current_token(procs, holdfast_binary, tmp_path):
    token_file = tmp_path / "admin-token"
    token_file.write_text("first-token\n")
    token_file.chmod(0o600)
    server = Serve(procs, holdfast_binary, tmp_path, "--admin-token-file", token_file,
                   admin_listen="0.0.0.0:0")
    anonymous = server.admin()
    ready(anonymous)  # probes need no token
    assert anonymous.get("/readyz") == (200, "ready\n")  # but say no more than that
    for path in ("/debug/snapshot", "/debug/status", "/debug/proxies", "/metrics"):
        assert anonymous.get(path)[0] == 401, path
    first = Admin(anonymous.port, token="first-token")
    assert first.get("/debug/status")[0] == 200
    assert first.get("/readyz")[1].startswith("ready: serving")

    # Rotate: the new token works at once, the old one no longer.
    staging = tmp_path / "admin-token.new"
    staging.write_text("second-token\n")
    staging.rename(token_file)
    second = Admin(first.port, token="second-token")
    assert second.get("/debug/status")[0] == 200
    assert first.get("/debug/status")[0] == 401

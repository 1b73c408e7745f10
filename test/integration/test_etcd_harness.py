"""Self-test of the etcd harness (hf_etcd): real etcd members, etcdctl
helpers and the FaultProxy. No holdfast here: if these fail, the etcd
suite's failures say nothing about holdfast."""

import socket
import threading
import time

import pytest

from hf_etcd import EtcdError, FaultProxy, etcdctl
from hf_wait import wait_for


# --- FaultProxy against a plain TCP echo server --------------------------------

class EchoServer:
    """Echoes every byte; counts connections it saw close."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(256)
        self.port = self.sock.getsockname()[1]
        self.threads = []
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()

    @staticmethod
    def _serve(conn):
        with conn:
            try:
                while True:
                    data = conn.recv(65536)
                    if not data:
                        return
                    conn.sendall(data)
            except OSError:
                return

    def close(self):
        self._stop = True
        self.sock.close()


@pytest.fixture
def echo_proxy():
    server = EchoServer()
    proxy = FaultProxy(server.port)
    yield proxy
    proxy.close()
    server.close()


def connect(proxy, timeout=5.0):
    return socket.create_connection(("127.0.0.1", proxy.port), timeout=timeout)


def roundtrip(sock, payload: bytes) -> bytes:
    sock.sendall(payload)
    got = b""
    while len(got) < len(payload):
        chunk = sock.recv(65536)
        if not chunk:
            break
        got += chunk
    return got


def test_proxy_forwards_many_connections(echo_proxy):
    """100 concurrent connections, each a 1 MB round trip; then a half-close
    is passed on (the server's EOF comes back)."""
    payload = bytes(range(256)) * 4096
    socks = [connect(echo_proxy) for _ in range(100)]
    errors = []

    def run(s):
        try:
            assert roundtrip(s, payload) == payload
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(s,)) for s in socks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors[:3]
    assert echo_proxy.connections() == 100
    for s in socks:
        s.shutdown(socket.SHUT_WR)
        assert s.recv(10) == b""
        s.close()
    wait_for(echo_proxy.connections, lambda n: n == 0, timeout=10,
             what="the proxy to drop closed connections")


def test_proxy_blackhole_and_reject(echo_proxy):
    held = connect(echo_proxy, timeout=1.0)
    assert roundtrip(held, b"before") == b"before"

    echo_proxy.set_mode("blackhole")
    # Existing connection: silence, not an error.
    held.sendall(b"during")
    with pytest.raises(socket.timeout):
        held.recv(10)
    # New connections are accepted, then silent too.
    late = connect(echo_proxy, timeout=1.0)
    late.sendall(b"late")
    with pytest.raises(socket.timeout):
        late.recv(10)

    # Back to pass: held connections resume, bytes sent meanwhile arrive.
    echo_proxy.set_mode("pass")
    held.settimeout(5)
    late.settimeout(5)
    assert roundtrip(held, b"") == b"" and held.recv(6) == b"during"
    assert late.recv(4) == b"late"

    echo_proxy.set_mode("reject")
    # Old connections are reset, new ones refused.
    with pytest.raises((ConnectionResetError, ConnectionAbortedError, BrokenPipeError)):
        held.sendall(b"x")
        if held.recv(10) == b"":
            raise ConnectionResetError("EOF")
    with pytest.raises(ConnectionRefusedError):
        connect(echo_proxy)
    assert echo_proxy.connections() == 0

    echo_proxy.set_mode("pass")
    fresh = connect(echo_proxy)
    assert roundtrip(fresh, b"again") == b"again"
    for s in (held, late, fresh):
        s.close()


def test_proxy_slow_delays_bytes_in_order(echo_proxy):
    """slow: every chunk is held `delay` seconds each way (a round trip takes
    two), nothing is lost or reordered; a large transfer still completes;
    back in pass, round trips are quick again and held bytes go at once."""
    s = connect(echo_proxy, timeout=10.0)
    assert roundtrip(s, b"warm") == b"warm"
    echo_proxy.set_mode("slow", delay=0.4)
    t0 = time.monotonic()
    assert roundtrip(s, b"slow") == b"slow"
    assert time.monotonic() - t0 >= 0.8
    payload = bytes(range(256)) * 4096  # 1 MB, many chunks
    assert roundtrip(s, payload) == payload
    s.sendall(b"held")
    time.sleep(0.05)
    echo_proxy.set_mode("pass")
    t0 = time.monotonic()
    assert roundtrip(s, b"") == b"" and s.recv(4) == b"held"
    assert roundtrip(s, b"fast") == b"fast"
    assert time.monotonic() - t0 < 0.4
    with pytest.raises(AssertionError):
        echo_proxy.set_mode("slow")  # a delay is required
    s.close()


# --- etcd ----------------------------------------------------------------------

def test_put_get_delete_revision(etcd):
    rev0 = etcd.revision()
    # Any bytes, a leading dash, newlines: values go through stdin.
    value = b"-not-a-flag\nline 2\n\xff"
    rev1 = etcd.put("/t/a", value)
    assert rev1 == rev0 + 1
    kv = etcd.get("/t/a")
    assert kv.value == value and kv.mod_revision == rev1 and kv.create_revision == rev1
    etcd.put("/t/b", "{\"x\": 1}")
    assert [kv.key for kv in etcd.get_prefix("/t/")] == ["/t/a", "/t/b"]
    assert etcd.get("/t/b").json() == {"x": 1}
    assert etcd.delete("/t/a") == 1
    assert etcd.get("/t/a") is None
    assert etcd.delete("/t/", prefix=True) == 1
    assert etcd.revision() == rev1 + 3


def test_store_faults_through_proxy(etcd):
    """etcdctl through the proxy: works in pass, times out in blackhole,
    is refused in reject, works again in pass; etcd itself is untouched."""
    proxy = etcd.proxy()
    via = [proxy.endpoint]
    etcdctl(via, "put", "/t/k", "v1")
    assert etcdctl(via, "get", "/t/k", "--print-value-only").stdout == b"v1\n"

    proxy.set_mode("blackhole")
    r = etcdctl(via, "get", "/t/k", command_timeout="2s", check=False, timeout=20)
    assert r.returncode != 0, r
    assert etcd.get("/t/k").value == b"v1"  # directly: fine

    proxy.set_mode("reject")
    r = etcdctl(via, "get", "/t/k", command_timeout="2s", check=False, timeout=20)
    assert r.returncode != 0, r

    proxy.set_mode("pass")
    etcdctl(via, "put", "/t/k", "v2")
    assert etcd.get("/t/k").value == b"v2"


def test_cluster_survives_member_kill(etcd_cluster):
    c = etcd_cluster
    c.put("/t/k", "v1")
    victim = c.leader()
    victim.kill()
    assert not victim.running()
    # Two of three are a quorum: they elect a new leader and take writes
    # again.
    c.wait_writable()
    c.put("/t/k", "v2")
    assert c.get("/t/k").value == b"v2"
    assert c.leader() is not victim

    victim.restart()
    c.wait_healthy(members=[victim])
    # A linearizable read on the restarted member alone sees the write it missed.
    out = etcdctl([victim.endpoint], "get", "/t/k", "--print-value-only").stdout
    assert out == b"v2\n"


def test_compaction_cancels_old_watch(etcd):
    first = etcd.put("/t/k", "v1")
    etcd.put("/t/k", "v2")
    compacted = etcd.compact()
    assert compacted > first
    r = etcd.ctl("watch", f"--rev={first}", "/t/k", check=False, timeout=20)
    output = (r.stdout + r.stderr).decode(errors="replace")
    assert r.returncode != 0, output
    assert "compacted" in output, output
    with pytest.raises(EtcdError):
        etcd.ctl("get", "/t/k", f"--rev={first}")
    assert etcd.get("/t/k").value == b"v2"


def test_deleted_at_finds_the_delete_revision(etcd):
    start = etcd.put("/t/gone", "v")
    for i in range(5):
        etcd.put(f"/t/other{i}", "x")
    etcd.delete("/t/gone")
    deleted = etcd.revision()
    etcd.put("/t/other", "y")
    assert etcd.deleted_at("/t/gone", start, etcd.revision()) == deleted

"""Hostile clients against the xDS port: descriptor exhaustion and silence.

gRPC 1.51 stops accepting on a listener for good once accept4 fails with
EMFILE. These tests run holdfast under a low open-files limit, exhaust it with
silent TCP connections (loopback, a few hundred, seconds), and check that
/readyz says why it is not ready while the port cannot accept, that a new
proxy gets its configuration once the connections are gone, and that proxies
connected before never lose their stream. A second test checks that clients
which connect and say nothing are cut off: a TCP connection that never sends
the HTTP/2 preface, an HTTP/2 connection that opens no stream, and a stream
that sends no request, which is not counted as a connected proxy meanwhile.

Every wait polls an observable condition with a deadline.
"""

import socket
import struct

from hf_gateway import route, upstream, virtual_service
from hf_wait import wait_for
from hf_world import CONVERGE_TIMEOUT, START_TIMEOUT, fully_acked

# holdfast raises the soft limit to the hard one at start; the test sees that
# in the log and in holdfast_open_fds_limit.
SOFT_LIMIT = 200
HARD_LIMIT = 256
# More than the limit: the kernel completes every TCP handshake into the
# listen queue, so all of these connect whether or not holdfast accepts.
SILENT_CONNECTIONS = 2 * HARD_LIMIT
# Closed first, to give the admin endpoint descriptors to answer with: fewer
# than a new xDS listener waits for (a quarter of the limit at most 32).
FREED_FIRST = 8

# The server's default first-request timeout (the handshake timeout, 20 s,
# is shorter), plus time for a check (1 s) and a loaded machine.
FIRST_REQUEST_TIMEOUT = 30.0
MARGIN = 10.0

ADS_SOTW = b"/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"


def write_echo(config, backend: str) -> None:
    config.write("echo.yaml", virtual_service("echo", [route(name="all", upstream=backend)]))


def stream_id_of(admin, node_id: str):
    proxy = wait_for(lambda: admin.proxy(node_id), fully_acked, timeout=CONVERGE_TIMEOUT,
                     what=f"{node_id} to ACK every type")
    return proxy["stream_id"], proxy["connected_since"]


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def log_has(proc, mark: int, text: str) -> list:
    return [line for line in proc.log_lines_since(mark) if text in line]


def test_listener_recovers_from_descriptor_exhaustion(gateway_world):
    w = gateway_world
    w.config.write("upstreams.yaml", upstream("alpha", w.alpha.port),
                   upstream("beta", w.beta.port))
    write_echo(w.config, "alpha")
    holdfast = w.holdfast
    holdfast.start(wrapper=["prlimit", f"--nofile={SOFT_LIMIT}:{HARD_LIMIT}", "--"])
    holdfast.wait_ready()
    admin = holdfast.admin

    early = w.client("cpp")
    early.wait_serving("alpha", timeout=START_TIMEOUT)
    early_stream = stream_id_of(admin, early.node_id)

    mark = holdfast.proc.log_size()
    silent = []
    try:
        for _ in range(SILENT_CONNECTIONS):
            silent.append(connect(holdfast.xds_port))
        wait_for(lambda: log_has(holdfast.proc, mark, "Failed accept4"), bool, timeout=10,
                 what="gRPC to log that accept failed (descriptors exhausted)")

        # The first connections were accepted (the queue is FIFO): closing
        # them frees descriptors in holdfast, too few for a new listener.
        for s in silent[:FREED_FIRST]:
            s.close()
        status, body = wait_for(lambda: admin.get("/readyz"), lambda r: r[0] == 503,
                                timeout=10,
                                what="/readyz to say not ready while xDS cannot accept")
        assert "not accepting connections" in body, body
        assert "Failed accept4" in body, body
        assert "file descriptors open" in body, body
        assert admin.metric("holdfast_xds_accepting") == 0
        assert admin.metric("holdfast_open_fds") > HARD_LIMIT - 32
    finally:
        for s in silent:
            s.close()

    wait_for(lambda: admin.get("/readyz")[0], lambda s: s == 200, timeout=10,
             what="/readyz to return 200 once descriptors are free")
    assert admin.metric("holdfast_xds_accepting") == 1
    assert admin.metric("holdfast_xds_listener_restarts_total") == 1
    assert log_has(holdfast.proc, mark, "accepts connections again"), holdfast.proc.log_tail()

    late = w.client("cpp")
    late.wait_serving("alpha", timeout=CONVERGE_TIMEOUT)
    stream_id_of(admin, late.node_id)

    # The proxy connected before the exhaustion kept its stream (on the old
    # listener's server) and still receives updates on it.
    write_echo(w.config, "beta")
    early.wait_serving("beta", since=early.mark())
    late.wait_serving("beta", since=late.mark())
    assert stream_id_of(admin, early.node_id) == early_stream
    assert admin.metric("holdfast_connected_proxies") == 2

    # At start, the soft limit was raised to the hard limit, and said so.
    assert log_has(holdfast.proc, 0, f"raised the soft limit from {SOFT_LIMIT} to the hard "
                                     f"limit, {HARD_LIMIT}"), holdfast.proc.log_tail()
    assert admin.metric("holdfast_open_fds_limit") == HARD_LIMIT

    # Both gRPC servers (the dead listener's, still serving `early`, and the
    # new one) shut down cleanly and promptly.
    code = holdfast.proc.stop(grace=10.0)
    assert code == 0, f"holdfast exited with {code} on SIGTERM (-9: still running after 10 s)"


# --- a minimal HTTP/2 client: just enough to open a stream and stay silent ---

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY = 0, 1, 3, 4, 6, 7
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + \
        struct.pack(">I", stream) + payload


def literal_header(name: bytes, value: bytes) -> bytes:
    """HPACK literal without indexing, new name, no Huffman (short strings)."""
    assert len(name) < 127 and len(value) < 127
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def open_silent_stream(port: int) -> socket.socket:
    """An HTTP/2 connection with one ADS stream whose request never comes."""
    s = connect(port)
    block = b"".join(literal_header(n, v) for n, v in [
        (b":method", b"POST"), (b":scheme", b"http"), (b":path", ADS_SOTW),
        (b":authority", b"127.0.0.1"), (b"content-type", b"application/grpc"),
        (b"te", b"trailers")])
    s.sendall(PREFACE + frame(SETTINGS, 0, 0) + frame(HEADERS, END_HEADERS, 1, block))
    return s


class FrameReader:
    """Reads the server's frames, answering SETTINGS and PING as a client
    must, and notes how stream 1 and the connection end."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buffer = b""
        self.stream_ended = None  # "trailers" or "reset"
        self.closed = False

    def poll(self) -> None:
        self.sock.settimeout(0.05)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return
        except ConnectionResetError:
            data = b""
        if not data:
            self.closed = True
            return
        self.buffer += data
        while len(self.buffer) >= 9:
            length = int.from_bytes(self.buffer[:3], "big")
            if len(self.buffer) < 9 + length:
                return
            kind, flags = self.buffer[3], self.buffer[4]
            stream = int.from_bytes(self.buffer[5:9], "big") & 0x7FFFFFFF
            payload = self.buffer[9:9 + length]
            self.buffer = self.buffer[9 + length:]
            self._on_frame(kind, flags, stream, payload)

    def _on_frame(self, kind: int, flags: int, stream: int, payload: bytes) -> None:
        if kind == SETTINGS and not flags & ACK:
            self.sock.sendall(frame(SETTINGS, ACK, 0))
        elif kind == PING and not flags & ACK:
            self.sock.sendall(frame(PING, ACK, 0, payload))
        elif stream == 1 and kind == HEADERS and flags & END_STREAM:
            self.stream_ended = self.stream_ended or "trailers"
        elif stream == 1 and kind == RST_STREAM:
            # After trailers, gRPC resets a stream the client has not
            # half-closed (NO_ERROR); only a reset alone is "reset".
            self.stream_ended = self.stream_ended or "reset"


def closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(0.05)
    try:
        return sock.recv(65536) == b""  # bytes before the end (a GOAWAY) are skipped
    except socket.timeout:
        return False
    except ConnectionResetError:
        return True


def test_silent_clients_are_cut_off_and_not_counted(gateway_world):
    w = gateway_world
    w.config.write("upstreams.yaml", upstream("alpha", w.alpha.port))
    write_echo(w.config, "alpha")
    holdfast = w.start_holdfast()
    admin = holdfast.admin

    tcp_only = connect(holdfast.xds_port)  # never sends the HTTP/2 preface
    no_stream = connect(holdfast.xds_port)
    no_stream.sendall(PREFACE + frame(SETTINGS, 0, 0))  # HTTP/2, but no stream
    silent_stream = FrameReader(open_silent_stream(holdfast.xds_port))
    try:
        def seen():
            silent_stream.poll()
            m = admin.metrics()
            return {name: m.get((name, frozenset()), 0.0)
                    for name in ("holdfast_xds_streams_awaiting_request",
                                 "holdfast_connected_proxies")}

        # Seen as a stream awaiting its request, or (wrongly) as a proxy.
        counts = wait_for(seen, lambda c: any(v == 1 for v in c.values()), timeout=10,
                          what="holdfast to see the stream that has not sent a request")
        assert counts == {"holdfast_xds_streams_awaiting_request": 1,
                          "holdfast_connected_proxies": 0}, counts
        assert admin.proxies() == []

        def cut_off():
            silent_stream.poll()
            return {"tcp_only": closed_by_server(tcp_only) or None,
                    "no_stream": closed_by_server(no_stream) or None,
                    "stream": silent_stream.stream_ended}

        state = {"tcp_only": None, "no_stream": None, "stream": None}

        def observe():
            for key, value in cut_off().items():
                state[key] = state[key] or value
            return dict(state)

        ended = wait_for(observe, lambda s: all(s.values()),
                         timeout=FIRST_REQUEST_TIMEOUT + MARGIN,
                         what="the server to close the silent connection, the connection "
                              "without a stream and the stream without a request")
        assert ended["stream"] == "trailers", ended  # a gRPC status, not a reset
        assert admin.metric("holdfast_xds_first_request_timeouts_total") == 1
        assert admin.metric("holdfast_xds_streams_awaiting_request") == 0
        assert admin.metric("holdfast_connected_proxies") == 0
    finally:
        for s in (tcp_only, no_stream, silent_stream.sock):
            s.close()

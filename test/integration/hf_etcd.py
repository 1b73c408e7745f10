"""Real etcd for the integration suite: members started as children of the
test's ProcessSet, driven with etcdctl, and a userspace TCP proxy that
injects store faults on loopback.

etcd is the Debian package (/usr/bin/etcd, /usr/bin/etcdctl, 3.4);
HOLDFAST_ETCD and HOLDFAST_ETCDCTL override the paths. Every member listens
on 127.0.0.1 only, on client and peer ports picked when the test runs, with
its data directory under the test's tmp_path; a cluster's
--initial-cluster-token is unique per test, so members of two tests can
never join each other.

etcdctl is run with ETCDCTL_API=3 and `-w json`, where keys and values are
base64; the helpers here decode them, so tests see bytes (values) and str
(keys).

A cluster may serve clients over TLS (a certificate from hf_tls; peers stay
plain) and may have authentication enabled (enable_auth): the harness's own
etcdctl calls then trust the member's CA and log in as root.
"""

import base64
import collections
import errno
import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Union

from hf_process import ManagedProcess, ProcessSet, environ_without_grpc
from hf_tls import Certificate
from hf_wait import wait_for

ETCD = os.environ.get("HOLDFAST_ETCD", "/usr/bin/etcd")
ETCDCTL = os.environ.get("HOLDFAST_ETCDCTL", "/usr/bin/etcdctl")

# Two cores shared with compilers: a member may take a while to start and
# elect itself, and a three-member cluster needs all peers up.
ETCD_START_TIMEOUT = 30.0
# etcdctl's own deadline for one request (its default is 5 s).
COMMAND_TIMEOUT = "5s"
# Raft timing. etcd's defaults (100 ms / 1000 ms) are already short; shorter
# ones cause spurious elections on a loaded two-core machine, which would
# make tests about holdfast fail for reasons that are etcd's.
HEARTBEAT_MS = 100
ELECTION_MS = 1000


# --- ports -------------------------------------------------------------------

_handed_out: set[int] = set()
_ports_lock = threading.Lock()


def free_ports(count: int) -> list[int]:
    """`count` distinct ports free a moment ago on 127.0.0.1, none handed out
    before in this run. All sockets stay bound until every port is chosen,
    so the kernel cannot give the same port twice."""
    with _ports_lock:
        held: list[socket.socket] = []
        ports: list[int] = []
        try:
            while len(ports) < count:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.bind(("127.0.0.1", 0))
                held.append(s)
                port = s.getsockname()[1]
                if port not in _handed_out:
                    ports.append(port)
        finally:
            for s in held:
                s.close()
        _handed_out.update(ports)
        return ports


# --- etcdctl -----------------------------------------------------------------

def etcdctl_env() -> dict:
    env = environ_without_grpc()
    for k in list(env):
        if k.startswith("ETCDCTL_"):
            del env[k]
    env["ETCDCTL_API"] = "3"
    return env


def _b64(text: Optional[str]) -> bytes:
    return base64.b64decode(text) if text else b""


@dataclass
class KeyValue:
    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    version: int

    @staticmethod
    def from_json(kv: dict) -> "KeyValue":
        return KeyValue(key=_b64(kv.get("key")).decode(errors="replace"),
                        value=_b64(kv.get("value")),
                        create_revision=int(kv.get("create_revision", 0)),
                        mod_revision=int(kv.get("mod_revision", 0)),
                        version=int(kv.get("version", 0)))

    def text(self) -> str:
        return self.value.decode(errors="replace")

    def json(self):
        """The value parsed as JSON (fails with the raw value if it is not)."""
        try:
            return json.loads(self.value)
        except ValueError as e:
            raise AssertionError(f"{self.key}: value is not JSON ({e}): {self.value[:300]!r}")


class EtcdError(AssertionError):
    """etcdctl exited non-zero; `result` has its output."""

    def __init__(self, message: str, result: subprocess.CompletedProcess):
        super().__init__(message)
        self.result = result


def etcdctl(endpoints: Sequence[str], *args: str, input: Optional[bytes] = None,
            command_timeout: str = COMMAND_TIMEOUT, check: bool = True,
            timeout: float = 30.0, options: Sequence[str] = ()) -> subprocess.CompletedProcess:
    """Runs `etcdctl --endpoints=... OPTIONS ARGS`; raises EtcdError on a
    non-zero exit when `check`. Output is bytes. `options`: global flags
    such as --cacert and --user (see EtcdMember.ctl_options)."""
    argv = [ETCDCTL, f"--endpoints={','.join(endpoints)}",
            f"--command-timeout={command_timeout}", "--dial-timeout=2s", *options, *args]
    result = subprocess.run(argv, input=input if input is not None else b"",
                            capture_output=True, env=etcdctl_env(), timeout=timeout)
    if check and result.returncode != 0:
        raise EtcdError(f"{' '.join(argv)} exited with {result.returncode}: "
                        f"{result.stderr.decode(errors='replace').strip()}", result)
    return result


# --- members and clusters ----------------------------------------------------

class EtcdMember:
    """One etcd process. kill() and restart() keep its name, data directory
    and ports, so a restarted member rejoins its cluster. With `tls`, it
    serves clients over TLS with that certificate (restart() may swap it)."""

    def __init__(self, procs: ProcessSet, name: str, data_dir: Path, client_port: int,
                 peer_port: int, initial_cluster: str, token: str,
                 tls: Optional[Certificate] = None, binary: str = ETCD):
        self._procs = procs
        self.binary = binary
        self.name = name
        self.data_dir = Path(data_dir)
        self.client_port = client_port
        self.peer_port = peer_port
        self._initial_cluster = initial_cluster
        self._token = token
        self.tls = tls
        # Set by EtcdCluster.enable_auth: the harness's etcdctl logs in as root.
        self.root_password: Optional[str] = None
        self.proc: Optional[ManagedProcess] = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"

    def ctl_options(self) -> list[str]:
        """etcdctl's global flags for this member as it runs now: trust the
        CA of its certificate, log in as root once auth is on."""
        options = []
        if self.tls is not None:
            options.append(f"--cacert={self.tls.ca_file}")
        if self.root_password is not None:
            options.append(f"--user=root:{self.root_password}")
        return options

    def argv(self) -> list:
        client_url = f"{'https' if self.tls else 'http'}://{self.endpoint}"
        tls = [] if self.tls is None else ["--cert-file", self.tls.cert_file,
                                           "--key-file", self.tls.key_file]
        return [
            self.binary,
            "--name", self.name,
            "--data-dir", self.data_dir,
            "--listen-client-urls", client_url,
            "--advertise-client-urls", client_url,
            "--listen-peer-urls", self.peer_url,
            "--initial-advertise-peer-urls", self.peer_url,
            "--initial-cluster", self._initial_cluster,
            "--initial-cluster-token", self._token,
            # Ignored by a member that already has data (a restart).
            "--initial-cluster-state", "new",
            "--heartbeat-interval", str(HEARTBEAT_MS),
            "--election-timeout", str(ELECTION_MS),
            "--logger", "zap", "--log-outputs", "stderr",
            *tls,
        ]

    def start(self) -> None:
        assert self.proc is None or not self.proc.running(), f"{self.name} already running"
        self.proc = self._procs.start(self.name, self.argv(), env=etcdctl_env())

    def running(self) -> bool:
        return self.proc is not None and self.proc.running()

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Sends `sig` and waits for the process to exit."""
        self.proc.kill(sig)

    def restart(self, tls: Optional[Certificate] = None) -> None:
        """Starts the member again on the same data directory and ports (a
        new log file, `NAME.2.log`); with `tls`, serving that certificate
        from now on."""
        if self.running():
            self.kill()
        if tls is not None:
            assert self.tls is not None, f"{self.name} serves plain TCP, not TLS"
            self.tls = tls
        self.start()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()

    def healthy(self) -> bool:
        """`etcdctl endpoint health` on this member alone: it answers a
        quorum read."""
        if not self.running():
            return False
        r = etcdctl([self.endpoint], "endpoint", "health", command_timeout="2s", check=False,
                    options=self.ctl_options())
        return r.returncode == 0

    def log_tail(self, max_lines: int = 40) -> str:
        return self.proc.log_tail(max_lines) if self.proc else "<not started>"


class EtcdCluster:
    """`size` members (1 or 3 in practice) on loopback. Key/value helpers go
    through etcdctl against every live member's endpoint. With `tls`, every
    member serves clients over TLS with that certificate; clients trust
    `tls.ca_file` (holdfast's --etcd-ca-file). `binary`: the etcd server to
    run (default Debian's; the Kubernetes tests run etcd 3.6)."""

    def __init__(self, procs: ProcessSet, work: Path, size: int = 1, name: str = "etcd",
                 tls: Optional[Certificate] = None, binary: str = ETCD):
        assert size >= 1
        self.tls = tls
        self._procs = procs
        self.work = Path(work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.token = f"hf-{uuid.uuid4().hex[:16]}"
        ports = free_ports(2 * size)
        names = [f"{name}-{i}" for i in range(size)]
        initial = ",".join(f"{n}=http://127.0.0.1:{ports[2 * i + 1]}"
                           for i, n in enumerate(names))
        self.members = [
            EtcdMember(procs, n, self.work / f"{n}.data", ports[2 * i], ports[2 * i + 1],
                       initial, self.token, tls=tls, binary=binary)
            for i, n in enumerate(names)]
        self._proxies: list["FaultProxy"] = []

    # -- lifecycle --

    def start(self) -> "EtcdCluster":
        for m in self.members:
            m.start()
        self.wait_healthy()
        return self

    def wait_healthy(self, timeout: float = ETCD_START_TIMEOUT,
                     members: Optional[Sequence[EtcdMember]] = None) -> None:
        """Waits until every member in `members` (default: every running
        member) answers a quorum read; fails early if one exits."""
        members = list(members) if members is not None else [m for m in self.members
                                                             if m.running()]

        def observe():
            for m in members:
                if not m.running():
                    raise AssertionError(
                        f"etcd member {m.name} exited with {m.proc.proc.returncode}:\n"
                        f"{m.log_tail()}")
            return {m.name: m.healthy() for m in members}

        wait_for(observe, lambda h: all(h.values()), timeout=timeout,
                 what="etcd members to be healthy", interval=0.2)

    def wait_writable(self, timeout: float = ETCD_START_TIMEOUT) -> None:
        """Waits until a write through the live members succeeds. After a
        member is killed, requests fail until the rest elect a leader (a
        proposal made with no leader is dropped and times out); this is the
        wait for that."""
        def attempt():
            r = self.ctl("put", "/hf-test/write-probe", "x", command_timeout="2s", check=False)
            return r.returncode, r.stderr.decode(errors="replace")[-300:]

        wait_for(attempt, lambda r: r[0] == 0, timeout=timeout,
                 what="a write to the etcd cluster to succeed", interval=0.2)

    def close(self) -> None:
        for p in self._proxies:
            p.close()
        self._proxies.clear()
        for m in self.members:
            m.stop()

    def proxy(self, member: int = 0) -> "FaultProxy":
        """A FaultProxy in front of member `member`'s client port, closed
        with the cluster."""
        p = FaultProxy(self.members[member].client_port, name=f"proxy-{member}")
        self._proxies.append(p)
        return p

    # -- addressing --

    @property
    def endpoints(self) -> list[str]:
        return [m.endpoint for m in self.members]

    @property
    def endpoints_flag(self) -> str:
        """For --etcd-endpoints: every member, comma-separated."""
        return ",".join(self.endpoints)

    def leader(self) -> EtcdMember:
        """The member etcd's Raft currently has as leader (all live members
        must agree)."""
        def observe():
            r = self.ctl("endpoint", "status", "-w", "json", command_timeout="2s", check=False)
            if r.returncode != 0:
                return None
            statuses = json.loads(r.stdout)
            leaders = {s["Status"]["leader"] for s in statuses}
            ids = {s["Endpoint"]: s["Status"]["header"]["member_id"] for s in statuses}
            if len(leaders) != 1:
                return None
            (leader_id,) = leaders
            for m in self.members:
                if ids.get(m.endpoint) == leader_id:
                    return m
            return None

        return wait_for(observe, lambda m: m is not None, timeout=ETCD_START_TIMEOUT,
                        what="the etcd members to agree on a leader", interval=0.2)

    def live_endpoints(self) -> list[str]:
        eps = [m.endpoint for m in self.members if m.running()]
        assert eps, "no etcd member is running"
        return eps

    # -- key/value --

    def ctl(self, *args: str, **kwargs) -> subprocess.CompletedProcess:
        """etcdctl against every live member, as the first of them asks
        (its CA; root once auth is on)."""
        first = next(m for m in self.members if m.running())
        return etcdctl(self.live_endpoints(), *args, options=first.ctl_options(), **kwargs)

    def _json(self, *args: str, **kwargs) -> dict:
        out = self.ctl(*args, "-w", "json", **kwargs).stdout
        try:
            return json.loads(out)
        except ValueError as e:
            raise AssertionError(f"etcdctl {' '.join(args)}: not JSON ({e}): {out[:300]!r}")

    def put(self, key: str, value: Union[str, bytes]) -> int:
        """Writes `value` exactly (through stdin: any bytes, a leading dash,
        newlines). Returns the revision of the write."""
        data = value.encode() if isinstance(value, str) else value
        return int(self._json("put", key, input=data)["header"]["revision"])

    def get(self, key: str, revision: Optional[int] = None) -> Optional[KeyValue]:
        """The key now, or as it was at `revision` (which must not be
        compacted)."""
        args = ["get", key] + ([f"--rev={revision}"] if revision else [])
        kvs = self._json(*args).get("kvs") or []
        return KeyValue.from_json(kvs[0]) if kvs else None

    def deleted_at(self, key: str, present_at: int, absent_at: int) -> int:
        """The revision that deleted `key`: the first one after `present_at`
        (where it exists) at which it is gone, up to `absent_at` (where it
        is gone). Binary search over uncompacted history."""
        assert self.get(key, present_at) is not None, f"{key} absent at {present_at}"
        assert self.get(key, absent_at) is None, f"{key} present at {absent_at}"
        lo, hi = present_at, absent_at
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.get(key, mid) is None:
                hi = mid
            else:
                lo = mid
        return hi

    def get_prefix(self, prefix: str) -> list[KeyValue]:
        """Every key under `prefix`, sorted by key."""
        kvs = self._json("get", prefix, "--prefix").get("kvs") or []
        return [KeyValue.from_json(kv) for kv in kvs]

    def delete(self, key: str, prefix: bool = False) -> int:
        """Deletes `key` (or every key under it); returns how many."""
        args = ["del", key] + (["--prefix"] if prefix else [])
        return int(self._json(*args).get("deleted", 0))

    def revision(self) -> int:
        """The store's current revision."""
        return int(self._json("get", "/hf-test/revision-probe")["header"]["revision"])

    def compact(self, revision: Optional[int] = None, physical: bool = True) -> int:
        """Compacts to `revision` (default: the current one); returns it."""
        rev = revision if revision is not None else self.revision()
        self.ctl("compact", str(rev), *(["--physical"] if physical else []))
        return rev

    # -- users ----------------------------------------------------------------

    def enable_auth(self, root_password: str) -> None:
        """Creates root (with the root role) and turns authentication on;
        from then on the harness's etcdctl calls log in as root."""
        self.ctl("user", "add", "root", "--interactive=false", input=root_password.encode())
        self.ctl("role", "add", "root")
        self.ctl("user", "grant-role", "root", "root")
        self.ctl("auth", "enable")
        for m in self.members:
            m.root_password = root_password

    def add_user(self, name: str, password: str, prefix: str) -> None:
        """A user with a role of the same name that may read and write
        every key under `prefix`."""
        self.ctl("user", "add", name, "--interactive=false", input=password.encode())
        self.ctl("role", "add", name)
        self.grant_prefix(name, prefix)
        self.ctl("user", "grant-role", name, name)

    def set_password(self, name: str, password: str) -> None:
        self.ctl("user", "passwd", name, "--interactive=false", input=password.encode())

    def grant_prefix(self, role: str, prefix: str) -> None:
        self.ctl("role", "grant-permission", role, "readwrite", prefix, "--prefix=true")

    def revoke_prefix(self, role: str, prefix: str) -> None:
        self.ctl("role", "revoke-permission", role, prefix, "--prefix=true")


# --- fault injection ---------------------------------------------------------

class FaultProxy:
    """A TCP proxy on 127.0.0.1 (or `host`) in front of one upstream port on
    127.0.0.1, with modes:

    pass       forward bytes both ways.
    blackhole  keep every connection open and keep accepting new ones, but
               read nothing and forward nothing, in either direction (like
               iptables DROP: peers see silence, their writes fill buffers).
               Back in `pass`, held connections resume.
    reject     reset every connection (RST) and close the listening socket,
               so new connections are refused (ECONNREFUSED). Back in
               `pass`/`blackhole`, it listens again on the same port.
    slow       forward bytes both ways, each chunk read held back for
               `delay` seconds (set_mode("slow", delay=...)) before it is
               passed on: a slow link or an overloaded server, in order and
               without loss (netem's delay, on loopback). Back in `pass`,
               what is held goes at once; in `blackhole`, it stays held.

    One selector thread does all I/O. set_mode() returns once the thread has
    applied the mode: after set_mode("reject"), no old connection is open.
    """

    MODES = ("pass", "blackhole", "reject", "slow")
    _BUF = 256 * 1024

    def __init__(self, upstream_port: int, name: str = "proxy", port: int = 0,
                 host: str = "127.0.0.1"):
        self.name = name
        self.host = host
        self.upstream = ("127.0.0.1", upstream_port)
        self._sel = selectors.DefaultSelector()
        self._mode = "pass"
        self.delay = 0.0  # seconds each chunk is held in `slow`
        self._lock = threading.Lock()
        self._pending: list[tuple[str, threading.Event]] = []
        self._conns: set["_Pair"] = set()
        self.accepted = 0
        self._closed = False
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, ("wake", None))
        self._listener: Optional[socket.socket] = None
        self._listen(port)
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"faultproxy-{name}")
        self._thread.start()

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def mode(self) -> str:
        return self._mode

    def connections(self) -> int:
        with self._lock:
            return len(self._conns)

    def set_mode(self, mode: str, timeout: float = 10.0, delay: Optional[float] = None) -> None:
        """Applies `mode`; `delay` (seconds, with "slow" only, required
        there) is how long each chunk is held."""
        assert mode in self.MODES, mode
        assert not self._closed, "proxy closed"
        assert (delay is not None) == (mode == "slow"), "delay goes with slow, only"
        assert delay is None or delay > 0, delay
        done = threading.Event()
        with self._lock:
            self._pending.append((mode, done, delay))
        self._wake()
        if not done.wait(timeout):
            raise AssertionError(f"{self.name}: mode {mode} not applied within {timeout}s")
        if isinstance(getattr(done, "error", None), BaseException):
            raise done.error

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._wake()
        self._thread.join(timeout=10)
        for s in (self._wake_r, self._wake_w):
            s.close()

    # -- internals (selector thread only, except _wake) --

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    def _listen(self, port: int) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((self.host, port))
        s.listen(128)
        s.setblocking(False)
        self._listener = s
        self._sel.register(s, selectors.EVENT_READ, ("accept", None))

    def _unlisten(self) -> None:
        if self._listener is not None:
            self._sel.unregister(self._listener)
            self._listener.close()
            self._listener = None

    def _run(self) -> None:
        try:
            while not self._closed:
                for key, mask in self._sel.select(timeout=self._select_timeout()):
                    kind, pair = key.data
                    if kind == "wake":
                        try:
                            while self._wake_r.recv(4096):
                                pass
                        except BlockingIOError:
                            pass
                    elif kind == "accept":
                        self._accept()
                    elif pair in self._conns:
                        pair.on_event(key.fileobj, mask)
                self._apply_pending()
                self._release_held()
        finally:
            for pair in list(self._conns):
                pair.close(reset=True)
            self._unlisten()
            self._sel.close()
            with self._lock:
                pending, self._pending = self._pending, []
            for _, done, _ in pending:
                done.set()

    def _apply_pending(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        for mode, done, delay in pending:
            try:
                if delay is not None:
                    self.delay = delay
                self._switch(mode)
            except BaseException as e:  # reported to set_mode's caller
                done.error = e
            done.set()

    def _switch(self, mode: str) -> None:
        old, self._mode = self._mode, mode
        if mode == "reject":
            self._unlisten()
            for pair in list(self._conns):
                pair.close(reset=True)
        elif old == "reject":
            self._listen(self.port)
        for pair in list(self._conns):
            pair.update()

    def _select_timeout(self) -> float:
        """Until the next held chunk is due (slow), else 0.5 s."""
        due = [p.next_due() for p in list(self._conns)] if self._mode != "blackhole" else []
        due = [d for d in due if d is not None]
        if not due:
            return 0.5
        return min(0.5, max(0.001, min(due) - time.monotonic()))

    def _release_held(self) -> None:
        if self._mode == "blackhole":
            return
        now = float("inf") if self._mode != "slow" else time.monotonic()
        for pair in list(self._conns):
            pair.release(now)

    def _accept(self) -> None:
        while self._listener is not None:
            try:
                client, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            self.accepted += 1
            client.setblocking(False)
            upstream = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            upstream.setblocking(False)
            err = upstream.connect_ex(self.upstream)
            if err not in (0, errno.EINPROGRESS):
                _reset(client)
                upstream.close()
                continue
            pair = _Pair(self, client, upstream)
            with self._lock:
                self._conns.add(pair)
            pair.update()

    def _forget(self, pair: "_Pair") -> None:
        with self._lock:
            self._conns.discard(pair)


def _reset(sock: socket.socket) -> None:
    """Closes with RST rather than FIN."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
    except OSError:
        pass
    sock.close()


class _Pair:
    """One proxied connection: client <-> upstream, with a bounded buffer
    per direction."""

    def __init__(self, proxy: FaultProxy, client: socket.socket, upstream: socket.socket):
        self.proxy = proxy
        self.client = client
        self.upstream = upstream
        self.connecting = True
        # Bytes waiting to be written to the socket named by the key.
        self.out = {client: bytearray(), upstream: bytearray()}
        # Bytes read in `slow`, not yet due: (when due, bytes) for the
        # socket named by the key, in order.
        self.held = {client: collections.deque(), upstream: collections.deque()}
        self.held_bytes = {client: 0, upstream: 0}
        self.read_eof = {client: False, upstream: False}
        self.shut_wr = {client: False, upstream: False}
        self.registered = {client: 0, upstream: 0}
        self.closed = False

    def other(self, sock):
        return self.upstream if sock is self.client else self.client

    def update(self) -> None:
        """Recomputes what the selector watches on both sockets."""
        if self.closed:
            return
        blackhole = self.proxy._mode == "blackhole"
        for sock in (self.client, self.upstream):
            want = 0
            if not blackhole:
                if sock is self.upstream and self.connecting:
                    want = selectors.EVENT_WRITE
                else:
                    peer = self.other(sock)
                    if (not self.read_eof[sock]
                            and len(self.out[peer]) + self.held_bytes[peer] < FaultProxy._BUF
                            and not (peer is self.upstream and self.connecting)):
                        want |= selectors.EVENT_READ
                    if self.out[sock]:
                        want |= selectors.EVENT_WRITE
            have = self.registered[sock]
            if want == have:
                continue
            sel = self.proxy._sel
            if have and want:
                sel.modify(sock, want, ("conn", self))
            elif want:
                sel.register(sock, want, ("conn", self))
            else:
                sel.unregister(sock)
            self.registered[sock] = want

    def on_event(self, sock, mask) -> None:
        try:
            if sock is self.upstream and self.connecting:
                err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    self.close(reset=True)
                    return
                self.connecting = False
            else:
                if mask & selectors.EVENT_READ:
                    self._read(sock)
                if not self.closed and mask & selectors.EVENT_WRITE:
                    self._write(sock)
            if not self.closed:
                self._maybe_finish()
                self.update()
        except OSError:
            self.close(reset=True)

    def _read(self, sock) -> None:
        peer = self.other(sock)
        data = sock.recv(65536)
        if not data:
            self.read_eof[sock] = True
        elif self.proxy._mode == "slow":
            self.held[peer].append((time.monotonic() + self.proxy.delay, data))
            self.held_bytes[peer] += len(data)
        else:
            self.out[peer] += data
            self._write(peer)

    def next_due(self) -> Optional[float]:
        due = [q[0][0] for q in self.held.values() if q]
        return min(due) if due else None

    def release(self, now: float) -> None:
        """Passes on the held chunks due by `now` (inf: all of them)."""
        if self.closed or not any(self.held.values()):
            return
        try:
            for sock, q in self.held.items():
                while q and q[0][0] <= now:
                    _, data = q.popleft()
                    self.held_bytes[sock] -= len(data)
                    self.out[sock] += data
                self._write(sock)
            self._maybe_finish()
            self.update()
        except OSError:
            self.close(reset=True)

    def _write(self, sock) -> None:
        buf = self.out[sock]
        if buf:
            try:
                n = sock.send(buf)
            except BlockingIOError:
                return
            del buf[:n]

    def _maybe_finish(self) -> None:
        # Half-close: once one side ended and its bytes are delivered, end
        # the other side's write direction too.
        for sock in (self.client, self.upstream):
            peer = self.other(sock)
            if (self.read_eof[sock] and not self.out[peer] and not self.held[peer]
                    and not self.shut_wr[peer]):
                try:
                    peer.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                self.shut_wr[peer] = True
        if (all(self.read_eof.values()) and not any(self.out.values())
                and not any(self.held.values())):
            self.close()

    def close(self, reset: bool = False) -> None:
        if self.closed:
            return
        self.closed = True
        for sock in (self.client, self.upstream):
            if self.registered[sock]:
                try:
                    self.proxy._sel.unregister(sock)
                except (KeyError, ValueError):
                    pass
            if reset:
                _reset(sock)
            else:
                sock.close()
        self.proxy._forget(self)


def which_etcd() -> Optional[str]:
    """Why etcd cannot run here, or None if it can."""
    for path in (ETCD, ETCDCTL):
        if not (Path(path).exists() or shutil.which(path)):
            return f"{path} not found (install Debian's etcd-server and etcd-client)"
    return None


def etcd_history(endpoints, prefix: str, quiet: float = 3.0, limit: float = 120.0) -> list:
    """Every event under `prefix` since revision 1, in revision order:
    {key, mod_revision, create_revision, value (None for a delete)}: a watch
    from revision 1, read until it has been silent for `quiet` seconds (etcd
    replays history at once; call it when nothing writes any more), at most
    `limit`. Needs a store that never compacted."""
    proc = subprocess.Popen([ETCDCTL, f"--endpoints={','.join(endpoints)}", "watch", "--prefix",
                             prefix, "--rev=1", "-w", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=etcdctl_env())
    out = []
    last = [time.monotonic()]

    def read():
        for raw in proc.stdout:
            last[0] = time.monotonic()
            try:
                doc = json.loads(raw)
            except ValueError:
                continue
            for e in doc.get("Events") or []:
                kv = e.get("kv", {})
                deleted = e.get("type") == 1
                out.append({"key": _b64(kv.get("key")).decode(errors="replace"),
                            "mod_revision": int(kv.get("mod_revision", 0)),
                            "create_revision": int(kv.get("create_revision", 0)),
                            "value": None if deleted else
                            _b64(kv.get("value")).decode(errors="replace")})

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    started = time.monotonic()
    while time.monotonic() - last[0] < quiet and time.monotonic() - started < limit:
        time.sleep(0.2)
    proc.kill()
    proc.wait()
    reader.join(timeout=5)
    return sorted(out, key=lambda e: e["mod_revision"])

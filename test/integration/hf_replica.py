"""holdfast on etcd (docs/etcd.md): replicas of `holdfast serve
--etcd-endpoints`, the `holdfast apply/get/delete` commands, the store's
status keys as etcdctl sees them, and the checks the etcd test modules share
(objects, statuses, clients of a replica, readiness).

Replicas run with short election timings (lease 4 s, renew deadline 3 s,
retry period 1 s) so a failover takes seconds; tests still only wait for
conditions, with deadlines far above those timings.
"""

import json
import re
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from hf_admin import Admin
from hf_etcd import EtcdCluster, KeyValue
from hf_gateway import route, to_yaml, upstream, virtual_service
from hf_process import ManagedProcess, ProcessSet, environ_without_grpc, wait_for_file
from hf_snapshot_file import check_snapshot_file
from hf_wait import wait_for
from hf_world import START_TIMEOUT, XdsClient, assert_no_nack

LEASE_DURATION = 4.0
RENEW_DEADLINE = 3.0
RETRY_PERIOD = 1.0
# holdfast's elector waits 0.8-1.2 x the retry period (LeaseElector retry_jitter).
RETRY_JITTER = 0.2
# A failover: the dead leader's lease runs out, a follower notices on its
# next retry, then writes statuses. Slack for two loaded cores.
FAILOVER_TIMEOUT = LEASE_DURATION + RETRY_PERIOD + 25.0
# Config or status changes reaching every replica.
CONVERGE_TIMEOUT = 30.0
# --store-grace for tests that restart a replica while the store is out of
# reach: short, the tests wait for it.
GRACE = 2.0
GRACE_FLAGS = ["--store-grace", f"{GRACE:g}s"]

NS = "test"
# Upstreams no client calls: any port will do.
UNUSED_PORT_A = 18081
UNUSED_PORT_B = 18082
MAX_REASONS = 20

READY_PERSISTED = re.compile(r"^ready: serving persisted snapshot (\S+) from ")
READY_LIVE = re.compile(r"^ready: serving snapshot (\S+) from ")


def _secs(seconds: float) -> str:
    return f"{seconds:g}s"


@dataclass(frozen=True)
class EtcdLogin:
    """How holdfast (replicas and the CLI) gets into etcd besides the
    endpoints: the CA that signed etcd's certificate (--etcd-ca-file) and a
    user (--etcd-username; the password in $HOLDFAST_ETCD_PASSWORD)."""
    ca_file: Optional[Path] = None
    username: Optional[str] = None
    password: Optional[str] = None

    def flags(self) -> list:
        out = []
        if self.ca_file is not None:
            out += ["--etcd-ca-file", self.ca_file]
        if self.username is not None:
            out += ["--etcd-username", self.username]
        return out

    def env(self) -> dict:
        env = environ_without_grpc()
        env.pop("HOLDFAST_ETCD_PASSWORD", None)
        if self.password is not None:
            env["HOLDFAST_ETCD_PASSWORD"] = self.password
        return env


class Replica:
    """One `holdfast serve --etcd-endpoints` process. start() may be called
    again after kill() (same replica id and --state-dir; new ports; `extra`
    replaces the extra arguments when given, e.g. ["--store-grace", "2s"])."""

    def __init__(self, procs: ProcessSet, binary: Path, name: str, endpoints: str,
                 prefix: str, work: Path, *, extra: Sequence[str] = (),
                 login: EtcdLogin = EtcdLogin()):
        self._procs = procs
        self._binary = binary
        self.name = name
        self.endpoints = endpoints
        self.prefix = prefix
        self.login = login
        self._extra = list(extra)
        self._ports_file = Path(work) / f"replica-{name}-ports.json"
        # Its own last-known-good snapshot (--state-dir): never the default
        # (relative to the working directory, shared by every replica).
        self.state_dir = Path(work) / f"replica-{name}-state"
        self.proc: Optional[ManagedProcess] = None
        self.xds_port: Optional[int] = None
        self.admin: Optional[Admin] = None

    def argv(self) -> list:
        return [
            self._binary, "serve",
            "--etcd-endpoints", self.endpoints,
            "--etcd-prefix", self.prefix,
            "--replica-id", self.name,
            "--lease-duration", _secs(LEASE_DURATION),
            "--renew-deadline", _secs(RENEW_DEADLINE),
            "--retry-period", _secs(RETRY_PERIOD),
            "--xds-listen", "127.0.0.1:0",
            "--admin-listen", "127.0.0.1:0",
            "--ports-file", self._ports_file,
            "--state-dir", self.state_dir,
            *self.login.flags(),
            *self._extra,
        ]

    @property
    def snapshot_file(self) -> Path:
        """The last-known-good snapshot file in its --state-dir."""
        return self.state_dir / "last-good.snapshot"

    def start(self, extra: Optional[Sequence[str]] = None) -> "Replica":
        assert not self.running(), f"replica {self.name} already running"
        if extra is not None:
            self._extra = list(extra)
        self._ports_file.unlink(missing_ok=True)
        self.proc = self._procs.start(f"holdfast-{self.name}", self.argv(),
                                      env=self.login.env(), check_exit=True)
        ports = json.loads(wait_for_file(self._ports_file, self.proc, START_TIMEOUT))
        self.xds_port = int(ports["xds"])
        self.admin = Admin(int(ports["admin"]))
        return self

    def running(self) -> bool:
        return self.proc is not None and self.proc.running()

    def assert_running(self) -> None:
        assert self.running(), (f"replica {self.name} exited with "
                                f"{self.proc.proc.returncode}:\n{self.proc.log_tail()}")

    def wait_ready(self, timeout: float = START_TIMEOUT) -> "Replica":
        def observe():
            self.assert_running()
            return self.admin.get("/readyz")
        wait_for(observe, lambda r: r[0] == 200, timeout=timeout,
                 what=f"replica {self.name} /readyz to return 200")
        return self

    def kill(self) -> None:
        """SIGKILL: no resignation, the lease must run out."""
        self.proc.kill(signal.SIGKILL)

    def pause(self) -> None:
        self.proc.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.proc.proc.send_signal(signal.SIGCONT)

    # -- admin --

    def leader(self) -> dict:
        """/debug/leader: {"replica", "is_leader", "term", "leader", "transitions"}."""
        self.assert_running()
        doc = self.admin.get_json("/debug/leader")
        for field in ("replica", "is_leader", "term", "leader", "transitions"):
            assert field in doc, f"{self.name} /debug/leader lacks {field!r}: {doc!r}"
        return doc

    def store(self) -> dict:
        """/debug/store: {"connected", "revision", "last_error", "unreachable_seconds",
        ...} (the last-known-good fields are checked by the tests that use them)."""
        self.assert_running()
        doc = self.admin.get_json("/debug/store")
        for field in ("connected", "revision", "last_error", "unreachable_seconds"):
            assert field in doc, f"{self.name} /debug/store lacks {field!r}: {doc!r}"
        return doc

    def metric(self, name: str, **labels) -> float:
        return self.admin.metric(name, **labels)

    def log_size(self) -> int:
        """A mark in this process's log, for log_lines_since(). A restarted
        replica is a new process with a log of its own: a mark does not carry over."""
        return self.proc.log_size()

    def log_lines_since(self, mark: int) -> list[str]:
        return self.proc.log_lines_since(mark)

    def __repr__(self) -> str:
        return f"Replica({self.name})"


class HoldfastCli:
    """`holdfast apply/get/delete` against one etcd prefix."""

    def __init__(self, binary: Path, endpoints: str, prefix: str,
                 login: EtcdLogin = EtcdLogin()):
        self.binary = binary
        self.endpoints = endpoints
        self.prefix = prefix
        self.login = login

    def run(self, command: str, *args, timeout: float = 60.0) -> subprocess.CompletedProcess:
        argv = [str(self.binary), command, "--etcd-endpoints", self.endpoints,
                "--etcd-prefix", self.prefix, *[str(a) for a in self.login.flags()],
                *[str(a) for a in args]]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                           env=self.login.env(), stdin=subprocess.DEVNULL)
        r.argv = argv
        return r

    @staticmethod
    def describe(r: subprocess.CompletedProcess) -> str:
        return (f"$ {' '.join(r.argv)}\nexit {r.returncode}\n--- stdout\n{r.stdout}"
                f"--- stderr\n{r.stderr}")

    def apply(self, *files: Path, partial: bool = False,
              expect: Optional[int] = 0) -> subprocess.CompletedProcess:
        """Runs apply; checks the exit code unless `expect` is None."""
        args = []
        for f in files:
            args += ["-f", f]
        if partial:
            args.append("--partial")
        r = self.run("apply", *args)
        if expect is not None:
            assert r.returncode == expect, self.describe(r)
        if expect == 0:
            count = _applied_count(r.stdout)
            assert count is not None, ("apply did not print 'applied N objects'",
                                       self.describe(r))
        return r

    def get(self, kind: Optional[str] = None) -> list:
        """`get -o json`: a list of {"kind", "namespace", "name", "status"}."""
        r = self.run("get", *([kind] if kind else []), "-o", "json")
        assert r.returncode == 0, self.describe(r)
        try:
            doc = json.loads(r.stdout)
        except ValueError as e:
            raise AssertionError(f"get -o json printed no JSON ({e})\n{self.describe(r)}")
        assert isinstance(doc, list), self.describe(r)
        return doc

    def get_table(self, kind: Optional[str] = None) -> list[list[str]]:
        """`get` (table): one [KIND, NAMESPACE/NAME, STATE] per object."""
        r = self.run("get", *([kind] if kind else []))
        assert r.returncode == 0, self.describe(r)
        rows = [line.split() for line in r.stdout.splitlines() if line.strip()]
        # A header line is allowed; object lines have exactly three fields.
        return [row for row in rows if len(row) == 3 and row[0] != "KIND"]

    def delete(self, kind: str, ns_name: str, expect: Optional[int] = 0):
        r = self.run("delete", kind, ns_name)
        if expect is not None:
            assert r.returncode == expect, self.describe(r)
        return r


def _applied_count(stdout: str) -> Optional[int]:
    m = re.search(r"applied (\d+) objects?", stdout)
    return int(m.group(1)) if m else None


class Store:
    """One test's etcd prefix: replicas, the CLI and the keys under it.
    Replicas and the CLI trust the CA of a TLS etcd, and log in as the user
    given to log_in(), if any."""

    def __init__(self, procs: ProcessSet, binary: Path, etcd: EtcdCluster, work: Path):
        self.procs = procs
        self.binary = binary
        self.etcd = etcd
        self.work = Path(work)
        self.prefix = f"/hf-{uuid.uuid4().hex[:12]}"
        self.login = EtcdLogin(ca_file=etcd.tls.ca_file if etcd.tls else None)
        self.cli = HoldfastCli(binary, etcd.endpoints_flag, self.prefix, self.login)
        self.objects_dir = self.work / "objects"
        self.objects_dir.mkdir(parents=True, exist_ok=True)
        self.replicas: list[Replica] = []

    def replica(self, name: str, *, endpoints: Optional[str] = None,
                extra: Sequence[str] = ()) -> Replica:
        """Starts a replica (every etcd member as endpoints unless given) and
        waits for its ports file; not for readiness."""
        r = Replica(self.procs, self.binary, name, endpoints or self.etcd.endpoints_flag,
                    self.prefix, self.work, extra=extra, login=self.login)
        self.replicas.append(r)
        return r.start()

    def log_in(self, username: str, password: str) -> None:
        """Replicas started from now on, and the CLI, log in as `username`."""
        self.login = EtcdLogin(ca_file=self.login.ca_file, username=username, password=password)
        self.cli.login = self.login

    def close(self) -> None:
        """Stops every replica (SIGTERM: they resign) while etcd still runs."""
        for r in reversed(self.replicas):
            if r.proc is not None:
                if r.running():
                    # A paused replica cannot handle SIGTERM.
                    r.resume()
                r.proc.stop()

    # -- object files --

    def write(self, file_name: str, *objects: dict) -> Path:
        path = self.objects_dir / file_name
        path.write_text(to_yaml(*objects))
        return path

    def line_of(self, path: Path, needle: str) -> int:
        lines = Path(path).read_text().splitlines()
        hits = [i + 1 for i, line in enumerate(lines) if needle in line]
        assert len(hits) == 1, f"{needle!r} is on lines {hits} of {path}, expected one"
        return hits[0]

    def apply(self, file_name: str, *objects: dict) -> subprocess.CompletedProcess:
        """Writes `objects` to a file and applies it (must succeed)."""
        return self.cli.apply(self.write(file_name, *objects))

    # -- keys --

    def key(self, section: str, kind: str, ns: str, name: str) -> str:
        return f"{self.prefix}/{section}/{kind}/{ns}/{name}"

    def config_keys(self) -> dict[str, KeyValue]:
        return {kv.key: kv for kv in self.etcd.get_prefix(f"{self.prefix}/config/")}

    def status_kvs(self) -> dict[tuple, KeyValue]:
        """Status keys by (kind, namespace, name) parsed from the key."""
        out = {}
        base = f"{self.prefix}/status/"
        for kv in self.etcd.get_prefix(base):
            parts = kv.key[len(base):].split("/")
            assert len(parts) == 3, f"status key {kv.key!r} is not {base}KIND/NS/NAME"
            out[tuple(parts)] = kv
        return out

    def statuses(self) -> dict[tuple, dict]:
        """Status values (parsed JSON) by (kind, namespace, name); a value
        that is not JSON shows as {"<not json>": raw}."""
        out = {}
        for k, kv in self.status_kvs().items():
            try:
                out[k] = json.loads(kv.value)
            except ValueError:
                out[k] = {"<not json>": kv.text()}
        return out

    def election_kvs(self) -> list[KeyValue]:
        return self.etcd.get_prefix(f"{self.prefix}/election/")


def agreed_leader(views: dict):
    """(name, term) of the one replica in `views` ({name: /debug/leader}) that
    says is_leader, when every replica names it as leader; else None."""
    leaders = [n for n, v in views.items() if v["is_leader"] is True]
    if len(leaders) != 1:
        return None
    # The contract does not say what `term` a follower reports; only the
    # leader's own view of its term is used.
    name = leaders[0]
    term = int(views[name]["term"])
    if term <= 0 or any(v["leader"] != name for v in views.values()):
        return None
    return name, term


def leader_views(replicas: Sequence[Replica]) -> dict:
    return {r.name: r.leader() for r in replicas}


def the_leader(replicas: Sequence[Replica], timeout: float = FAILOVER_TIMEOUT) -> tuple:
    """Waits until exactly one of `replicas` says is_leader and every one of
    them names it as leader; returns (leader, its term)."""
    views = wait_for(lambda: leader_views(replicas), lambda v: agreed_leader(v) is not None,
                     timeout=timeout,
                     what=f"one leader agreed on by {[r.name for r in replicas]}", interval=0.2)
    name, term = agreed_leader(views)
    leader = next(r for r in replicas if r.name == name)
    return leader, term


# --- objects and statuses ------------------------------------------------------

def echo_to(backend: str, name: str = "echo", domains=("echo.test",)) -> dict:
    return virtual_service(name, [route(name="default", upstream=backend)], domains=domains)


def upstreams(alpha_port: int = UNUSED_PORT_A, beta_port: int = UNUSED_PORT_B) -> list:
    return [upstream("alpha", alpha_port), upstream("beta", beta_port)]


def key_of(kind: str, name: str, ns: str = NS) -> tuple:
    return (kind, ns, name)


def assert_status_value(key: tuple, value: dict) -> None:
    """The fields docs/etcd.md gives a status value."""
    kind, ns, name = key
    assert "<not json>" not in value, (key, value)
    assert (value.get("kind"), value.get("namespace"), value.get("name")) == key, (key, value)
    for field in ("state", "servingLastGood", "reasons", "writer", "term"):
        assert field in value, f"status of {key} lacks {field!r}: {value!r}"
    assert isinstance(value["reasons"], list), value
    # docs/etcd.md: "reasons is limited to 20 entries and each message to 1 KiB".
    assert len(value["reasons"]) <= MAX_REASONS, (
        f"status of {key} has {len(value['reasons'])} reasons, more than {MAX_REASONS}; "
        f"the last: {value['reasons'][-1]!r}")
    for r in value["reasons"]:
        assert len(r.get("message", "").encode()) <= 1024, (
            f"status of {key}: a reason's message has {len(r['message'].encode())} bytes")


def written_by(statuses: dict, writer: str, term: int) -> bool:
    return all(v.get("writer") == writer and v.get("term") == term for v in statuses.values())


def wait_status_by_current_leader(s: Store, replicas: Sequence[Replica], key: tuple,
                                  state: str) -> None:
    """Waits until `key`'s stored status has `state` and was written by the
    leader every replica agrees on, under its term, when it is read."""
    def observe():
        return s.statuses().get(key, {}), agreed_leader(leader_views(replicas))

    wait_for(observe,
             lambda seen: seen[1] is not None
             and (seen[0].get("state"), seen[0].get("writer"), seen[0].get("term"))
             == (state, *seen[1]),
             timeout=CONVERGE_TIMEOUT,
             what=f"{key}'s {state} status written by the current leader under its term")


def wait_store_statuses(store: Store, expected: dict, *, what: str,
                        timeout: float = CONVERGE_TIMEOUT, extra=None) -> dict:
    """Waits until the status keys are exactly `expected` ({key: state}) and
    `extra(statuses)` holds; returns the statuses."""
    def ok(statuses):
        if {k: v.get("state") for k, v in statuses.items()} != expected:
            return False
        return extra is None or extra(statuses)

    statuses = wait_for(store.statuses, ok, timeout=timeout, what=what, interval=0.2)
    for k, v in statuses.items():
        assert_status_value(k, v)
    return statuses


# --- clients and readiness -------------------------------------------------------

def new_client(procs, binaries, tmp_path, replica: Replica, kind: str = "cpp") -> XdsClient:
    return XdsClient(procs, binaries, kind, replica.xds_port, tmp_path, interval_ms=100)


def serving(replica: Replica, c: XdsClient, backend: str, *, since: int = 0,
            timeout: float = CONVERGE_TIMEOUT,
            guard: Optional[Callable[[], None]] = None) -> None:
    """`c` (a client of `replica`) reaches `backend` 5 times in a row, with
    no NACK; `guard` runs on every poll."""
    def check():
        if guard is not None:
            guard()
        assert_no_nack(replica.admin, c.node_id)
    c.wait_serving(backend, since=since, timeout=timeout, guard=check)


def readyz(replica: Replica) -> tuple:
    replica.assert_running()
    status, body = replica.admin.get("/readyz")
    return status, body.strip()


def assert_ready(replica: Replica) -> str:
    status, body = readyz(replica)
    assert status == 200, f"{replica.name} /readyz: {status} {body!r}"
    return body


def store_doc(replica: Replica) -> dict:
    """/debug/store with the last-known-good fields checked too."""
    doc = replica.store()
    for field in ("synced", "serving", "persisted_version", "restore_error", "persist_error"):
        assert field in doc, f"{replica.name} /debug/store lacks {field!r}: {doc!r}"
    assert doc["serving"] in ("live", "persisted", "nothing"), doc
    return doc


def all_running(replicas: Sequence[Replica]) -> Callable[[], None]:
    def guard():
        for r in replicas:
            r.assert_running()
    return guard


def all_ready(replicas: Sequence[Replica]) -> Callable[[], None]:
    """Guard: every replica runs and /readyz answers 200."""
    def guard():
        for r in replicas:
            assert_ready(r)
    return guard


def hold(duration_from: float, duration: float, guard: Callable[[], None]) -> None:
    """Keeps a fault open until `duration` seconds after `duration_from`
    (time.monotonic()), running `guard` every 0.2 s."""
    while time.monotonic() - duration_from < duration:
        guard()
        time.sleep(0.2)
    guard()


def live_version(replica: Replica) -> str:
    body = assert_ready(replica)
    m = READY_LIVE.match(body)
    assert m, f"{replica.name} /readyz does not say it serves a live snapshot: {body!r}"
    return m.group(1)


def wait_snapshot_written(replica: Replica, timeout: float = CONVERGE_TIMEOUT) -> bytes:
    """Waits until the replica has written the snapshot it serves live to
    its snapshot file (/debug/store's written_version is the version /readyz
    serves; writes may lag changes by up to a second), and returns the file,
    checked."""
    path = replica.snapshot_file

    def observe():
        status, body = readyz(replica)
        m = READY_LIVE.match(body) if status == 200 else None
        return (m.group(1) if m else None), store_doc(replica).get("written_version")

    wait_for(observe, lambda s: s[0] is not None and s[0] == s[1], timeout=timeout,
             what=f"{replica.name} to write the snapshot it serves to {path}", interval=0.1)
    data = path.read_bytes()
    check_snapshot_file(data)
    doc = store_doc(replica)
    assert doc["persist_error"] in ("", None), doc
    return data

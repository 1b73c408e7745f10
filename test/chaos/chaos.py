#!/usr/bin/env python3
"""Chaos run: a realistic holdfast deployment on one machine under a nemesis.

    python3 test/chaos/chaos.py --profile short|long [--seed N] [--out DIR]
                                [--store etcd|kube]

With --store kube the configuration comes from a real Kubernetes API server
instead (kube_chaos.py: the same deployment, fleet, writer and history, the
store and its faults replaced); what follows describes the etcd store.

Deployment (everything on 127.0.0.1): a three-member etcd cluster; three
holdfast replicas, each reaching every etcd member through its own
FaultProxy (so the store can be blackholed or reset for one replica, for
all, or for the leader only); one stable "front" TCP proxy per replica for
xDS (what a load balancer would be: a restarted replica gets new ports, the
front keeps its own); a fleet of simulated proxies (chaos-fleet, a Go ADS
client built from fleet/) and real proxyless gRPC clients (xds_cpp_client)
calling echo backends; a writer that applies a new configuration
generation about every second with `holdfast apply`.

The nemesis injects, one at a time: store blackholed or reset for one
replica / all / the leader; an etcd member killed and restarted; quorum
lost (two members killed) and regained; a replica SIGKILLed while its
snapshot file is being written (holdfast's test hook stops the write
halfway) and restarted; a replica killed and restarted while its store is
cut off (it must serve its persisted snapshot); the leader SIGSTOPped past
its lease. New proxies connect during every fault; half the fleet speaks
delta xDS, half state of the world. The echo route names alpha for five
generations, then beta for five, so a real client's backend tells whether
it has the generation being served.

Everything that happens is appended to DIR/history.jsonl (one JSON object a
line, `t` in Unix seconds); checker.py judges it. Unless --no-netns is
given (or it already runs in one), the runner re-executes itself inside a
private network namespace with only loopback (`unshare --net
--map-root-user`), so no packet can leave the machine.
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))

from hf_etcd import EtcdCluster, FaultProxy, etcd_history, which_etcd  # noqa: E402
from hf_gateway import route, upstream, virtual_service  # noqa: E402
from hf_process import ProcessSet, environ_without_grpc  # noqa: E402
from hf_snapshot_file import DamagedFile, check_snapshot_file  # noqa: E402
from hf_replica import LEASE_DURATION, RETRY_JITTER, RETRY_PERIOD, Store  # noqa: E402
from hf_world import Backend, Binaries, XdsClient  # noqa: E402

NS = "chaos"
GEN_CLUSTER = f"{NS}/gen"
GEN_PORT_BASE = 1000
STORE_GRACE = 2.0
CONVERGE_TIMEOUT = 30.0
# The echo route names alpha for BACKEND_PERIOD generations, then beta for as
# many: a real client stuck on an old generation soon reaches the wrong one.
BACKEND_PERIOD = 5
REAL_DEADLINE_MS = 1000
# holdfast's test hook (src/snapshot/snapshot_file.cc): with it set, a
# snapshot write stops halfway through its bytes while FILE.pause exists
# beside the snapshot file, renamed to FILE.paused, so a kill lands mid-write.
PAUSE_HOOK_ENV = "HOLDFAST_TEST_PAUSE_SNAPSHOT_WRITE"

PROFILES = {
    # ~12 faults, durations 1-8 s: a few minutes on two busy cores.
    # Half the fleet speaks delta xDS, half state of the world.
    "short": dict(faults=12, min_dur=1.0, max_dur=8.0, long_share=0.0, proxies=40,
                  mid_fault_proxies=3, gap=1.0, delta_share=0.5),
    # Hundreds of faults on demand; durations 1-120 s (a tenth of them long).
    "long": dict(faults=300, min_dur=1.0, max_dur=20.0, long_share=0.1, proxies=60,
                 mid_fault_proxies=2, gap=1.0, delta_share=0.5),
}

FAULT_KINDS = ("store-blackhole-one", "store-blackhole-all", "store-blackhole-leader",
               "store-reject-one", "etcd-member-kill", "etcd-quorum-loss",
               "replica-kill", "replica-kill-cut-off", "leader-pause")
# Faults after which the store returned for the replicas: a single leader
# must be in place within lease + retry period + one round trip.
STORE_FAULTS = {"store-blackhole-one", "store-blackhole-all", "store-blackhole-leader",
                "store-reject-one", "etcd-member-kill", "etcd-quorum-loss",
                "replica-kill-cut-off", "leader-pause"}


def backend_of(gen: int) -> str:
    """The backend generation `gen`'s echo route names."""
    return "alpha" if (gen // BACKEND_PERIOD) % 2 == 0 else "beta"


# --- history -----------------------------------------------------------------

class History:
    def __init__(self, path: Path):
        self._f = open(path, "a", buffering=1)
        self._lock = threading.Lock()

    def add(self, kind: str, **fields) -> dict:
        ev = {"t": fields.pop("t", time.time()), "kind": kind, **fields}
        with self._lock:
            self._f.write(json.dumps(ev, sort_keys=True) + "\n")
        return ev

    def close(self) -> None:
        self._f.close()


# --- the fleet of simulated proxies -------------------------------------------

def build_fleet() -> Path:
    """Builds fleet/ (chaos-fleet) into the holdfast cache, keyed by source."""
    import hashlib
    src = HERE / "fleet"
    h = hashlib.sha256()
    for p in sorted(src.iterdir()):
        if p.suffix == ".go" or p.name in ("go.mod", "go.sum"):
            h.update(p.name.encode() + p.read_bytes())
    cache = Path(os.environ.get("HOLDFAST_CACHE", Path.home() / ".cache" / "holdfast"))
    binary = cache / "bin" / f"chaos-fleet-{h.hexdigest()[:16]}"
    if binary.exists():
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOPATH=str(cache / "go"), GOMODCACHE=str(cache / "go" / "mod"),
               GOCACHE=str(cache / "go" / "build"),
               GOFLAGS="-modcacherw -buildvcs=false", GOWORK="off")
    tmp = binary.with_name(binary.name + f".tmp{os.getpid()}")
    r = subprocess.run([shutil.which("go") or "go", "build", "-o", str(tmp), "."], cwd=src,
                       env=env, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise SystemExit(f"go build of {src} failed:\n{r.stderr[-3000:]}")
    os.replace(tmp, binary)
    return binary


class Fleet:
    """chaos-fleet as a child; its events go to the history as `fleet`."""

    def __init__(self, binary: Path, targets: list, history: History, log_dir: Path):
        self.history = history
        self.gens: dict[int, int] = {}
        self.alive: set[int] = set()
        self.complete = 0
        self._lock = threading.Lock()
        self._log = open(log_dir / "chaos-fleet.log", "ab")
        self.proc = subprocess.Popen(
            [str(binary), "--targets", ",".join(targets), "--gen-cluster", GEN_CLUSTER],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
            env=environ_without_grpc(), start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for raw in self.proc.stdout:
            try:
                ev = json.loads(raw)
            except ValueError:
                continue
            with self._lock:
                p = ev.get("p")
                if ev["ev"] == "connect":
                    self.alive.add(p)
                elif ev["ev"] == "gen":
                    self.gens[p] = ev["gen"]
                elif ev["ev"] == "complete":
                    self.complete += 1
            t = ev.pop("t")
            self.history.add("fleet", t=t, **ev)

    def add(self, n: int, target: int = -1, proto: str = "sotw") -> None:
        """Starts n proxies speaking `proto` (sotw or delta), round-robin
        over the targets or all on `target`."""
        self.proc.stdin.write(f"add {n} {target} {proto}\n".encode())
        self.proc.stdin.flush()
        self.history.add("fleet_add", n=n, target=target, proto=proto)

    def lagging(self, gen: int) -> list:
        with self._lock:
            return [p for p in self.alive if self.gens.get(p, -1) < gen]

    def close(self) -> None:
        try:
            self.proc.stdin.write(b"quit\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=5)
        self._log.close()


class RealClient:
    """An xds_cpp_client whose output lines are timestamped into the history:
    each line's RPC ended between the previous poll (`since`) and `t`."""

    def __init__(self, client: XdsClient, front: int, history: History, deadline: float):
        self.client = client
        self.front = front
        self.history = history
        self.started = time.time()
        self.last_poll = self.started
        self.seen = 0
        history.add("real_start", node=client.node_id, front=front, deadline=deadline)

    def poll(self) -> None:
        lines = self.client.lines(self.seen)
        now = time.time()
        for line in lines:
            self.history.add("real_rpc", t=now, since=self.last_poll, node=self.client.node_id,
                             line=line[:200])
        self.last_poll = now
        self.seen += len(lines)
        if not self.client.proc.running() and not getattr(self, "_exit_logged", False):
            self._exit_logged = True
            self.history.add("real_exit", node=self.client.node_id,
                             code=self.client.proc.proc.returncode)


# --- the deployment ----------------------------------------------------------

class Deployment:
    """The etcd deployment. A subclass replaces the store: the methods of
    the "store" section (start_store, start_replica, apply_gen,
    store_fault, wait_store_back, heal_store, record_store_history,
    close_store) and the class attributes below."""

    STORE = "etcd"
    FAULT_KINDS = FAULT_KINDS
    # Replicas elect a leader (/debug/leader): the nemesis waits for an
    # agreed one after each fault and the checker judges leadership.
    LEADERSHIP = True

    def __init__(self, out: Path, profile: dict, rng: random.Random):
        self.out = out
        self.profile = profile
        self.rng = rng
        self.history = History(out / "history.jsonl")
        self.procs = ProcessSet(out / "logs")
        self.binaries = Binaries.from_env()
        self.lock = threading.RLock()
        self.stopping = threading.Event()
        self.expected_down: set[str] = set()   # replicas we killed, not yet restarted
        self.paused: set[str] = set()
        self.gen = 0
        self.committed = 0
        self.real: list[RealClient] = []
        self.fault_seq = 0
        self.last_obs: dict[str, dict] = {}

    # -- setup --

    def start(self) -> None:
        self.check_prerequisites()
        for p in (self.binaries.holdfast, self.binaries.echo_backend,
                  self.binaries.xds_cpp_client):
            if not Path(p).exists():
                raise SystemExit(f"missing binary {p} (set HOLDFAST_BUILD_DIR)")
        fleet_bin = build_fleet()
        self.history.add("run_start", profile=self.profile, pid=os.getpid(),
                         store=self.STORE, leadership=self.LEADERSHIP,
                         fault_kinds=list(self.FAULT_KINDS),
                         lease=LEASE_DURATION, retry=RETRY_PERIOD,
                         retry_jitter=RETRY_JITTER, store_grace=STORE_GRACE)
        os.environ[PAUSE_HOOK_ENV] = "1"  # replicas inherit it
        self.start_store()
        self.alpha = Backend(self.procs, self.binaries.echo_backend, "alpha", self.out)
        self.beta = Backend(self.procs, self.binaries.echo_backend, "beta", self.out)
        self.write_gen()  # generation 1 before any replica starts
        self.store_proxies: dict[str, list[FaultProxy]] = {}
        self.replicas = {}
        self.fronts: dict[str, FaultProxy] = {}
        for name in ("a", "b", "c"):
            t_exec = time.time()
            r = self.start_replica(name)
            self.replicas[name] = r
            self.fronts[name] = FaultProxy(r.xds_port, name=f"front-{name}")
            self.history.add("replica_start", replica=name, pid=r.proc.pid, exec=t_exec,
                             xds=r.xds_port, front=self.fronts[name].port)
        for r in self.replicas.values():
            r.wait_ready()
        self.names = list(self.replicas)
        # Seen ready before any client starts (the checker measures from it).
        self.observe_replicas()
        self.fleet = Fleet(fleet_bin, [self.fronts[n].endpoint for n in self.names],
                           self.history, self.out / "logs")
        self.history.add("fleet_targets", names=self.names)
        self.monitor = threading.Thread(target=self._monitor, daemon=True, name="monitor")
        self.monitor.start()
        n = self.profile["proxies"]
        delta = round(n * self.profile.get("delta_share", 0.0))
        self.fleet.add(n - delta)
        self.fleet.add(delta, proto="delta")
        for i, n in enumerate(self.names[:2]):
            self.add_real_client(i)
        self.writer = threading.Thread(target=self._writer, daemon=True, name="writer")
        self.writer.start()

    def add_real_client(self, front_index: int) -> None:
        name = self.names[front_index % len(self.names)]
        c = XdsClient(self.procs, self.binaries, "cpp", self.fronts[name].port,
                      self.out, interval_ms=200, deadline_ms=REAL_DEADLINE_MS)
        with self.lock:
            self.real.append(RealClient(c, front_index, self.history, REAL_DEADLINE_MS / 1000))

    # -- the store (etcd here; a subclass replaces this section) --

    def check_prerequisites(self) -> None:
        problem = which_etcd()
        if problem:
            raise SystemExit(problem)

    def start_store(self) -> None:
        self.etcd = EtcdCluster(self.procs, self.out / "etcd", size=3).start()
        self.store = Store(self.procs, self.binaries.holdfast, self.etcd, self.out / "store")
        self.history.add("prefix", prefix=self.store.prefix)

    def start_replica(self, name: str):
        """Starts replica `name` behind its own fault proxies (stored in
        self.store_proxies[name], what set_store() switches); returns it
        once its ports are known."""
        proxies = [FaultProxy(m.client_port, name=f"store-{name}-{i}")
                   for i, m in enumerate(self.etcd.members)]
        self.store_proxies[name] = proxies
        return self.store.replica(name, endpoints=",".join(p.endpoint for p in proxies),
                                  extra=["--store-grace", f"{STORE_GRACE:g}s"])

    def apply_gen(self, gen: int) -> tuple:
        """Applies generation `gen`'s objects; (exit code, error text)."""
        path = self.store.write(f"gen-{gen % 4}.yaml", *self.objects(gen))
        try:
            r = self.store.cli.run("apply", "-f", path, timeout=30)
            return r.returncode, (r.stderr or "")[-300:]
        except subprocess.TimeoutExpired:
            return -1, "timeout"
        except OSError as e:  # the binary being relinked (ETXTBSY, EACCES)
            return -2, repr(e)

    def store_fault(self, kind: str, fid: int, dur: float, leader):
        """Injects and heals one fault of the store; returns its target."""
        target = None
        if kind in ("store-blackhole-one", "store-reject-one"):
            target = self.rng.choice(self.names)
            self.history.add("fault_start", id=fid, fault=kind, target=target, duration=dur)
            self.cut(fid, [target], "reject" if kind == "store-reject-one" else "blackhole")
            self.mid_fault(fid, target)
            time.sleep(dur)
            self.uncut(fid, [target])
        elif kind == "store-blackhole-all":
            self.history.add("fault_start", id=fid, fault=kind, target="all", duration=dur)
            self.cut(fid, self.names)
            self.mid_fault(fid)
            time.sleep(dur)
            self.uncut(fid, self.names)
        elif kind == "store-blackhole-leader":
            target = leader or self.rng.choice(self.names)
            self.history.add("fault_start", id=fid, fault=kind, target=target, duration=dur,
                             was_leader=leader == target)
            self.cut(fid, [target])
            self.mid_fault(fid, target)
            time.sleep(dur)
            self.uncut(fid, [target])
        elif kind == "etcd-member-kill":
            m = self.rng.choice(self.etcd.members)
            self.history.add("fault_start", id=fid, fault=kind, target=m.name, duration=dur)
            m.kill()
            self.mid_fault(fid)
            time.sleep(dur)
            m.restart()
            self.wait_store_back(fid)
        elif kind == "etcd-quorum-loss":
            ms = self.rng.sample(self.etcd.members, 2)
            self.history.add("fault_start", id=fid, fault=kind,
                             target=",".join(m.name for m in ms), duration=dur)
            for m in ms:
                m.kill()
            self.mid_fault(fid)
            time.sleep(dur)
            for m in ms:
                m.restart()
            self.wait_store_back(fid)
        else:
            raise ValueError(kind)
        return target

    def wait_store_back(self, fid: int) -> None:
        """After etcd members restart, the store is back once a write
        succeeds; fault_end (what the checker measures from) comes after."""
        try:
            self.etcd.wait_writable(timeout=60)
        except AssertionError as e:
            self.history.add("store_not_back", id=fid, error=str(e)[:500])

    def heal_store(self) -> None:
        """At the end: every fault undone, the store writable."""
        for n in self.names:
            self.set_store([n], "pass")
        for m in self.etcd.members:
            if not m.running():
                m.restart()
        self.etcd.wait_writable()

    def record_store_history(self) -> None:
        self.record_etcd_history()

    def close_store(self) -> None:
        """After the replicas stopped: nothing for etcd (the ProcessSet
        stops its members)."""

    # -- the writer --

    def objects(self, gen: int) -> list:
        backend = backend_of(gen)
        return [upstream("alpha", self.alpha.port, ns=NS),
                upstream("beta", self.beta.port, ns=NS),
                upstream("gen", GEN_PORT_BASE + gen, ns=NS),
                virtual_service("echo", [route(name="default", upstream=backend)], ns=NS),
                # Accepted and Warning in turn: the leader has a status to
                # write for every generation, through every fault.
                virtual_service("flap", [route(name="default",
                                               upstream="alpha" if gen % 2 else "ghost")],
                                domains=["flap.test"], ns=NS)]

    def write_gen(self) -> bool:
        with self.lock:
            self.gen += 1
            gen = self.gen
        t0 = time.time()
        rc, err = self.apply_gen(gen)
        self.history.add("write", t=time.time(), start=t0, gen=gen, ok=rc == 0, rc=rc,
                         backend=backend_of(gen), err=err)
        if rc == 0:
            with self.lock:
                self.committed = max(self.committed, gen)
        return rc == 0

    def _writer(self) -> None:
        while not self.stopping.is_set():
            self.write_gen()
            self.stopping.wait(1.0)

    # -- the monitor --

    def _monitor(self) -> None:
        while not self.stopping.is_set():
            self.observe_replicas()
            with self.lock:
                real = list(self.real)
            for c in real:
                c.poll()
            self.stopping.wait(0.25)

    def observe_replicas(self) -> None:
        """One round of observations; an `obs` event when a replica's
        state changed since the last round."""
        for name in self.names:
            with self.lock:
                r = self.replicas[name]
                paused = name in self.paused
                expected = name in self.expected_down
            if r.proc is None:
                continue
            if not r.running():
                if not expected:
                    with self.lock:
                        self.expected_down.add(name)
                    self.history.add("replica_exit", replica=name, pid=r.proc.pid,
                                     code=r.proc.proc.returncode, log=r.proc.log_tail(30))
                    threading.Thread(target=self._revive, args=(name,), daemon=True).start()
                obs = {"up": False}
            elif paused:
                obs = {"up": True, "paused": True}
            else:
                obs = self._observe(r)
            if obs != self.last_obs.get(name):
                self.last_obs[name] = obs
                self.history.add("obs", replica=name, **obs)

    def _observe(self, r) -> dict:
        status, body = r.admin.get("/readyz", timeout=1.0)
        obs = {"up": True, "ready": status == 200, "pid": r.proc.pid}
        try:
            ld = json.loads(r.admin.get("/debug/leader", timeout=1.0)[1])
            obs.update(is_leader=ld.get("is_leader"), term=ld.get("term"),
                       leader=ld.get("leader"))
        except (ValueError, TypeError):
            obs["leader_err"] = True
        try:
            st = json.loads(r.admin.get("/debug/store", timeout=1.0)[1])
            obs.update(serving=st.get("serving"), connected=st.get("connected"),
                       restore_error=st.get("restore_error") or "",
                       persisted_version=st.get("persisted_version"))
        except (ValueError, TypeError):
            obs["store_err"] = True
        return obs

    def _revive(self, name: str) -> None:
        """A replica that exited on its own is restarted so the run goes on
        (the checker still fails the run)."""
        time.sleep(1.0)
        self.restart_replica(name)

    # -- replica control --

    def restart_replica(self, name: str) -> None:
        r = self.replicas[name]
        t_exec = time.time()
        r.start()
        self.fronts[name].upstream = ("127.0.0.1", r.xds_port)
        with self.lock:
            self.expected_down.discard(name)
        self.history.add("replica_start", replica=name, pid=r.proc.pid, exec=t_exec,
                         xds=r.xds_port, front=self.fronts[name].port)

    def kill_mid_write(self, name: str) -> dict:
        """SIGKILLs `name` while it writes its snapshot file: arms the
        writer's pause hook, waits (up to 5 s: a generation is written about
        every second) until a write stops halfway, then kills. Says whether
        the kill landed mid-write and what the file on disk was then."""
        path = self.replicas[name].snapshot_file
        armed, paused = (Path(f"{path}.pause"), Path(f"{path}.paused"))
        armed.touch()
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline and not paused.exists():
            time.sleep(0.01)
        self.kill_replica(name)
        # The writer removes .paused before it goes on: still there, the
        # kill came while the write was stopped halfway.
        caught = paused.exists()
        armed.unlink(missing_ok=True)
        paused.unlink(missing_ok=True)
        return {"during_snapshot_write": caught, "file_after_kill": snapshot_file_state(path)}

    def kill_replica(self, name: str) -> None:
        with self.lock:
            self.expected_down.add(name)
        r = self.replicas[name]
        pid = r.proc.pid
        r.kill()
        self.history.add("replica_killed", replica=name, pid=pid)

    def leader_views(self) -> dict:
        """/debug/leader of every live, unpaused replica that answers."""
        views = {}
        for name in self.names:
            if name in self.paused or name in self.expected_down:
                continue
            r = self.replicas[name]
            try:
                if r.running():
                    views[name] = json.loads(r.admin.get("/debug/leader", timeout=1.0)[1])
            except (ValueError, TypeError):
                pass
        return views

    def leader_name(self):
        """A replica that says it leads, if any (others may not know yet)."""
        return next((n for n, v in self.leader_views().items() if v.get("is_leader")), None)

    def agreed_leader(self):
        """The leader, when exactly one replica says it leads and every
        live one names it: what the checker's leader_after_store waits for."""
        views = self.leader_views()
        leaders = [n for n, v in views.items() if v.get("is_leader") is True]
        if len(leaders) != 1 or not all(v.get("leader") == leaders[0] for v in views.values()):
            return None
        return leaders[0]

    def set_store(self, names, mode: str, **kw) -> None:
        for n in names:
            for p in self.store_proxies[n]:
                p.set_mode(mode, **kw)

    # Proxy modes that withhold the store from a replica entirely.
    CUT_MODES = ("blackhole", "reject")

    def cut(self, fid: int, names, mode: str = "blackhole", **kw) -> None:
        """Cuts `names` off the store (every proxy of theirs in `mode`);
        `store_cut` says from when (after the proxies applied it) for the
        checker's store_cut_effective."""
        self.set_store(names, mode, **kw)
        if mode in self.CUT_MODES:
            self.history.add("store_cut", id=fid, replicas=list(names), mode=mode)

    def uncut(self, fid: int, names) -> None:
        """Ends a cut; `store_uncut` comes before the proxies pass again."""
        if any(p.mode in self.CUT_MODES for n in names for p in self.store_proxies[n]):
            self.history.add("store_uncut", id=fid, replicas=list(names))
        self.set_store(names, "pass")

    def cut_off(self, fid: int, target: str) -> None:
        """replica-kill-cut-off: the target loses the store."""
        self.cut(fid, [target])

    def reconnect(self, fid: int, target: str) -> None:
        self.uncut(fid, [target])

    # -- the nemesis --

    def duration(self) -> float:
        p = self.profile
        if self.rng.random() < p["long_share"]:
            return round(self.rng.uniform(p["max_dur"], 120.0), 1)
        return round(self.rng.uniform(p["min_dur"], p["max_dur"]), 1)

    def run_faults(self) -> None:
        p = self.profile
        kinds = list(self.FAULT_KINDS)
        for i in range(p["faults"]):
            # Every kind once before repeating, in random order.
            if i % len(kinds) == 0:
                self.rng.shuffle(kinds)
            kind = kinds[i % len(kinds)]
            self.one_fault(kind, self.duration())
            self.settle()
            time.sleep(p["gap"])

    def mid_fault(self, fid: int, target=None) -> None:
        """New proxies connect during every fault: round-robin, plus some on
        the affected replica; sometimes a real gRPC client too."""
        n = self.profile["mid_fault_proxies"]
        proto = "delta" if fid % 2 and self.profile.get("delta_share") else "sotw"
        self.fleet.add(n, proto=proto)
        if target is not None:
            self.fleet.add(1, self.names.index(target), proto)
        if fid % 3 == 0:
            with self.lock:
                extra = self.real[2:]
            if len(extra) >= 3:  # keep at most 5 real clients
                old = extra[0]
                old.client.proc.stop()
                with self.lock:
                    self.real.remove(old)
                self.history.add("real_stopped", node=old.client.node_id)
            self.add_real_client(fid)

    def one_fault(self, kind: str, dur: float) -> None:
        self.fault_seq += 1
        fid = self.fault_seq
        target = None
        detail = {}
        leader = self.leader_name()
        t0 = time.time()
        if kind in ("replica-kill", "replica-kill-cut-off"):
            target = self.rng.choice(self.names)
            r = self.replicas[target]
            cut = kind == "replica-kill-cut-off"
            self.history.add("fault_start", id=fid, fault=kind, target=target, duration=dur)
            if cut:
                self.cut_off(fid, target)
                self.kill_replica(target)
            else:
                detail = self.kill_mid_write(target)
            self.history.add("fault_note", id=fid, **detail)
            self.mid_fault(fid, target)
            time.sleep(dur)
            self.restart_replica(target)
            if cut:
                # Restarted while cut off: after --store-grace it must serve
                # its persisted snapshot (the checker bounds how soon); new
                # proxies connect to it then.
                time.sleep(STORE_GRACE + 1.0)
                self.fleet.add(1, self.names.index(target))
                self.fleet.add(1, self.names.index(target), "delta")
                time.sleep(2.0)
                self.history.add("store_back", id=fid, target=target)
                self.reconnect(fid, target)
        elif kind == "leader-pause":
            target = leader or self.rng.choice(self.names)
            dur = max(dur, LEASE_DURATION + 2.0)
            r = self.replicas[target]
            self.history.add("fault_start", id=fid, fault=kind, target=target, duration=dur,
                             was_leader=leader == target)
            with self.lock:
                self.paused.add(target)
            r.pause()
            self.mid_fault(fid, target)
            time.sleep(dur)
            r.resume()
            with self.lock:
                self.paused.discard(target)
        else:
            target = self.store_fault(kind, fid, dur, leader)
        with self.lock:
            committed = self.committed
        self.history.add("fault_end", id=fid, fault=kind, target=target,
                         elapsed=round(time.time() - t0, 2), committed=committed)

    def real_serving(self, backend: str) -> bool:
        with self.lock:
            real = list(self.real)
        return all(c.client.lines()[-5:] == [f"ok {backend}"] * 5 for c in real
                   if c.client.proc.running())

    def settle(self, timeout: float = CONVERGE_TIMEOUT) -> bool:
        """Waits (bounded) until every live proxy holds what was committed
        when the fault healed and every real client reaches the backend of
        what is committed now, so faults do not pile up on a lagging fleet
        (and the checker sees each heal's convergence before the next fault)."""
        with self.lock:
            goal = self.committed
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                backend = backend_of(self.committed)
            if not self.fleet.lagging(goal) and self.real_serving(backend) \
                    and (not self.LEADERSHIP or self.agreed_leader() is not None):
                return True
            time.sleep(0.2)
        self.history.add("settle_timeout", goal=goal, lagging=self.fleet.lagging(goal)[:20],
                         leader=self.leader_name())
        return False

    # -- the end --

    def finish(self) -> None:
        self.stopping.set()
        self.writer.join(timeout=60)
        self.heal_store()
        final_ok = False
        for _ in range(5):
            if self.write_gen():
                final_ok = True
                break
            time.sleep(2)
        with self.lock:
            final = self.committed
        self.history.add("final_write", gen=final, ok=final_ok,
                         backend=backend_of(final))
        # Let the fleet and the real clients converge, observed by the
        # checker from the history (the monitor is restarted for that).
        self.stopping.clear()
        self.monitor = threading.Thread(target=self._monitor, daemon=True)
        self.monitor.start()
        backend = backend_of(final)
        deadline = time.monotonic() + 2 * CONVERGE_TIMEOUT
        while time.monotonic() < deadline and (self.fleet.lagging(final)
                                               or not self.real_serving(backend)):
            time.sleep(0.2)
        time.sleep(2.0)  # a few more RPCs from the real clients
        self.stopping.set()
        self.monitor.join(timeout=10)
        for name in self.names:
            r = self.replicas[name]
            if r.running():
                m = r.admin.metrics()
                self.history.add("final_metrics", replica=name,
                                 damaged=metric_sum(m, "holdfast_snapshot_file_damaged_total"),
                                 fenced=metric_sum(m, "holdfast_status_writes_fenced_total"),
                                 transitions=metric_sum(m, "holdfast_leader_transitions_total"))
        self.record_store_history()
        self.history.add("run_end")

    def record_etcd_history(self) -> None:
        """Every event under the prefix since revision 1 (etcd never
        compacts here): election keys and status writes, for fencing.
        First, the highest mod_revision among the status keys now
        (`status_revision`): the watch below must reach it, or its tail
        was cut off (fencing fails). Read before the watch, so a status
        written meanwhile (the replicas still run) cannot raise it."""
        current = self.etcd.revision()
        prefix = self.store.prefix
        status_revision = status_error = None
        try:
            status_revision = max((kv.mod_revision
                                   for kv in self.etcd.get_prefix(f"{prefix}/status/")),
                                  default=0)
        except (AssertionError, subprocess.TimeoutExpired) as e:  # EtcdError too
            status_error = repr(e)[:500]
        count = seen_rev = 0
        for kv in etcd_history(self.etcd.live_endpoints(), f"{prefix}/", quiet=2.0, limit=30.0):
            seen_rev = max(seen_rev, kv["mod_revision"])
            key = kv["key"]
            if key[len(prefix) + 1:].split("/", 1)[0] not in ("election", "status"):
                continue
            self.history.add("etcd_event", key=key[len(prefix):],
                             type="DELETE" if kv["value"] is None else "PUT",
                             create_revision=kv["create_revision"],
                             mod_revision=kv["mod_revision"], value=(kv["value"] or "")[:2000])
            count += 1
        self.history.add("etcd_history", events=count, last_revision=seen_rev,
                         current_revision=current, status_revision=status_revision,
                         **({"status_error": status_error} if status_error else {}))

    def close(self) -> None:
        self.stopping.set()
        try:
            self.fleet.close()
        except Exception:  # noqa: BLE001
            pass
        with self.lock:
            self.paused.clear()
        for n, r in getattr(self, "replicas", {}).items():
            if r.proc is not None and r.running():
                r.resume()
                code = r.proc.stop()
                self.history.add("replica_stop", replica=n, code=code)
        for ps in getattr(self, "store_proxies", {}).values():
            for p in ps:
                p.close()
        for f in getattr(self, "fronts", {}).values():
            f.close()
        try:
            self.close_store()
        except AssertionError as e:
            self.history.add("teardown_problem", error=str(e)[:3000])
        try:
            self.procs.close_all()
        except AssertionError as e:  # a replica that ended badly: the checker fails
            self.history.add("teardown_problem", error=str(e)[:3000])
        self.history.close()


def metric_sum(metrics: dict, name: str):
    """The sum of `name`'s series; None when there is none (a renamed
    metric must not read as zero)."""
    values = [v for (n, _), v in metrics.items() if n == name]
    return sum(values) if values else None


def snapshot_file_state(path: Path) -> str:
    """"absent", "whole", or "damaged: why" (framing and checksum)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return "absent"
    try:
        check_snapshot_file(data)
    except DamagedFile as e:
        return f"damaged: {e}"
    return "whole"


def in_private_netns() -> bool:
    """True when only loopback exists here (a namespace made for us)."""
    # /proc/net/dev is per network namespace (/sys/class/net is not, unless
    # sysfs is mounted again).
    try:
        lines = Path("/proc/net/dev").read_text().splitlines()[2:]
    except OSError:
        return False
    links = [l.split(":", 1)[0].strip() for l in lines]
    return links == ["lo"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", choices=sorted(PROFILES), default="short")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--faults", type=int, default=None, help="override the profile's count")
    ap.add_argument("--store", choices=("etcd", "kube"), default="etcd",
                    help="where the configuration lives: etcd (default) or a real "
                         "Kubernetes API server (kube_chaos.py)")
    ap.add_argument("--no-netns", action="store_true",
                    help="run in the current network namespace (not recommended)")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    tag = "" if args.store == "etcd" else f"{args.store}-"
    out = args.out or Path(os.environ.get("TMPDIR", "/tmp")) / f"holdfast-chaos-{tag}{seed}"

    if not args.no_netns and not in_private_netns():
        unshare = shutil.which("unshare")
        if not unshare:
            raise SystemExit("unshare not found: cannot make a private network namespace")
        # Build the fleet client here: inside the namespace there is no
        # network to fetch Go modules with (the inner run finds it cached).
        build_fleet()
        inner = [sys.executable, str(Path(__file__).resolve()), "--profile", args.profile,
                 "--seed", str(seed), "--out", str(out), "--store", args.store, "--no-netns"]
        if args.faults is not None:
            inner += ["--faults", str(args.faults)]
        script = "ip link set lo up && exec " + " ".join(f"'{a}'" for a in inner)
        return subprocess.call([unshare, "--net", "--map-root-user", "sh", "-c", script])

    out.mkdir(parents=True, exist_ok=True)
    (out / "history.jsonl").unlink(missing_ok=True)
    deployment = Deployment
    profiles = PROFILES
    if args.store == "kube":
        import kube_chaos
        deployment, profiles = kube_chaos.KubeDeployment, kube_chaos.PROFILES
    profile = dict(profiles[args.profile])
    if args.faults is not None:
        profile["faults"] = args.faults
    profile["name"] = args.profile
    profile["seed"] = seed
    profile["netns_private"] = in_private_netns()
    print(f"chaos: store {args.store}, profile {args.profile}, seed {seed}, out {out}",
          flush=True)
    d = deployment(out, profile, random.Random(seed))
    code = 0
    try:
        d.start()
        d.run_faults()
        d.finish()
    except BaseException as e:  # noqa: BLE001
        d.history.add("runner_error", error=repr(e)[:2000])
        print(f"chaos: runner error: {e!r}", file=sys.stderr, flush=True)
        code = 2
    finally:
        d.close()
    print(f"chaos: history in {out / 'history.jsonl'}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())

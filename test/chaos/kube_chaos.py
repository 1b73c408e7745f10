"""Kubernetes mode of the chaos run: the incident (../shared/seed/, issue 16)
replayed against a real API server.

    python3 test/chaos/chaos.py --store kube --profile short|long [--seed N] [--out DIR]

The deployment, fleet, real clients, writer loop, monitor, history and
checker are chaos.py's and checker.py's; this module replaces the store:

- etcd 3.6 and a real kube-apiserver (test/kube/hf_kube.py's KubeCluster,
  binaries from `scripts/kube.sh --print-env`), with deploy/crds,
  deploy/namespace.yaml and deploy/rbac.yaml applied;
- three replicas of `holdfast serve --kubeconfig`, each as the
  least-privileged `holdfast` user (deploy/rbac.yaml's ServiceAccount)
  through its own FaultProxy in front of the API server, with its own
  --state-dir and --store-grace;
- the writer applies each generation as holdfast.dev custom resources
  through the API server, as the admin user (server-side apply; the `gen`
  Upstream, which tells the fleet the generation, goes last, so a proxy
  that holds generation N holds N's routes too).

Faults, one at a time:
  apiserver-blackhole-one  one replica's proxy to the API server holds its
                        connections open and silent (the incident: the API
                        was unreachable, not crashed)
  apiserver-blackhole-all  the same for every replica
  apiserver-slow        every replica's proxy holds each chunk 0.2-2 s
  apiserver-kill        kube-apiserver SIGKILLed, started again on the same
                        port and data
  apiserver-etcd-kill   the API server's etcd SIGKILLed and started again
  replica-kill          a replica SIGKILLed while it writes its snapshot
                        file, restarted
  replica-kill-cut-off  a replica cut off from the API server (blackhole),
                        SIGKILLed and restarted while still cut off: it
                        must serve the last-known-good snapshot from disk
  apiserver-blackhole-leader  the leader's proxy to the API server
                        blackholed: it steps down by its renew deadline,
                        another takes the Lease
  leader-pause          the leader SIGSTOPped past its Lease, then resumed:
                        the replica a late write would come from

The API server writer reaches the API server directly, so generations keep
being committed while replicas are cut off; the checker's
store_cut_effective shows that a cut-off replica's proxies got none of them
until the cut ended (the fault took effect).

Leadership: the replicas elect on the Lease holdfast-system/holdfast-leader
(lease 4 s, renew deadline 3 s, retry period 1 s, as the etcd runs) and the
leader writes object statuses, fenced by deploy/status-fencing.yaml. The API
server runs with --storage-media-type=application/json and without
compaction, so its etcd keeps every version of the Lease and of the objects
in one order (revisions): the run records them (`kube_event`) and the
checker's fencing check judges every status write against the Lease as it
stood at that revision.
"""

import hashlib
import http.client
import json
import signal
import sys
import time
from pathlib import Path
from typing import Sequence

from chaos import NS, STORE_GRACE, Deployment  # also puts test/integration on the path
from hf_replica import LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "kube"))
from hf_etcd import FaultProxy, etcd_history  # noqa: E402
from hf_kube import KubeBinaries, KubeCluster, KubeError, REPO  # noqa: E402
from hf_replica import Replica  # noqa: E402

CRDS = ["gateways.holdfast.dev", "virtualservices.holdfast.dev", "routetables.holdfast.dev",
        "upstreams.holdfast.dev"]
# How long the writer waits for one object's apply; a generation is five.
WRITE_TIMEOUT = 5.0
# apiserver-slow: each chunk is held this long (uniform), both ways.
SLOW_DELAY = (0.2, 2.0)
# The API server (or its etcd) back and ready after a restart.
APISERVER_BACK_TIMEOUT = 90.0

FAULT_KINDS = ("apiserver-blackhole-one", "apiserver-blackhole-all", "apiserver-slow",
               "apiserver-kill", "apiserver-etcd-kill", "replica-kill", "replica-kill-cut-off",
               "apiserver-blackhole-leader", "leader-pause")
LEASE_NS = "holdfast-system"
LEASE_NAME = "holdfast-leader"
PLURALS = ("gateways", "virtualservices", "routetables", "upstreams")

PROFILES = {
    # 18 faults (every kind twice), durations 1-4 s, except that the first
    # blackhole of every replica lasts `incident` s: past holdfast's
    # detection of a silent watch (30 s watch timeout + 5 s), so the
    # replicas see the API server unreachable, as in the incident. About
    # 2-3 minutes on two busy cores, the API server's start-up included.
    "short": dict(faults=18, min_dur=1.0, max_dur=4.0, long_share=0.0, proxies=30,
                  mid_fault_proxies=3, gap=1.0, delta_share=0.5, incident=40.0),
    # At least 200 faults; durations 1-120 s (a tenth of them long).
    # mid_fault_proxies: 3 round-robin, so new proxies reach every replica
    # during every fault.
    "long": dict(faults=210, min_dur=1.0, max_dur=20.0, long_share=0.1, proxies=60,
                 mid_fault_proxies=3, gap=1.0, delta_share=0.5),
}


class KubeReplica(Replica):
    """`holdfast serve --kubeconfig` (Replica's lifecycle: start again after
    kill with the same --state-dir and kubeconfig, new ports)."""

    def __init__(self, procs, binary: Path, name: str, kubeconfig: Path, work: Path, *,
                 extra: Sequence[str] = ()):
        super().__init__(procs, binary, name, endpoints="", prefix="", work=work, extra=extra)
        self.kubeconfig = kubeconfig

    def argv(self) -> list:
        return [
            self._binary, "serve",
            "--kubeconfig", self.kubeconfig,
            "--replica-id", self.name,
            "--xds-listen", "127.0.0.1:0",
            "--admin-listen", "127.0.0.1:0",
            "--ports-file", self._ports_file,
            "--state-dir", self.state_dir,
            "--lease-duration", f"{LEASE_DURATION:g}s",
            "--renew-deadline", f"{RENEW_DEADLINE:g}s",
            "--retry-period", f"{RETRY_PERIOD:g}s",
            *self._extra,
        ]


class KubeDeployment(Deployment):
    STORE = "kube"
    FAULT_KINDS = FAULT_KINDS
    LEADERSHIP = True

    def check_prerequisites(self) -> None:
        self.kube_binaries = KubeBinaries.from_env()
        missing = self.kube_binaries.missing()
        if missing:
            raise SystemExit("missing Kubernetes test binaries (run scripts/kube.sh): "
                             + ", ".join(missing))

    def start_store(self) -> None:
        # JSON in etcd, never compacted: the history fencing is judged on.
        self.kube = KubeCluster(self.procs, self.out / "kube", self.kube_binaries, name="kube",
                                extra_args=["--storage-media-type=application/json",
                                            "--etcd-compaction-interval=0"])
        self.kube.start()
        admin = self.kube.admin
        admin.apply(sorted((REPO / "deploy/crds").glob("*.yaml")))
        admin.wait_crds_established(CRDS)
        admin.apply([REPO / "deploy/namespace.yaml", REPO / "deploy/rbac.yaml",
                     REPO / "deploy/status-fencing.yaml"])
        self.kube.ensure_namespace(NS)
        self.history.add("kube", apiserver=self.kube.endpoint,
                         version=self.kube_binaries.version,
                         start_seconds=round(self.kube.start_seconds, 2))

    def start_replica(self, name: str):
        proxy = FaultProxy(self.kube.port, name=f"apiserver-{name}")
        self.store_proxies[name] = [proxy]
        kubeconfig = self.kube.kubeconfig("holdfast", server=proxy.endpoint)
        r = KubeReplica(self.procs, self.binaries.holdfast, name, kubeconfig,
                        self.out / "replicas",
                        extra=["--store-grace", f"{STORE_GRACE:g}s"])
        (self.out / "replicas").mkdir(exist_ok=True)
        return r.start()

    def apply_gen(self, gen: int) -> tuple:
        objs = self.objects(gen)
        # The gen Upstream last: once a proxy sees generation N, the rest of
        # N is in the API server (and in what holdfast watched before it).
        ordered = [o for o in objs if o["metadata"]["name"] != "gen"] + \
                  [o for o in objs if o["metadata"]["name"] == "gen"]
        try:
            self.kube.admin.apply(ordered, field_manager="chaos-writer", namespace=NS,
                                  timeout=WRITE_TIMEOUT)
            return 0, ""
        except KubeError as e:
            return e.status, str(e)[-300:]
        except (OSError, http.client.HTTPException) as e:  # down, reset, timed out
            return -2, repr(e)[-300:]

    def store_fault(self, kind: str, fid: int, dur: float, leader):
        target = None
        if kind == "apiserver-blackhole-all" and not getattr(self, "incident_done", False):
            self.incident_done = True
            dur = max(dur, self.profile.get("incident", 0.0))
        if kind in ("apiserver-blackhole-one", "apiserver-blackhole-all",
                    "apiserver-blackhole-leader"):
            if kind.endswith("all"):
                names = list(self.names)
            elif kind.endswith("leader"):
                names = [leader or self.rng.choice(self.names)]
            else:
                names = [self.rng.choice(self.names)]
            target = names[0] if len(names) == 1 else "all"
            self.history.add("fault_start", id=fid, fault=kind, target=target, duration=dur,
                             was_leader=leader == target)
            self.cut(fid, names)
            self.mid_fault(fid, target if len(names) == 1 else None)
            time.sleep(dur)
            self.uncut(fid, names)
        elif kind == "apiserver-slow":
            delay = round(self.rng.uniform(*SLOW_DELAY), 2)
            target = "all"
            self.history.add("fault_start", id=fid, fault=kind, target=target, duration=dur)
            self.history.add("fault_note", id=fid, delay=delay)
            self.set_store(self.names, "slow", delay=delay)
            self.mid_fault(fid)
            time.sleep(dur)
            self.set_store(self.names, "pass")
        elif kind == "apiserver-kill":
            target = "kube-apiserver"
            self.history.add("fault_start", id=fid, fault=kind, target=target, duration=dur)
            self.kube.kill_apiserver(signal.SIGKILL)
            self.mid_fault(fid)
            time.sleep(dur)
            try:
                self.kube.start_apiserver()
                self.kube.wait_writable(timeout=APISERVER_BACK_TIMEOUT)
            except AssertionError as e:
                self.history.add("store_not_back", id=fid, error=str(e)[:500])
        elif kind == "apiserver-etcd-kill":
            m = self.kube.etcd.members[0]
            target = m.name
            self.history.add("fault_start", id=fid, fault=kind, target=target, duration=dur)
            m.kill()
            self.mid_fault(fid)
            time.sleep(dur)
            m.restart()
            self.wait_store_back(fid)
        else:
            raise ValueError(kind)
        return target

    def wait_store_back(self, fid: int) -> None:
        """After the API server's etcd restarts, the store is back once the
        API server takes a Lease write (KubeCluster.wait_writable); fault_end
        (what the checker measures from) comes after."""
        try:
            self.kube.wait_ready(timeout=APISERVER_BACK_TIMEOUT)
            self.kube.wait_writable(timeout=APISERVER_BACK_TIMEOUT)
        except AssertionError as e:
            self.history.add("store_not_back", id=fid, error=str(e)[:500])

    def heal_store(self) -> None:
        self.set_store(self.names, "pass")
        for m in self.kube.etcd.members:
            if not m.running():
                m.restart()
        if not self.kube.apiserver.running():
            self.kube.start_apiserver()
        self.kube.wait_ready(timeout=APISERVER_BACK_TIMEOUT)
        self.kube.wait_writable(timeout=APISERVER_BACK_TIMEOUT)

    def record_store_history(self) -> None:
        """Every version of the Lease and of the holdfast.dev objects in NS
        that the API server's etcd holds (since revision 1: nothing is
        compacted), as `kube_event`s in revision order: the Lease's holder
        and term, and each object's status writer and content digest."""
        prefix = self.kube.etcd_prefix
        # Built-in kinds are stored under their resource alone; custom
        # resources under GROUP/RESOURCE.
        keys = {f"{prefix}/leases/{LEASE_NS}/{LEASE_NAME}": "lease"}
        keys.update({f"{prefix}/holdfast.dev/{p}/{NS}/": "object" for p in PLURALS})
        count = 0
        for kv in etcd_history(self.kube.etcd.endpoints, prefix + "/"):
            what = next((w for k, w in keys.items() if kv["key"].startswith(k)), None)
            if what is None:
                continue
            event = {"rev": kv["mod_revision"], "key": kv["key"][len(prefix):], "what": what,
                     "deleted": kv["value"] is None}
            doc = json.loads(kv["value"]) if kv["value"] else {}
            if what == "lease":
                spec = doc.get("spec") or {}
                event.update(holder=spec.get("holderIdentity", ""),
                             term=spec.get("leaseTransitions", 0) + 1)
            else:
                status = doc.get("status") or {}
                event.update(writer=status.get("writer"),
                             status=hashlib.sha256(json.dumps(
                                 status, sort_keys=True).encode()).hexdigest()[:16])
            self.history.add("kube_event", **event)
            count += 1
        self.history.add("kube_history", events=count)

    def close_store(self) -> None:
        """The API server, then its etcd (the replicas have stopped, so no
        watch holds the API server's graceful shutdown); fails if either
        exited on its own or not cleanly."""
        kube = getattr(self, "kube", None)
        if kube is not None:
            kube.close()


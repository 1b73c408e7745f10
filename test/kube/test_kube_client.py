"""holdfast's Kubernetes client and source against the real API server:

- the client conformance binary (build/test/kube_client_test): list in
  pages, watch, resume from a version, bookmarks, 410 for a version older
  than the watch cache, prompt stop, stall detection through a blackholed
  fault proxy, status updates with a stale resourceVersion -> conflict, the
  least-privileged holdfast user of deploy/rbac.yaml, an untrusted server;
- a status write bounded by `timeout` while the API server's etcd is down:
  abandoned, never applied when etcd returns (an unbounded one is);
- the config source conformance suite (build/test/config_source_conformance_test)
  on its Kubernetes fixture: the same cases the directory and etcd pass.
"""

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from hf_gateway import upstream
from hf_kube import REPO
from hf_wait import wait_for

BUILD = Path(os.environ.get("HOLDFAST_BUILD_DIR", REPO / "build"))
CRDS = ["gateways.holdfast.dev", "virtualservices.holdfast.dev", "routetables.holdfast.dev",
        "upstreams.holdfast.dev", "rolloutpolicies.holdfast.dev"]


def binary(name: str) -> Path:
    path = BUILD / "test" / name
    if not path.exists():
        pytest.fail(f"{path} is missing: build it (cmake --build build --target {name})",
                    pytrace=False)
    return path


def install(kube) -> None:
    kube.admin.apply(sorted((REPO / "deploy/crds").glob("*.yaml")))
    kube.admin.wait_crds_established(CRDS)
    kube.admin.apply([REPO / "deploy/namespace.yaml", REPO / "deploy/rbac.yaml"])


def run_gtest(path: Path, env: dict, gtest_filter: str, timeout: float = 300,
              allowed_skips: frozenset = frozenset()):
    r = subprocess.run([str(path), f"--gtest_filter={gtest_filter}", "--gtest_brief=0"],
                       env={**os.environ, **env}, capture_output=True, text=True,
                       timeout=timeout)
    print(r.stdout[-6000:], r.stderr[-3000:])
    assert r.returncode == 0, f"{path.name} failed:\n{r.stdout[-6000:]}\n{r.stderr[-3000:]}"
    skipped = {line.split("] ", 1)[1].split(" (")[0]
               for line in r.stdout.splitlines() if line.startswith("[  SKIPPED ] ") and "(" in line}
    assert skipped == set(allowed_skips), r.stdout[-3000:]
    return r


def test_client_conformance(kube, tmp_path):
    install(kube)
    proxy = kube.proxy()
    signal = tmp_path / "stall-signal"
    env = {"HOLDFAST_TEST_KUBECONFIG": str(kube.kubeconfig("admin")),
           "HOLDFAST_TEST_KUBECONFIG_HOLDFAST": str(kube.kubeconfig("holdfast")),
           "HOLDFAST_TEST_KUBECONFIG_PROXY": str(kube.kubeconfig("admin", server=proxy.endpoint)),
           "HOLDFAST_TEST_STALL_SIGNAL": str(signal)}
    run_gtest(binary("kube_client_test"), env, "-*Stalled*:*BoundedStatusWrite*")

    # The stall: the watch opens through the proxy, then the proxy goes
    # silent both ways (an iptables DROP, as far as the client can tell).
    stall = subprocess.Popen([str(binary("kube_client_test")), "--gtest_filter=*Stalled*"],
                             env={**os.environ, **env}, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while not signal.exists():
        assert stall.poll() is None, stall.stdout.read()
        assert time.monotonic() < deadline, "the watch never opened"
        time.sleep(0.05)
    proxy.set_mode("blackhole")
    out, _ = stall.communicate(timeout=120)
    print(out[-4000:])
    assert stall.returncode == 0, out[-4000:]
    assert "1 test" in out and "SKIPPED" not in out.split("tests ran")[-1], out[-3000:]
    proxy.set_mode("pass")


def test_source_conformance(kube):
    install(kube)
    env = {"HOLDFAST_TEST_KUBECONFIG": str(kube.kubeconfig("admin")),
           "HOLDFAST_TEST_KUBECONFIG_HOLDFAST": str(kube.kubeconfig("holdfast"))}
    # Two cases store text the API server itself refuses (not YAML; a port
    # its schema forbids); ValueTheStoreAdmitsButTheDecoderRejects is their
    # counterpart for this store.
    run_gtest(binary("config_source_conformance_test"), env, "*Kubernetes*",
              allowed_skips=frozenset({
                  "Kube/ConfigSourceConformance.InvalidChangeIsRejectedAndLastGoodKept/Kubernetes",
                  "Kube/ConfigSourceConformance.UnparsableTextIsRejectedWithItsLocation/Kubernetes"}))


def test_a_bounded_status_write_is_never_applied_after_its_deadline(kube, tmp_path):
    """What the status writer relies on to keep an ended term's write out
    (docs/kubernetes.md "Fencing"): the API server admits a write, then
    waits for its etcd; holdfast's client sends the time left in the term as
    the write's `timeout`, and the API server abandons the write when it
    runs out instead of applying it when etcd returns."""
    install(kube)
    kube.ensure_namespace("test")
    kube.admin.apply([upstream("bounded", 8080), upstream("unbounded", 8081)])

    def get(name):
        return kube.admin.get("holdfast.dev/v1", "Upstream", name, "test")

    def put_state(obj, state, timeout=10):
        body = {**obj, "status": {"state": state}}
        return kube.admin.request("PUT", kube.admin.object_path(body, "status"), body,
                                  timeout=timeout)

    bounded, unbounded = get("bounded"), get("unbounded")
    (tmp_path / "object.json").write_text(json.dumps(bounded))
    env = {"HOLDFAST_TEST_KUBECONFIG": str(kube.kubeconfig("admin")),
           "HOLDFAST_TEST_STATUS_OBJECT": str(tmp_path / "object.json")}

    kube.etcd.members[0].kill()
    # The control: the same kind of write without a bound waits for etcd.
    control = {}
    writer = threading.Thread(
        target=lambda: control.update(response=put_state(unbounded, "Warning", timeout=120)))
    writer.start()
    # etcd returns 3.5 s after the bounded write (2 s) was sent: past its
    # bound, but well within the 10 s a client without one would wait and
    # stay connected (a client that hangs up also ends the write).
    bounded_write = subprocess.Popen(
        [str(binary("kube_client_test")), "--gtest_filter=*BoundedStatusWrite*"],
        env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(3.5)
    kube.etcd.members[0].restart()
    out, _ = bounded_write.communicate(timeout=60)
    print(out[-3000:])
    assert bounded_write.returncode == 0, out[-3000:]
    assert "1 test" in out and "SKIPPED" not in out.split("tests ran")[-1], out[-3000:]
    kube.etcd.wait_writable()
    writer.join(120)
    assert not writer.is_alive(), "the unbounded write never ended"
    assert control["response"].status == 200, control["response"].text()
    assert get("unbounded")["status"] == {"state": "Warning"}, \
        "the control: an unbounded write waits for etcd and is applied when it returns"
    # A later write through the API server is applied: what it held for
    # etcd has been decided by then.
    wait_for(lambda: put_state(get("unbounded"), "Accepted"), lambda r: r.status == 200,
             timeout=60, what="a write after etcd returned")
    after = get("bounded")
    # The same write with etcd up is valid (the schema admits it): only the
    # deadline kept it out.
    assert (after.get("status") or {}).get("state") != "Rejected", after
    assert after["metadata"]["resourceVersion"] == bounded["metadata"]["resourceVersion"]
    assert put_state(after, "Rejected").status == 200

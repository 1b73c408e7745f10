"""The harness itself: the real API server starts, reports its version,
authenticates the two users, serves the watches real clients use (bookmarks,
initial events: the reason for etcd 3.6), survives a restart of the API
server alone, and can be cut off behind a fault proxy."""

import base64
import json
import socket
import time
import urllib.request

import pytest
import yaml

from hf_etcd import EtcdCluster
from hf_kube import HOLDFAST_USER, KubeClient, KubeCluster, KubeError


def configmap(name, namespace="default", **data):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace}, "data": data}


def test_starts_and_reports_its_version(kube, kube_binaries, record_property):
    record_property("kube_start_seconds", round(kube.start_seconds, 2))
    print(f"etcd + kube-apiserver ready in {kube.start_seconds:.1f}s")
    v = kube.version()
    assert v["gitVersion"] == kube_binaries.version == "v1.37.2"
    assert (v["major"], v["minor"]) == ("1", "37")
    with urllib.request.urlopen(f"http://{kube.etcd.members[0].endpoint}/version",
                                timeout=10) as r:
        assert json.load(r)["etcdserver"].startswith("3.6.")


def test_users_and_kubeconfigs(kube):
    # admin may do anything; holdfast has no rights until deploy/rbac.yaml.
    assert kube.admin.can_i("delete", "namespaces")
    assert not kube.holdfast.can_i("list", "upstreams", group="holdfast.dev")
    r = kube.holdfast.request("GET", "/api/v1/namespaces")
    assert r.status == 403, r.text()
    review = kube.holdfast.call("POST",
                                "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                {"apiVersion": "authentication.k8s.io/v1",
                                 "kind": "SelfSubjectReview"})
    assert review["status"]["userInfo"]["username"] == HOLDFAST_USER

    # A kubeconfig carries everything a client needs: server, CA, token.
    for user in ("admin", "holdfast"):
        config = yaml.safe_load(kube.kubeconfig(user).read_text())
        context = next(c for c in config["contexts"] if c["name"] == config["current-context"])
        cluster = next(c for c in config["clusters"]
                       if c["name"] == context["context"]["cluster"])["cluster"]
        token = next(u for u in config["users"]
                     if u["name"] == context["context"]["user"])["user"]["token"]
        ca = kube.work / f"ca-from-{user}.crt"
        ca.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
        c = KubeClient(cluster["server"], ca, token)
        assert c.call("GET", "/version")["gitVersion"] == "v1.37.2"


def test_crud_and_server_side_apply(kube):
    a = kube.admin
    a.apply(configmap("one", k="v1"))
    assert a.get("v1", "ConfigMap", "one")["data"] == {"k": "v1"}
    a.apply(configmap("one", k="v2"), field_manager="other")
    obj = a.get("v1", "ConfigMap", "one")
    assert obj["data"] == {"k": "v2"}
    assert {m["manager"] for m in obj["metadata"]["managedFields"]} >= {"other"}
    dry = a.apply(configmap("one", k="v3"), dry_run=True)[0]
    assert dry["data"] == {"k": "v3"}
    assert a.get("v1", "ConfigMap", "one")["data"] == {"k": "v2"}
    # Unknown fields are refused under strict field validation. (For a
    # built-in kind, server-side apply reports it as HTTP 500, "field not
    # declared in schema": the API server's own quirk.)
    bad = configmap("two")
    bad["colour"] = "red"
    r = a.try_apply(bad)
    assert r.status in (422, 500) and "colour" in r.text(), r.text()
    assert [i["metadata"]["name"] for i in a.list("v1", "ConfigMap", "default")["items"]
            if i["metadata"]["name"] in ("one", "two")] == ["one"]
    a.delete("v1", "ConfigMap", "one")
    assert a.get("v1", "ConfigMap", "one") is None
    # Optimistic concurrency: a stale resourceVersion is a conflict.
    created = a.create(configmap("three", k="1"))
    stale = dict(created)
    a.update({**created, "data": {"k": "2"}})
    with pytest.raises(KubeError) as e:
        a.update({**stale, "data": {"k": "3"}})
    assert e.value.status == 409


def test_watch_with_bookmarks_and_initial_events(kube):
    """What client-go's reflector asks for. The reason for etcd 3.6: on
    Debian's etcd 3.4 this API server ends such a watch at once with an
    ERROR event (storage feature RequestWatchProgress missing)."""
    a = kube.admin
    a.apply(configmap("before", k="1"))
    events = a.watch("v1", "ConfigMap", "default", sendInitialEvents="true",
                     resourceVersionMatch="NotOlderThan", resource_version="",
                     timeout_seconds=10)
    seen = []
    for ev in events:
        seen.append((ev["type"], ev["object"]["metadata"].get("name")))
        annotations = ev["object"]["metadata"].get("annotations") or {}
        if ev["type"] == "BOOKMARK" and annotations.get("k8s.io/initial-events-end") == "true":
            break
    events.close()
    assert ("ADDED", "before") in seen
    assert seen[-1][0] == "BOOKMARK"

    # The plain path: list, then watch from the list's resourceVersion.
    listed = a.list("v1", "ConfigMap", "default")
    rv = listed["metadata"]["resourceVersion"]
    a.apply(configmap("after", k="2"))
    for ev in a.watch("v1", "ConfigMap", "default", resource_version=rv, timeout_seconds=10):
        if ev["type"] == "ADDED":
            assert ev["object"]["metadata"]["name"] == "after"
            break
    else:
        pytest.fail("no ADDED event for the ConfigMap created after the list")


def test_apiserver_restarts_alone_keeping_data(kube):
    kube.admin.apply(configmap("kept", k="v"))
    port, kubeconfig = kube.port, kube.kubeconfig("admin").read_text()
    kube.stop_apiserver()
    assert not kube.ready()
    with pytest.raises(OSError):
        kube.admin.request("GET", "/version", timeout=2)
    assert kube.etcd.members[0].running()
    t0 = time.monotonic()
    kube.start_apiserver()
    print(f"kube-apiserver restarted in {time.monotonic() - t0:.1f}s")
    assert kube.port == port and kube.kubeconfig("admin").read_text() == kubeconfig
    assert kube.admin.get("v1", "ConfigMap", "kept")["data"] == {"k": "v"}
    # A crash (SIGKILL) is expected by the test, so teardown does not fail.
    kube.kill_apiserver()
    kube.start_apiserver()
    assert kube.admin.get("v1", "ConfigMap", "kept") is not None


def test_writable_again_after_its_etcd_restarts(kube):
    """wait_writable (what chaos runs call the store back) waits for a Lease
    write to go through, and one really went through when it returns."""
    m = kube.etcd.members[0]
    m.kill()
    with pytest.raises(AssertionError, match="a Lease write to kube-apiserver"):
        kube.wait_writable(timeout=3)
    m.restart()
    t0 = time.monotonic()
    kube.wait_writable(timeout=90)
    print(f"writable {time.monotonic() - t0:.1f}s after its etcd restarted")

    def probe():
        return kube.admin.get("coordination.k8s.io/v1", "Lease", "hf-write-probe")["spec"]

    written = float(probe()["holderIdentity"].removeprefix("probe-"))
    assert written >= time.time() - (time.monotonic() - t0) - 1
    kube.wait_writable(timeout=5)  # again: an existing probe is patched
    assert probe()["holderIdentity"] != f"probe-{written:.6f}"


def test_blackhole_behind_a_proxy(kube):
    proxy = kube.proxy()
    through = kube.admin.with_server(f"https://{proxy.endpoint}")
    assert through.call("GET", "/version")["gitVersion"] == "v1.37.2"
    config = yaml.safe_load(kube.kubeconfig("holdfast", server=proxy.endpoint).read_text())
    assert config["clusters"][0]["cluster"]["server"] == f"https://{proxy.endpoint}"
    proxy.set_mode("blackhole")
    with pytest.raises((socket.timeout, TimeoutError, OSError)):
        through.request("GET", "/version", timeout=1.5)
    assert kube.ready(), "only the path through the proxy is cut"
    proxy.set_mode("reject")
    with pytest.raises(ConnectionRefusedError):
        through.request("GET", "/version", timeout=1.5)
    proxy.set_mode("pass")
    assert through.call("GET", "/version")["gitVersion"] == "v1.37.2"


def test_two_apiservers_on_a_given_etcd(procs, kube_binaries, tmp_path):
    """An etcd the test runs, shared by two API servers with their own
    prefixes: each sees only its own objects."""
    etcd = EtcdCluster(procs, tmp_path / "etcd", binary=str(kube_binaries.etcd)).start()
    clusters = [KubeCluster(procs, tmp_path / n, kube_binaries, etcd=etcd,
                            etcd_prefix=f"/{n}", name=n) for n in ("red", "blue")]
    try:
        for c in clusters:
            c.start()
        clusters[0].admin.apply(configmap("only-red"))
        assert clusters[1].admin.get("v1", "ConfigMap", "only-red") is None
        assert clusters[0].admin.get("v1", "ConfigMap", "only-red") is not None
    finally:
        for c in clusters:
            c.close()
        etcd.close()


def test_service_account_tokens(kube):
    """The TokenRequest API works (signing key made at run time): what a
    kubelet mounts in a pod, for in-cluster configuration tests."""
    kube.ensure_namespace("holdfast-system")
    kube.admin.apply({"apiVersion": "v1", "kind": "ServiceAccount",
                      "metadata": {"name": "holdfast", "namespace": "holdfast-system"}})
    token = kube.service_account_token("holdfast-system", "holdfast", 600)
    c = KubeClient(kube.url, kube.ca_file, token)
    review = c.call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                    {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert review["status"]["userInfo"]["username"] == HOLDFAST_USER


def test_another_loopback_address(procs, kube_binaries, tmp_path):
    """host=: the API server on its own 127.x address (as fault tests in a
    network namespace give each process one), its certificate for it."""
    c = KubeCluster(procs, tmp_path / "k", kube_binaries, host="127.0.0.7")
    try:
        c.start()
        assert c.url.startswith("https://127.0.0.7:")
        assert c.admin.call("GET", "/version")["gitVersion"] == "v1.37.2"
        server = yaml.safe_load(c.kubeconfig("admin").read_text())["clusters"][0]["cluster"]
        assert server["server"] == c.url
    finally:
        c.close()

"""Fixtures for the real-client integration suite.

Every test gets its own temporary directory, a holdfast server on port 0
(or an explicit port for restart tests) serving raw Envoy resources (`world`)
or gateway objects (`gateway_world`), two echo backends (alpha, beta) and
clients started on demand. All children are stopped at teardown; on failure
the tail of each child's log is attached to the report. The etcd fixtures
give a member (plain or TLS) or a cluster, and `store` a fresh prefix on the
plain member with replicas and the CLI (hf_replica).

Environment: HOLDFAST_BUILD_DIR (default <repo>/build) holds holdfast,
echo_backend and xds_cpp_client; HOLDFAST_BIN overrides the server binary
(e.g. a sanitizer build); HOLDFAST_CACHE is where the Go client is built.
"""

import subprocess

import pytest

from hf_etcd import EtcdCluster, which_etcd
from hf_gateway import ConfigDir
from hf_goclient import build_go_client
from hf_process import ProcessSet
from hf_fixtures import procs  # noqa: F401 (a fixture)
from hf_replica import Store
from hf_resources import XdsDir
from hf_tls import TestCa
from hf_world import Backend, Binaries, Holdfast, XdsClient


@pytest.fixture(scope="session")
def binaries() -> Binaries:
    b = Binaries.from_env()
    missing = [str(p) for p in (b.holdfast, b.echo_backend, b.xds_cpp_client)
               if not p.exists()]
    if missing:
        pytest.fail("missing binaries (set HOLDFAST_BUILD_DIR or build them): "
                    + ", ".join(missing), pytrace=False)
    return b


class World:
    """One test's holdfast + backends + source directory; clients made on
    demand. `source` "xds" serves raw Envoy resources from `self.xds`
    (pre-filled: every RPC to alpha); "config" serves gateway objects from
    `self.config` (empty: the test writes it before start_holdfast)."""

    def __init__(self, procs: ProcessSet, binaries: Binaries, tmp_path, request,
                 source: str = "xds"):
        self.procs = procs
        self._request = request
        self.binaries = binaries
        self.tmp = tmp_path
        self.alpha = Backend(procs, binaries.echo_backend, "alpha", tmp_path)
        self.beta = Backend(procs, binaries.echo_backend, "beta", tmp_path)
        self.xds = None
        self.config = None
        if source == "xds":
            self.xds = XdsDir(tmp_path / "xds", tmp_path / "staging")
            self.xds.write_all(endpoint_port=self.alpha.port)
            self.holdfast = Holdfast(procs, binaries.holdfast, self.xds.path, tmp_path)
        elif source == "config":
            self.config = ConfigDir(tmp_path / "config", tmp_path / "staging")
            self.holdfast = Holdfast(procs, binaries.holdfast, self.config.path, tmp_path,
                                     source_flag="--config-dir")
        else:
            raise ValueError(f"unknown source {source}")

    def start_holdfast(self, xds_port: int = 0) -> Holdfast:
        self.holdfast.start(xds_port)
        self.holdfast.wait_ready()
        return self.holdfast

    def client(self, kind: str, **options) -> XdsClient:
        """options: see XdsClient (interval_ms, headers, count, deadline_ms,
        target_host)."""
        # The Go client is built on first use only, so a run that deselects
        # it does not pay for the build.
        go = self._request.getfixturevalue("go_client_binary") if kind == "go" else None
        return XdsClient(self.procs, self.binaries, kind, self.holdfast.xds_port, self.tmp,
                         go_client=go, **options)


@pytest.fixture(scope="session")
def go_client_binary():
    try:
        return build_go_client()
    except AssertionError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(params=XdsClient.KINDS)
def client_kind(request, binaries) -> str:
    if request.param == "node" and not binaries.node:
        pytest.fail("node is not on PATH (needed for the grpc-js-xds client)", pytrace=False)
    return request.param


@pytest.fixture
def world(request, procs, binaries, tmp_path) -> World:
    return World(procs, binaries, tmp_path, request)


@pytest.fixture
def gateway_world(request, procs, binaries, tmp_path) -> World:
    """A World whose holdfast serves gateway objects (--config-dir)."""
    return World(procs, binaries, tmp_path, request, source="config")


def _etcd(procs, tmp_path, size: int, **options):
    problem = which_etcd()
    if problem:
        pytest.fail(problem, pytrace=False)
    cluster = EtcdCluster(procs, tmp_path / "etcd", size=size, **options)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def etcd(procs, tmp_path):
    """One etcd member on loopback, healthy; its log is attached on failure
    like every child's."""
    yield from _etcd(procs, tmp_path, 1)


@pytest.fixture
def etcd_cluster(procs, tmp_path):
    """Three etcd members on loopback, all healthy."""
    yield from _etcd(procs, tmp_path, 3)


@pytest.fixture
def etcd_tls(procs, tmp_path):
    """One etcd member serving clients over TLS, its certificate signed by a
    test CA (clients trust `etcd_tls.tls.ca_file`)."""
    certificate = TestCa(tmp_path / "etcd-ca", "holdfast-test-etcd-ca").issue("etcd")
    yield from _etcd(procs, tmp_path, 1, tls=certificate)


@pytest.fixture(scope="session")
def etcd_support(binaries):
    """Fails at once, with one clear message, when the holdfast binary has
    no etcd backend yet."""
    checks = [("serve", "--etcd-endpoints"), ("apply", "--etcd-endpoints"),
              ("get", "--etcd-endpoints"), ("delete", "--etcd-endpoints")]
    for command, flag in checks:
        r = subprocess.run([str(binaries.holdfast), command, "--help"], capture_output=True,
                           text=True, timeout=30)
        if flag not in r.stdout + r.stderr:
            pytest.fail(f"{binaries.holdfast} {command} --help does not mention {flag}: "
                        "this holdfast has no etcd backend", pytrace=False)
    return binaries


@pytest.fixture
def store(procs, etcd_support, etcd, tmp_path):
    """A fresh prefix on a single etcd member. Replicas are stopped before
    etcd, so they shut down (and resign) against a live store."""
    s = Store(procs, etcd_support.holdfast, etcd, tmp_path / "store")
    yield s
    s.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    ps = getattr(item, "_holdfast_processes", None)
    if report.failed and ps is not None:
        for proc in ps.processes:
            report.sections.append((f"log {proc.name} (pid {proc.pid})", proc.log_tail()))


@pytest.fixture
def backends(procs, binaries, tmp_path):
    """Two echo backends, alpha and beta."""
    return (Backend(procs, binaries.echo_backend, "alpha", tmp_path),
            Backend(procs, binaries.echo_backend, "beta", tmp_path))

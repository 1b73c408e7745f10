"""Fixtures for the Kubernetes tests: a real kube-apiserver on etcd 3.6
(hf_kube.KubeCluster), built by scripts/kube.sh.

  kube_binaries  session: the binaries' paths (KubeBinaries); fails with a
                 clear message when scripts/kube.sh has not built them.
  kube           a fresh etcd + API server for one test, which may stop,
                 kill or cut it; stopped (exit codes checked) at teardown.
  kube_shared    one etcd + API server for the whole session, for tests that
                 only read and write objects: each test uses names or
                 namespaces of its own and must leave the server running.
  procs          the test's ProcessSet (logs of its children are attached to
                 the report of a failed test, as in test/integration).

Environment: HOLDFAST_KUBE_APISERVER, HOLDFAST_ETCD36,
HOLDFAST_GATEWAY_API_CRDS (default: where scripts/kube.sh puts them);
HOLDFAST_BUILD_DIR (default <repo>/build) for tests that also run holdfast.
"""

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))

from hf_kube import KubeBinaries, KubeCluster  # noqa: E402
from hf_process import ProcessSet  # noqa: E402
from hf_fixtures import procs  # noqa: E402,F401


@pytest.fixture(scope="session")
def kube_binaries() -> KubeBinaries:
    b = KubeBinaries.from_env()
    missing = b.missing()
    if missing:
        pytest.fail("missing Kubernetes test binaries (run scripts/kube.sh, or set "
                    "HOLDFAST_KUBE_APISERVER / HOLDFAST_ETCD36 / HOLDFAST_GATEWAY_API_CRDS): "
                    + ", ".join(missing), pytrace=False)
    return b


@pytest.fixture
def kube(procs, kube_binaries, tmp_path) -> KubeCluster:
    cluster = KubeCluster(procs, tmp_path / "kube", kube_binaries)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(scope="session")
def _kube_shared_procs(tmp_path_factory):
    ps = ProcessSet(tmp_path_factory.mktemp("kube-shared") / "logs")
    yield ps
    ps.close_all()


@pytest.fixture(scope="session")
def kube_shared(_kube_shared_procs, kube_binaries, tmp_path_factory) -> KubeCluster:
    cluster = KubeCluster(_kube_shared_procs, tmp_path_factory.mktemp("kube-shared-work"),
                          kube_binaries, name="kube-shared")
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(autouse=True)
def _attach_shared_logs(request):
    # A test that used the shared cluster gets its logs on failure too.
    if "kube_shared" in request.fixturenames:
        request.node._holdfast_shared = request.getfixturevalue("_kube_shared_procs")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    for attr in ("_holdfast_processes", "_holdfast_shared"):
        ps = getattr(item, attr, None)
        if ps is not None:
            for proc in ps.processes:
                report.sections.append((f"log {proc.name} (pid {proc.pid})",
                                        proc.log_tail()))

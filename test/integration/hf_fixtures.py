"""Fixtures shared by the test suites (test/integration, test/kube): import
them into a conftest.py to use them."""

import pytest

from hf_process import ProcessSet


@pytest.fixture
def procs(request, tmp_path):
    """The test's child processes, logged under tmp_path/logs, stopped (and
    their exits judged) at teardown; their logs are attached to a failed
    test's report."""
    ps = ProcessSet(tmp_path / "logs")
    request.node._holdfast_processes = ps
    yield ps
    ps.close_all()

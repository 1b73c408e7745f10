"""The harness's judgement of how a checked process (the server under test)
ends: ProcessSet.close_all fails teardown for a process that hangs on
SIGTERM, exits non-zero on it, or exits without the test ending it, and
passes one that exits 0 or that the test killed."""

import signal

import pytest

from hf_process import ProcessSet
from hf_wait import wait_for

# Shell children standing in for holdfast; each says "ready" once its
# SIGTERM handling is in place.
WELL_BEHAVED = "trap 'exit 0' TERM; echo ready; while :; do sleep 0.05; done"
HANGS_ON_TERM = "trap '' TERM; echo ready; while :; do sleep 0.05; done"
FAILS_ON_TERM = "trap 'exit 1' TERM; echo ready; while :; do sleep 0.05; done"
CRASHES = "echo ready; sleep 0.1; kill -SEGV $$"


def close_problems(tmp_path, script, *, kill=False, wait_exit=False) -> str:
    """Starts `script` as a checked process, optionally SIGKILLs it or
    waits for it to exit, closes the set; returns the failure ('' if none)."""
    ps = ProcessSet(tmp_path / "logs")
    p = ps.start("server", ["sh", "-c", script], check_exit=True, capture_lines=True)
    wait_for(p.lines, lambda lines: "ready" in lines, timeout=10, what="the process to start")
    if wait_exit:
        wait_for(p.running, lambda r: not r, timeout=10, what="the process to exit")
    if kill:
        p.kill(signal.SIGKILL)
    try:
        ps.close_all()
    except AssertionError as e:
        return str(e)
    return ""


def test_exit_0_on_sigterm_passes(tmp_path):
    assert close_problems(tmp_path, WELL_BEHAVED) == ""


def test_killed_by_the_test_passes(tmp_path):
    assert close_problems(tmp_path, HANGS_ON_TERM, kill=True) == ""


@pytest.mark.parametrize("script, wait_exit, expected", [
    (HANGS_ON_TERM, False, "still running 5s after SIGTERM"),
    (FAILS_ON_TERM, False, "exited with 1 after SIGTERM"),
    (CRASHES, True, f"exited on its own with {-signal.SIGSEGV}"),
])
def test_a_bad_end_fails_teardown(tmp_path, script, wait_exit, expected):
    assert expected in close_problems(tmp_path, script, wait_exit=wait_exit)

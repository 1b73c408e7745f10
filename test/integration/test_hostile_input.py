"""Input an attacker or a broken tool could hand holdfast (issue 11's probes
that need a real process): each is refused with a clear reason, the process
stays up, and everything valid keeps being served."""

import os
import stat
import subprocess

from hf_gateway import object_status, upstream, virtual_service, route, wait_state
from hf_tls import TestCa
from hf_wait import wait_for
from hf_world import CONVERGE_TIMEOUT, START_TIMEOUT


def rss_peak_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_a_number_of_60000_digits_is_a_rejected_resource_not_a_crash(world):
    """It once overflowed the stack in std::regex_match (SIGSEGV, and the
    same again on every restart)."""
    (world.xds.path / "huge.yaml").write_text(
        '"@type": type.googleapis.com/envoy.config.cluster.v3.Cluster\n'
        "name: huge\ntype: STATIC\n"
        "per_connection_buffer_limit_bytes: " + "9" * 60000 + "\n")
    holdfast = world.start_holdfast()
    rejected = holdfast.admin.get_json("/debug/status")["rejected"]
    assert any(r["file"].endswith("huge.yaml") for r in rejected), rejected
    assert holdfast.proc.running()
    client = world.client("cpp")
    client.wait_serving("alpha", timeout=START_TIMEOUT)


def test_an_oversized_config_file_is_refused_without_reading_it(gateway_world):
    """A 20 MB file of short list items once peaked at 1.9 GB of memory."""
    w = gateway_world
    w.config.write("upstreams.yaml", upstream("alpha", w.alpha.port))
    big = "\n".join(["apiVersion: holdfast.dev/v1", "kind: Upstream",
                     "metadata: {name: big, namespace: test}", "spec:", "  hosts:"])
    big += "\n" + "  - {address: 10.0.0.1, port: 1}\n" * 700_000
    assert len(big) > 20_000_000
    w.config.write_text("big.yaml", big)
    holdfast = w.start_holdfast()
    status = wait_for(lambda: object_status(holdfast.admin, "File", str(w.config.path / "big.yaml"),
                                            ns=""),
                      lambda s: s is not None, timeout=CONVERGE_TIMEOUT,
                      what="big.yaml's status")
    assert status["status"] == "Rejected", status
    assert "the limit is 4194304" in status["reasons"][0]["message"], status
    assert object_status(holdfast.admin, "Upstream", "alpha")["status"] == "Accepted"
    assert rss_peak_kib(holdfast.proc.pid) < 200_000, "the file was not read"


def test_an_object_defined_twice_keeps_its_last_good_version(gateway_world):
    w = gateway_world
    w.config.write("a.yaml", upstream("alpha", w.alpha.port))
    w.config.write("b.yaml", virtual_service("echo", [route(upstream="alpha")]))
    holdfast = w.start_holdfast()
    client = w.client("cpp")
    client.wait_serving("alpha", timeout=START_TIMEOUT)
    # A file that sorts first redefines the upstream to point at beta.
    w.config.write("0-copy.yaml", upstream("alpha", w.beta.port))
    status = wait_state(holdfast.admin, "Upstream", "alpha", "Rejected", timeout=CONVERGE_TIMEOUT)
    assert status["serving_last_good"] is True, status
    message = status["reasons"][0]["message"]
    assert "0-copy.yaml" in message and "a.yaml" in message, status
    since = client.mark()
    assert client.wait_lines(10, since=since) == ["ok alpha"] * 10


def test_tls_options_that_would_leave_the_port_plain_or_broken_are_refused(
        procs, binaries, tmp_path):
    ca = TestCa(tmp_path / "ca", "hostile-ca")
    good = ca.issue("server")
    other = ca.issue("other")
    cases = [
        (["--tls-key", good.key_file], "need --tls-cert"),
        (["--tls-client-ca", ca.cert_file], "need --tls-cert"),
        (["--tls-cert", good.cert_file, "--tls-key", other.key_file], "does not match"),
        (["--tls-cert", good.cert_file, "--tls-key", good.cert_file], "not a PEM private key"),
    ]
    (tmp_path / "empty").mkdir()
    for flags, message in cases:
        r = subprocess.run([str(binaries.holdfast), "serve", "--config-dir", str(tmp_path / "empty"),
                            "--xds-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
                            "--state-dir", str(tmp_path / "state"), *map(str, flags)],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode != 0, (flags, r.stderr)
        assert message in r.stderr, (flags, r.stderr)
        assert "cannot listen" not in r.stderr, (flags, r.stderr)


def test_the_snapshot_on_disk_is_readable_by_its_owner_only(gateway_world):
    w = gateway_world
    w.config.write("a.yaml", upstream("alpha", w.alpha.port))
    w.start_holdfast()
    snapshot = w.tmp / "holdfast-state" / "last-good.snapshot"
    wait_for(lambda: snapshot.exists(), lambda e: e, timeout=CONVERGE_TIMEOUT,
             what="the snapshot file")
    mode = stat.S_IMODE(os.stat(snapshot).st_mode)
    assert mode == 0o600, oct(mode)

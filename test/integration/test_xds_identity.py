"""Node identities bound to client certificates (--xds-client-identity), and
the xDS port's certificate and CA rotated under running clients.

Clients are xds_identity_client processes: one ADS stream each over mutual
TLS, a client certificate whose DNS SAN is the node id it may use, printing
every response and how its stream ended."""

import os
import subprocess
import time
from pathlib import Path

import pytest

from hf_tls import TestCa
from hf_wait import wait_for
from hf_world import CONVERGE_TIMEOUT, START_TIMEOUT

PERMISSION_DENIED = 7


def client_binary() -> Path:
    build = Path(os.environ.get("HOLDFAST_BUILD_DIR", Path(__file__).resolve().parents[2] / "build"))
    binary = build / "test/integration/xds_identity_client"
    if not binary.exists():
        pytest.fail(f"missing {binary} (build the xds_identity_client target)", pytrace=False)
    return binary


class Pki:
    """A server CA (clients trust it) and a client CA (holdfast trusts it),
    with the files holdfast is given under `live/`, replaced by rename as an
    operator (or cert-manager) would."""

    def __init__(self, tmp: Path, generation: str):
        self.server_ca = TestCa(tmp / f"server-ca-{generation}", f"server-ca-{generation}")
        self.client_ca = TestCa(tmp / f"client-ca-{generation}", f"client-ca-{generation}")
        self.server = self.server_ca.issue("holdfast")

    def client_cert(self, node_id: str):
        return self.client_ca.issue(node_id, dns=node_id)


def install(pki: Pki, live: Path) -> None:
    live.mkdir(exist_ok=True)
    for source, name in ((pki.server.cert_file, "server.crt"), (pki.server.key_file, "server.key"),
                         (pki.client_ca.cert_file, "client-ca.crt")):
        tmp = live / f".{name}.new"
        tmp.write_bytes(Path(source).read_bytes())
        os.replace(tmp, live / name)


def start_holdfast(world, live: Path, identity: str = "san-dns", group: str = "identity"):
    world.holdfast.start(extra_args=[
        "--tls-cert", live / "server.crt", "--tls-key", live / "server.key",
        "--tls-client-ca", live / "client-ca.crt",
        "--xds-client-identity", identity, "--node-group", group])
    world.holdfast.wait_ready()
    return world.holdfast


def start_client(world, pki: Pki, node_id: str, cert_of: str = "", cluster: str = "",
                 cert=None):
    cert = cert or pki.client_cert(cert_of or node_id)
    return world.procs.start(f"client-{node_id.replace('/', '_')}", [
        client_binary(), "--target", f"127.0.0.1:{world.holdfast.xds_port}",
        "--ca", pki.server_ca.cert_file, "--cert", cert.cert_file, "--key", cert.key_file,
        "--node-id", node_id, "--cluster", cluster], capture_lines=True)


def responses(client) -> list[str]:
    return [line for line in client.lines() if line.startswith("response ")]


def ended(client) -> list[str]:
    return [line for line in client.lines() if line.startswith("status ")]


def test_a_node_whose_certificate_names_it_gets_its_group(world, tmp_path):
    pki = Pki(tmp_path, "one")
    live = tmp_path / "live"
    install(pki, live)
    holdfast = start_holdfast(world, live)
    # It claims another group in node.cluster: the group is its certificate's.
    client = start_client(world, pki, "proxy-a.shop.test", cluster="payments")
    wait_for(lambda: responses(client), lambda r: len(r) >= 1, timeout=START_TIMEOUT,
             what="proxy-a's first response")
    assert "echo-cluster" in responses(client)[0]
    proxy = wait_for(lambda: holdfast.admin.proxy("proxy-a.shop.test"), lambda p: p is not None,
                     timeout=CONVERGE_TIMEOUT, what="proxy-a in /debug/proxies")
    assert proxy["identity"] == "proxy-a.shop.test", proxy
    assert proxy["group"] == "proxy-a.shop.test", proxy


def test_a_node_claiming_another_id_is_refused(world, tmp_path):
    pki = Pki(tmp_path, "one")
    live = tmp_path / "live"
    install(pki, live)
    holdfast = start_holdfast(world, live)
    # proxy-b's certificate, proxy-a's node id.
    impostor = start_client(world, pki, "proxy-a.shop.test", cert_of="proxy-b.shop.test")
    status = wait_for(lambda: ended(impostor), lambda s: len(s) == 1, timeout=START_TIMEOUT,
                      what="the impostor's stream to end")[0]
    assert status.startswith(f"status {PERMISSION_DENIED} "), status
    assert '"proxy-a.shop.test"' in status and 'expected "proxy-b.shop.test"' in status, status
    assert responses(impostor) == []
    assert holdfast.admin.proxies() == []
    page = holdfast.admin.get_json("/debug/proxies")
    refusal = page["identity_refusals"][0]
    assert refusal["claimed_node_id"] == "proxy-a.shop.test", refusal
    assert refusal["reason"] == "mismatch", refusal
    assert holdfast.admin.metric("holdfast_xds_identity_refusals_total", reason="mismatch") >= 1


def test_rotating_certificate_and_ca_keeps_every_stream(world, tmp_path):
    one = Pki(tmp_path, "one")
    live = tmp_path / "live"
    install(one, live)
    holdfast = start_holdfast(world, live)
    fleet = [start_client(world, one, f"proxy-{i}.shop.test") for i in range(10)]
    for client in fleet:
        wait_for(lambda: responses(client), lambda r: len(r) >= 1, timeout=START_TIMEOUT,
                 what=f"{client.name}'s first response")
    assert holdfast.admin.metric("holdfast_connected_proxies") == len(fleet)

    two = Pki(tmp_path, "two")
    rotated_at = time.monotonic()
    install(two, live)
    wait_for(lambda: holdfast.admin.get_json("/debug/tls"), lambda t: t.get("reloads") == 1,
             timeout=CONVERGE_TIMEOUT, what="holdfast to reload the rotated files")
    # New connections verify with the new material, once gRPC has read it.
    def new_client_served():
        client = start_client(world, two, "proxy-new.shop.test")
        try:
            return wait_for(lambda: client.lines(), lambda lines: len(lines) >= 1,
                            timeout=CONVERGE_TIMEOUT, what="the new client's first line")[0]
        finally:
            client.kill()
    wait_for(new_client_served, lambda line: line.startswith("response "),
             timeout=CONVERGE_TIMEOUT, what="a client of the new CAs to be served", interval=0.5)
    served_after = time.monotonic() - rotated_at
    # A client certificate of the old client CA is no longer accepted: the
    # client trusts the new server CA (so its own check passes) and presents
    # a certificate the old client CA signed.
    old = start_client(world, two, "proxy-old.shop.test",
                       cert=one.client_cert("proxy-old.shop.test"))
    status = wait_for(lambda: ended(old), lambda s: len(s) == 1, timeout=CONVERGE_TIMEOUT,
                      what="the old-CA client to be refused")[0]
    assert status.split()[1] == "14", status  # UNAVAILABLE: the handshake fails
    assert responses(old) == []

    # Every stream opened before the rotation is still up and gets updates.
    world.xds.set_cluster(connect_timeout="2s")
    for client in fleet:
        wait_for(lambda: responses(client), lambda r: len(r) >= 2, timeout=CONVERGE_TIMEOUT,
                 what=f"{client.name} to get the change made after the rotation")
    lost = [client.name for client in fleet if ended(client) or not client.running()]
    assert lost == [], f"streams lost during the rotation: {lost}"
    print(f"rotation: a client of the new CAs served {served_after:.1f}s after the files "
          f"changed; streams lost: {len(lost)} of {len(fleet)}")
    assert holdfast.admin.metric("holdfast_connected_proxies") == len(fleet)


def test_a_bad_new_key_keeps_the_old_files_served(world, tmp_path):
    pki = Pki(tmp_path, "one")
    live = tmp_path / "live"
    install(pki, live)
    holdfast = start_holdfast(world, live)
    tmp = live / ".server.key.new"
    tmp.write_text("not a key\n")
    os.replace(tmp, live / "server.key")
    tls = wait_for(lambda: holdfast.admin.get_json("/debug/tls"), lambda t: t.get("error"),
                   timeout=CONVERGE_TIMEOUT, what="the bad key to be reported")
    assert "not a PEM private key" in tls["error"], tls
    assert holdfast.admin.metric("holdfast_xds_tls_reload_failing") == 1
    client = start_client(world, pki, "proxy-a.shop.test")
    wait_for(lambda: responses(client), lambda r: len(r) >= 1, timeout=START_TIMEOUT,
             what="a client to be served with the old files")
    assert holdfast.admin.get("/readyz")[0] == 200


def test_spiffe_ids_pick_the_namespace_group(world, tmp_path):
    pki = Pki(tmp_path, "one")
    live = tmp_path / "live"
    install(pki, live)
    holdfast = start_holdfast(world, live, identity="spiffe:cluster.local",
                              group="spiffe-namespace")
    spiffe = "spiffe://cluster.local/ns/shop/sa/gateway"
    svid = pki.client_ca.issue("gateway", uri=spiffe)
    client = start_client(world, pki, spiffe, cert=svid, cluster="payments")
    wait_for(lambda: responses(client), lambda r: len(r) >= 1, timeout=START_TIMEOUT,
             what="the SPIFFE client's first response")
    proxy = holdfast.admin.proxy(spiffe)
    assert proxy["group"] == "shop" and proxy["identity"] == spiffe, proxy
    # Another trust domain's SVID is refused, whatever it claims.
    other = pki.client_ca.issue("other", uri="spiffe://evil.test/ns/shop/sa/gateway")
    refused = start_client(world, pki, "spiffe://evil.test/ns/shop/sa/gateway", cert=other)
    status = wait_for(lambda: ended(refused), lambda s: len(s) == 1, timeout=START_TIMEOUT,
                      what="the other trust domain's stream to end")[0]
    assert status.startswith(f"status {PERMISSION_DENIED} ") and "trust domain" in status, status
    assert holdfast.admin.metric("holdfast_xds_identity_refusals_total", reason="no_identity") == 1


def test_flags_that_would_trust_the_clients_claim_are_refused_at_start(binaries, tmp_path):
    pki = Pki(tmp_path, "one")
    (tmp_path / "empty").mkdir()
    tls = ["--tls-cert", pki.server.cert_file, "--tls-key", pki.server.key_file]
    mutual = [*tls, "--tls-client-ca", pki.client_ca.cert_file]
    cases = [
        ([*tls, "--xds-client-identity", "san-dns"], "needs mutual TLS"),
        ([*mutual, "--xds-client-identity", "san-dns", "--node-group", "cluster"],
         "takes the group from what the client claims"),
        ([*mutual, "--node-group", "identity"], "needs --xds-client-identity"),
        ([*mutual, "--xds-client-identity", "cn"], "expected none, common-name"),
    ]
    for flags, message in cases:
        r = subprocess.run([str(binaries.holdfast), "serve", "--config-dir", str(tmp_path / "empty"),
                            "--xds-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
                            "--state-dir", str(tmp_path / "state"), *map(str, flags)],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, (flags, r.returncode, r.stderr)
        assert message in r.stderr, (flags, r.stderr)


def test_grpc_go_over_mutual_tls_is_bound_to_its_certificate(world, tmp_path):
    """A real xDS client: grpc-go's bootstrap `tls` channel credentials."""
    one = Pki(tmp_path, "one")
    live = tmp_path / "live"
    install(one, live)
    holdfast = start_holdfast(world, live)

    def go_client(node_id: str, cert):
        creds = [{"type": "tls", "config": {"ca_certificate_file": str(one.server_ca.cert_file),
                                            "certificate_file": str(cert.cert_file),
                                            "private_key_file": str(cert.key_file)}}]
        return world.client("go", node_id=node_id, channel_creds=creds)

    proxy_cert = one.client_cert("go-proxy.shop.test")
    client = go_client("go-proxy.shop.test", proxy_cert)
    client.wait_serving("alpha", timeout=START_TIMEOUT)
    proxy = holdfast.admin.proxy("go-proxy.shop.test")
    assert proxy["identity"] == "go-proxy.shop.test" and proxy["group"] == proxy["identity"]

    # The same certificate under another node id gets nothing.
    impostor = go_client("go-other.shop.test", proxy_cert)
    wait_for(lambda: holdfast.admin.metric("holdfast_xds_identity_refusals_total",
                                           reason="mismatch"),
             lambda n: n >= 1, timeout=START_TIMEOUT, what="the impostor to be refused")
    assert not any(line.startswith("ok ") for line in impostor.lines()), impostor.lines()[-3:]
    assert holdfast.admin.proxy("go-other.shop.test") is None

    # Rotation under the running client: its stream stays and follows changes.
    opened = holdfast.admin.metric("holdfast_xds_streams_opened_total", kind="ads-sotw")
    install(Pki(tmp_path, "two"), live)
    wait_for(lambda: holdfast.admin.get_json("/debug/tls"), lambda t: t.get("reloads") == 1,
             timeout=CONVERGE_TIMEOUT, what="holdfast to reload the rotated files")
    world.xds.set_endpoint(world.beta.port)
    client.wait_serving("beta", since=client.mark())
    assert holdfast.admin.metric("holdfast_xds_streams_opened_total", kind="ads-sotw") == opened

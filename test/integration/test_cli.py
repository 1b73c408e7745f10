"""`holdfast status` and `holdfast proxies` against a running replica's admin
endpoint: the one screen an operator reads at 3 a.m., and its exit code.

- all well: exit 0, "nothing needs attention";
- a real gRPC client (C++ core) NACKs a change: `status` exits 1 and names
  the proxy, the type and the client's own error; `proxies --nacking` lists
  it first; `proxies NODE` shows it in detail; -o json says the same;
- a Rejected gateway object: `status` names it with file:line and the field
  path;
- an admin endpoint behind a token: without --admin-token-file exit 2 and
  say so; with it, the answer; a replica that cannot be reached: exit 2."""

import json
import subprocess

from hf_gateway import route, to_yaml, upstream, virtual_service
from hf_wait import wait_for
from hf_world import CONVERGE_TIMEOUT, START_TIMEOUT, Binaries


def holdfast_cli(*args):
    return subprocess.run([Binaries.from_env().holdfast, *args], capture_output=True, text=True,
                          timeout=60)


def admin_url(holdfast) -> str:
    return f"127.0.0.1:{holdfast.admin.port}"


def test_status_and_proxies_name_a_nacking_proxy(world):
    holdfast = world.start_holdfast()
    client = world.client("cpp")
    client.wait_serving("alpha", timeout=START_TIMEOUT)
    wait_for(lambda: holdfast.admin.metric("holdfast_proxies", state="synced"), lambda n: n == 1,
             timeout=CONVERGE_TIMEOUT, what="the client synced")
    ok = holdfast_cli("status", "--admin", admin_url(holdfast))
    print(ok.stdout)
    assert ok.returncode == 0 and "nothing needs attention" in ok.stdout, (ok.stdout, ok.stderr)
    assert "proxies    1: 1 synced, 0 pending, 0 nacking" in ok.stdout, ok.stdout

    world.xds.set_cluster(lb_policy="MAGLEV")  # valid for Envoy, not for proxyless gRPC
    bad = wait_for(lambda: holdfast_cli("status", "--admin", admin_url(holdfast)),
                   lambda r: r.returncode == 1, timeout=CONVERGE_TIMEOUT,
                   what="holdfast status to report the NACK")
    print(bad.stdout)
    nack = holdfast.admin.proxy(client.node_id)["types"][
        "type.googleapis.com/envoy.config.cluster.v3.Cluster"]["nack"]
    assert f"proxy {client.node_id} NACKs CDS version {nack['version']}: {nack['error']}" \
        in bad.stdout, bad.stdout
    assert "1: 0 synced, 0 pending, 1 nacking" in bad.stdout, bad.stdout

    summary = json.loads(holdfast_cli("status", "--admin", admin_url(holdfast), "-o", "json").stdout)
    assert summary["proxies"]["nacking"] == 1 and summary["ready"] is True, summary
    assert any(client.node_id in line for line in summary["attention"]), summary

    listed = holdfast_cli("proxies", "--admin", admin_url(holdfast), "--nacking")
    assert listed.returncode == 0, listed.stderr
    rows = listed.stdout.splitlines()
    assert rows[0].split()[:4] == ["NODE", "GROUP", "STREAM", "STATE"], rows
    assert len(rows) == 2 and rows[1].split()[0] == client.node_id and "nacking" in rows[1], rows
    detail = holdfast_cli("proxies", "--admin", admin_url(holdfast), client.node_id)
    print(detail.stdout)
    assert detail.returncode == 0 and nack["error"] in detail.stdout, detail.stdout
    gone = holdfast_cli("proxies", "--admin", admin_url(holdfast), "no-such-node")
    assert gone.returncode == 1 and "not connected" in gone.stderr, (gone.stdout, gone.stderr)
    as_json = json.loads(holdfast_cli("proxies", "--admin", admin_url(holdfast), "-o", "json").stdout)
    assert [p["state"] for p in as_json] == ["nacking"], as_json


def test_status_names_a_rejected_object_with_its_place(gateway_world):
    w = gateway_world
    w.config.write("upstreams.yaml", upstream("alpha", w.alpha.port))
    w.config.write("echo.yaml", virtual_service("echo", [route({"regex": "(broken"},
                                                               upstream="alpha")]))
    holdfast = w.start_holdfast()
    line = w.config.line_of("echo.yaml", "(broken")
    r = wait_for(lambda: holdfast_cli("status", "--admin", admin_url(holdfast)),
                 lambda r: "Rejected VirtualService" in r.stdout, timeout=CONVERGE_TIMEOUT,
                 what="the Rejected object in holdfast status")
    print(r.stdout)
    assert r.returncode == 1, r.stdout
    [entry] = [l for l in r.stdout.splitlines() if "Rejected VirtualService" in l]
    assert "VirtualService test/echo (" in entry, entry
    # The place is the line of the bad field (the object's own line when
    # they differ is printed after the field).
    assert f"echo.yaml:{line})" in entry, (entry, line)
    assert "spec.routes[0].match.regex" in entry and "invalid regex" in entry, entry


def test_status_needs_the_token_an_admin_endpoint_requires(world, tmp_path):
    token = tmp_path / "admin-token"
    token.write_text("s3cret-token\n")
    world.holdfast.start(extra_args=["--admin-token-file", token])
    world.holdfast.wait_ready()
    refused = holdfast_cli("status", "--admin", admin_url(world.holdfast))
    assert refused.returncode == 2 and "--admin-token-file" in refused.stderr, \
        (refused.stdout, refused.stderr)
    ok = holdfast_cli("status", "--admin", admin_url(world.holdfast), "--admin-token-file", token)
    assert ok.returncode == 0, (ok.stdout, ok.stderr)
    unreachable = holdfast_cli("status", "--admin", "127.0.0.1:1")
    assert unreachable.returncode == 2 and "127.0.0.1:1" in unreachable.stderr, unreachable.stderr


def test_dump_shows_what_a_proxy_was_sent(world):
    holdfast = world.start_holdfast()
    client = world.client("cpp")
    client.wait_serving("alpha", timeout=START_TIMEOUT)
    admin = admin_url(holdfast)
    sent = wait_for(lambda: json.loads(holdfast_cli("dump", "--admin", admin, "--node",
                                                    client.node_id, "-o", "json").stdout or "[]"),
                    lambda resources: len(resources) == 4, timeout=CONVERGE_TIMEOUT,
                    what="the four resources the client was sent")
    types = sorted(r["@type"].rsplit(".", 1)[1] for r in sent)
    assert types == ["Cluster", "ClusterLoadAssignment", "Listener", "RouteConfiguration"], types
    clusters = holdfast_cli("dump", "--admin", admin, "--node", client.node_id, "--type", "cluster")
    assert clusters.returncode == 0 and clusters.stdout.count("---\n") == 1, clusters.stdout
    assert '"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster"' in clusters.stdout
    group = holdfast_cli("dump", "--admin", admin, "--type", "listener", "-o", "json")
    assert [r["name"] for r in json.loads(group.stdout)] == [sent_listener(sent)], group.stdout
    nobody = holdfast_cli("dump", "--admin", admin, "--node", "nobody")
    assert nobody.returncode == 1 and "not connected" in nobody.stderr, nobody.stderr


def sent_listener(resources) -> str:
    [name] = [r["name"] for r in resources if r["@type"].endswith(".Listener")]
    return name


def test_diff_shows_what_a_change_would_do_before_it_is_made(gateway_world, tmp_path):
    w = gateway_world
    w.config.write("upstreams.yaml", upstream("alpha", w.alpha.port))
    w.config.write("echo.yaml", virtual_service("echo", [route({"prefix": "/"}, upstream="alpha")]))
    holdfast = w.start_holdfast()
    admin = admin_url(holdfast)
    same = wait_for(lambda: holdfast_cli("diff", "--admin", admin, w.config.path),
                    lambda r: r.returncode == 0, timeout=CONVERGE_TIMEOUT,
                    what="no difference against what is served")
    assert "0 added, 0 changed, 0 removed" in same.stdout, same.stdout

    proposed = tmp_path / "proposed"
    proposed.mkdir()
    (proposed / "upstreams.yaml").write_text(
        (w.config.path / "upstreams.yaml").read_text().replace(str(w.alpha.port),
                                                                str(w.beta.port)))
    (proposed / "echo.yaml").write_text((w.config.path / "echo.yaml").read_text())
    served_before = holdfast_cli("dump", "--admin", admin, "-o", "json").stdout
    r = holdfast_cli("diff", "--admin", admin, proposed)
    print(r.stdout)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "~ EDS test/alpha" in r.stdout, r.stdout
    diff_lines = [line.strip() for line in r.stdout.splitlines()]
    assert f'- "port_value": {w.alpha.port}'.replace(" ", "") in \
        [line.replace(" ", "") for line in diff_lines], r.stdout
    assert f'+ "port_value": {w.beta.port}'.replace(" ", "") in \
        [line.replace(" ", "") for line in diff_lines], r.stdout
    assert "0 added, 1 changed, 0 removed" in r.stdout, r.stdout
    # Nothing was written or served differently.
    assert holdfast_cli("dump", "--admin", admin, "-o", "json").stdout == served_before

    # A proposal with a Rejected object: said on stderr, its resources gone.
    (proposed / "echo.yaml").write_text(
        to_yaml(virtual_service("echo", [route({"regex": "(broken"}, upstream="alpha")])))
    r = holdfast_cli("diff", "--admin", admin, proposed)
    assert r.returncode == 1 and "would be Rejected" in r.stderr, (r.stdout, r.stderr)
    assert "spec.routes[0].match.regex" in r.stderr, r.stderr

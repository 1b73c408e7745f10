"""The gateway model (`holdfast serve --config-dir`) against real proxyless
gRPC xDS clients.

Each VirtualService domain becomes an API listener (`xds:///echo.test`) whose
RouteConfiguration holds the service's routes; each Upstream on an IP address
an EDS cluster. The clients route Echo.Call (`/holdfast.test.Echo/Call`) by
path and by request metadata (`--header`), and print which backend answered.

Two kinds of client run here. A *burst* client makes a fixed number of RPCs
back to back and exits; its RPCs wait for the client's first xDS config
(a generous deadline covers that), so the whole burst runs on the one config
written before holdfast started and every line must be what that config
says. A *steady* client makes an RPC every 50 ms for as long as the test
runs and is used to watch traffic move when the config changes. Every wait
polls with a deadline and ends in an assertion; none passes by sleeping.
"""

from collections import Counter

import pytest

from hf_gateway import (ConfigDir, object_status, route, route_table, split_location,
                        upstream, virtual_service, wait_state)
from hf_resources import EDS, RDS, TARGET_HOST
from hf_wait import wait_for
from hf_world import CONVERGE_TIMEOUT, START_TIMEOUT, assert_no_nack, proxy_type_state

ECHO_PREFIX = "/holdfast.test.Echo/"
VS_FILE = "echo.yaml"
# A burst client's RPCs wait for its first config; startup (Node loads the
# Envoy protos) is not counted, only name resolution and connecting.
BURST_DEADLINE_MS = 15000
STEADY_INTERVAL_MS = 50
UNAVAILABLE = 14


def write_upstreams(world) -> None:
    world.config.write("upstreams.yaml", upstream("alpha", world.alpha.port),
                       upstream("beta", world.beta.port))


def write_echo(config: ConfigDir, *routes: dict, **kwargs) -> None:
    config.write(VS_FILE, virtual_service("echo", list(routes), **kwargs))


def header_match(name: str, value: str, prefix: str = "/") -> dict:
    return {"prefix": prefix, "headers": [{"name": name, "exact": value}]}


def burst(world, kind: str, count: int, **options):
    return world.client(kind, count=count, interval_ms=0, deadline_ms=BURST_DEADLINE_MS,
                        **options)


def steady(world, kind: str):
    return world.client(kind, interval_ms=STEADY_INTERVAL_MS)


# The waits below fail at once, with the client's own words, if the client
# rejects anything holdfast sends: no test here expects a NACK.

def results(admin, client, count: int, since: int = 0,
            timeout: float = START_TIMEOUT) -> list[str]:
    return client.wait_lines(count, since=since, timeout=timeout,
                             guard=lambda: assert_no_nack(admin, client.node_id))


def serving(admin, client, backend: str, since: int = 0,
            timeout: float = CONVERGE_TIMEOUT) -> None:
    client.wait_serving(backend, since=since, timeout=timeout,
                        guard=lambda: assert_no_nack(admin, client.node_id))


def assert_accepted(admin, kind: str, name: str) -> dict:
    status = object_status(admin, kind, name)
    assert status is not None, f"{kind} {name} missing from /debug/status"
    assert status["status"] == "Accepted", status
    assert status["reasons"] == [], status
    assert status["serving_last_good"] is False, status
    return status


def assert_reason_at(reason: dict, config: ConfigDir, file_name: str, line: int) -> None:
    path, reported_line = split_location(reason["location"])
    assert path == (config.path / file_name).resolve(), reason
    assert reported_line == line, (f"expected line {line} of {file_name}", reason)


def error_codes(lines: list[str]) -> set[int]:
    codes = set()
    for line in lines:
        assert line.startswith("error "), f"expected a failed RPC, got {line!r} in {lines!r}"
        codes.add(int(line.split()[1]))
    return codes


def test_header_match_selects_upstream(gateway_world, client_kind):
    """A route matching `x-backend: beta` sends RPCs carrying that metadata to
    beta; RPCs without it, or with another value, fall through to the
    catch-all route to alpha."""
    w = gateway_world
    write_upstreams(w)
    write_echo(w.config,
               route(header_match("x-backend", "beta"), name="beta-by-header", upstream="beta"),
               route(name="default", upstream="alpha"))
    admin = w.start_holdfast().admin
    assert_accepted(admin, "VirtualService", "echo")

    n = 20
    plain = burst(w, client_kind, n)
    tagged = burst(w, client_kind, n, headers=[("x-backend", "beta")])
    other = burst(w, client_kind, n, headers=[("x-backend", "gamma")])
    assert results(admin, plain, n) == ["ok alpha"] * n
    assert results(admin, tagged, n) == ["ok beta"] * n
    assert results(admin, other, n) == ["ok alpha"] * n


def test_weighted_upstreams_split_traffic(gateway_world, client_kind):
    """`upstreams: [alpha 3, beta 1]`: over 200 RPCs both backends get
    traffic and alpha's share is near 3/4 (bounds at about five standard
    deviations: 60%-90%)."""
    w = gateway_world
    write_upstreams(w)
    write_echo(w.config, route(name="split", upstreams=[{"name": "alpha", "weight": 3},
                                                         {"name": "beta", "weight": 1}]))
    admin = w.start_holdfast().admin
    assert_accepted(admin, "VirtualService", "echo")

    n = 200
    lines = results(admin, burst(w, client_kind, n), n, timeout=START_TIMEOUT + 30)
    counts = Counter(lines)
    assert set(counts) <= {"ok alpha", "ok beta"}, counts
    assert counts["ok beta"] > 0 and counts["ok alpha"] > 0, counts
    share = counts["ok alpha"] / n
    assert 0.60 <= share <= 0.90, f"alpha got {share:.0%} of {n} RPCs: {counts}"


def test_route_change_moves_traffic(gateway_world, client_kind):
    """Rewriting the VirtualService (tmp file + rename) to send everything to
    beta moves a running client's traffic; the object stays Accepted."""
    w = gateway_world
    write_upstreams(w)
    write_echo(w.config, route(name="default", upstream="alpha"))
    admin = w.start_holdfast().admin
    client = steady(w, client_kind)
    serving(admin, client, "alpha", timeout=START_TIMEOUT)
    assert not any(l == "ok beta" for l in client.lines()), client.lines()

    since = client.mark()
    write_echo(w.config, route(name="default", upstream="beta"))
    serving(admin, client, "beta", since=since)
    # Once moved, it stays moved: no RPC goes back to alpha.
    assert results(admin, client, 10, since=client.mark()) == ["ok beta"] * 10
    wait_state(admin, "VirtualService", "echo", "Accepted", timeout=CONVERGE_TIMEOUT)
    assert_accepted(admin, "VirtualService", "echo")


def eds_resources_sent(admin) -> float:
    return admin.metrics().get(("holdfast_xds_resources_sent_total",
                                frozenset({("type_url", EDS)})), 0.0)


def wait_eds_acked(admin, client, other_than: str = "") -> str:
    state = wait_for(lambda: proxy_type_state(admin, client.node_id, EDS),
                     lambda s: s is not None and s.get("acked_version")
                     and s["acked_version"] == s.get("last_sent_version")
                     and s["acked_version"] != other_than,
                     timeout=CONVERGE_TIMEOUT, what=f"{client.node_id}'s ACK of the endpoints")
    return state["acked_version"]


def test_endpoint_change_resends_only_that_upstream(gateway_world, client_kind):
    """Two upstreams; alpha's host moves to beta's port. Each client is sent
    alpha's load assignment alone (after the first, state-of-the-world
    endpoint responses carry only what changed), so alpha's traffic moves,
    and RPCs routed to beta keep working on the assignment that was not
    re-sent: the client kept it, as the protocol says it must."""
    w = gateway_world
    write_upstreams(w)
    write_echo(w.config,
               route(header_match("x-backend", "beta"), name="beta-by-header", upstream="beta"),
               route(name="default", upstream="alpha"))
    admin = w.start_holdfast().admin
    plain = steady(w, client_kind)
    tagged = w.client(client_kind, interval_ms=STEADY_INTERVAL_MS,
                      headers=[("x-backend", "beta")])
    serving(admin, plain, "alpha", timeout=START_TIMEOUT)
    serving(admin, tagged, "beta", timeout=START_TIMEOUT)
    versions = {c.node_id: wait_eds_acked(admin, c) for c in (plain, tagged)}
    before = eds_resources_sent(admin)

    since_plain, since_tagged = plain.mark(), tagged.mark()
    w.config.write("upstreams.yaml", upstream("alpha", w.beta.port),
                   upstream("beta", w.beta.port))
    serving(admin, plain, "beta", since=since_plain)
    for c in (plain, tagged):
        wait_eds_acked(admin, c, other_than=versions[c.node_id])
    assert eds_resources_sent(admin) - before == 2, "one load assignment per client"
    # Beta's RPCs never failed, before or after the partial update.
    assert results(admin, tagged, 10, since=tagged.mark()) == ["ok beta"] * 10
    assert set(tagged.lines(since_tagged)) == {"ok beta"}, tagged.lines(since_tagged)


# Each bad edit would also move traffic to beta if holdfast applied any of it.
BAD_EDITS = {
    "unknown-field": dict(
        routes=lambda: [route(name="default", upstream="beta", colour="red")],
        needle="colour:",
        field="spec.routes[0].colour",
        message="unknown field"),
    "invalid-regex": dict(
        routes=lambda: [route({"prefix": "/", "headers": [{"name": "x-backend",
                                                           "regex": "(unclosed"}]},
                              name="by-regex", upstream="beta"),
                        route(name="default", upstream="beta")],
        needle="(unclosed",
        field="spec.routes[0].match.headers[0].regex",
        message="invalid regex"),
    # Envoy would refuse the gateway's whole route configuration for these.
    "header-name-with-crlf": dict(
        routes=lambda: [route({"prefix": "/", "headers": [{"name": "x-a\r\nx-b",
                                                           "exact": "1"}]},
                              name="by-header", upstream="beta"),
                        route(name="default", upstream="beta")],
        needle="x-a",
        field="spec.routes[0].match.headers[0].name",
        message="must be one line without control characters"),
    # gRPC listeners are named by domain: this one would share the name of
    # a gateway's listener and once froze every publication.
    "domain-with-slash": dict(
        routes=lambda: [route(name="default", upstream="beta")],
        domains=(TARGET_HOST, "gateway/test/public"),
        needle="gateway/test/public",
        field="spec.domains[1]",
        message="'/' is not allowed"),
}


@pytest.mark.parametrize("bad", sorted(BAD_EDITS))
def test_bad_input_keeps_last_good(gateway_world, client_kind, bad):
    """A VirtualService edit holdfast cannot decode is Rejected with the
    field path, file and line, `serving_last_good: true`; nothing new is
    sent and RPCs stay on the previous target; the fixed file is applied."""
    edit = BAD_EDITS[bad]
    w = gateway_world
    write_upstreams(w)
    write_echo(w.config, route(name="default", upstream="alpha"))
    admin = w.start_holdfast().admin
    client = steady(w, client_kind)
    serving(admin, client, "alpha", timeout=START_TIMEOUT)
    rds_before = wait_for(lambda: proxy_type_state(admin, client.node_id, RDS),
                          lambda s: s is not None and s.get("acked_version")
                          and s["acked_version"] == s.get("last_sent_version"),
                          timeout=CONVERGE_TIMEOUT, what="the client's ACK of the routes")

    write_echo(w.config, *edit["routes"](), **({"domains": edit["domains"]}
                                               if "domains" in edit else {}))
    line = w.config.line_of(VS_FILE, edit["needle"])
    status = wait_state(admin, "VirtualService", "echo", "Rejected", timeout=CONVERGE_TIMEOUT)
    assert status["serving_last_good"] is True, status
    reasons = [r for r in status["reasons"] if r.get("field") == edit["field"]]
    assert len(reasons) == 1, (edit["field"], status)
    assert edit["message"] in reasons[0]["message"], status
    assert_reason_at(reasons[0], w.config, VS_FILE, line)

    # The last good routes stay in service: the client is sent nothing new
    # and its RPCs keep reaching alpha.
    assert results(admin, client, 10, since=client.mark()) == ["ok alpha"] * 10
    assert proxy_type_state(admin, client.node_id, RDS) == rds_before

    write_echo(w.config, route(name="default", upstream="beta"))
    since = client.mark()
    wait_state(admin, "VirtualService", "echo", "Accepted", timeout=CONVERGE_TIMEOUT)
    assert_accepted(admin, "VirtualService", "echo")
    serving(admin, client, "beta", since=since)


def test_missing_upstream_fails_only_its_route(gateway_world, client_kind):
    """A route to an Upstream that does not exist is a Warning naming the
    field; RPCs matching that route fail (UNAVAILABLE), the service's other
    routes keep working."""
    w = gateway_world
    write_upstreams(w)
    write_echo(w.config,
               route(header_match("x-backend", "ghost"), name="to-ghost", upstream="ghost"),
               route(header_match("x-backend", "beta"), name="to-beta", upstream="beta"),
               route(name="default", upstream="alpha"))
    route_line = w.config.line_of(VS_FILE, 'name: "to-ghost"')
    field_line = w.config.line_of(VS_FILE, 'upstream: "ghost"')
    admin = w.start_holdfast().admin
    status = wait_state(admin, "VirtualService", "echo", "Warning", timeout=CONVERGE_TIMEOUT)
    reasons = [r for r in status["reasons"] if r.get("field") == "spec.routes[0].upstream"]
    assert len(reasons) == 1, status
    assert "test/ghost" in reasons[0]["message"], status
    # The reason points into the route: holdfast 2219dfd gives the route's
    # first line, not the `upstream:` line; either is specific enough.
    path, line = split_location(reasons[0]["location"])
    assert path == (w.config.path / VS_FILE).resolve(), reasons[0]
    assert route_line <= line <= field_line, (route_line, field_line, reasons[0])
    assert status["serving_last_good"] is False, status

    n = 10
    ghost = burst(w, client_kind, n, headers=[("x-backend", "ghost")])
    tagged = burst(w, client_kind, n, headers=[("x-backend", "beta")])
    plain = burst(w, client_kind, n)
    assert results(admin, plain, n) == ["ok alpha"] * n
    assert results(admin, tagged, n) == ["ok beta"] * n
    failed = results(admin, ghost, n)
    assert error_codes(failed) == {UNAVAILABLE}, failed


@pytest.mark.parametrize("by", ["name", "labels"])
def test_delegation_to_route_table(gateway_world, client_kind, by):
    """A route delegating the Echo service's prefix to a RouteTable (by name
    or by label selector) routes by the table's routes: to beta, not to the
    service's own catch-all to alpha."""
    w = gateway_world
    write_upstreams(w)
    delegate = ({"routeTables": [{"name": "echo-table"}]} if by == "name"
                else {"selector": {"labels": {"team": "echo"}}})
    w.config.write("table.yaml", route_table(
        "echo-table", [route({"prefix": ECHO_PREFIX}, name="echo-to-beta", upstream="beta")],
        labels={"team": "echo"}))
    write_echo(w.config,
               route({"prefix": ECHO_PREFIX}, name="echo-delegated", delegate=delegate),
               route(name="default", upstream="alpha"))
    admin = w.start_holdfast().admin
    assert_accepted(admin, "VirtualService", "echo")
    assert_accepted(admin, "RouteTable", "echo-table")

    n = 20
    assert results(admin, burst(w, client_kind, n), n) == ["ok beta"] * n

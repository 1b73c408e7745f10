"""The status page at the admin root, loaded in a real headless browser
(Debian's chromium): its script runs, reads the admin JSON and shows

- this replica (version, source, readiness, snapshot), proxies by group and
  state, objects, and recent events (the publications);
- after a bad change, the real gRPC client (C++ core) that NACKs it, with
  its error, and the Rejected object with its field path and file:line;
- behind --admin-token-file, no data and a request for the token.

Screenshots are kept as artifacts in $HOLDFAST_ARTIFACTS_DIR (default
BUILD/test-artifacts/status-page)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from hf_gateway import route, upstream, virtual_service
from hf_wait import wait_for
from hf_world import CONVERGE_TIMEOUT, START_TIMEOUT, REPO_ROOT

ARTIFACTS = Path(os.environ.get(
    "HOLDFAST_ARTIFACTS_DIR",
    Path(os.environ.get("HOLDFAST_BUILD_DIR", REPO_ROOT / "build")) / "test-artifacts"))


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail("chromium is not installed (scripts/setup.sh installs it)", pytrace=False)
    return path


def browser(url: str, *mode: str) -> subprocess.CompletedProcess:
    # Virtual time lets the page's script run (fetches and one refresh)
    # before the DOM is printed or the picture taken.
    return subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars",
                           "--virtual-time-budget=3000", "--window-size=1280,1500", *mode, url],
                          capture_output=True, text=True, timeout=90)


def page_dom(url: str) -> str:
    r = browser(url, "--dump-dom")
    assert r.returncode == 0 and "<html" in r.stdout, (r.returncode, r.stderr[-2000:])
    return r.stdout


def screenshot(url: str, name: str) -> Path:
    out = ARTIFACTS / "status-page" / f"{name}.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    r = browser(url, f"--screenshot={out}")
    assert r.returncode == 0 and out.stat().st_size > 10_000, (r.returncode, r.stderr[-2000:])
    print("screenshot:", out)
    return out


def test_the_page_shows_a_nacking_proxy_and_a_rejected_object(gateway_world):
    w = gateway_world
    w.config.write("upstreams.yaml", upstream("alpha", w.alpha.port))
    w.config.write("echo.yaml", virtual_service("echo", [route({"prefix": "/"}, upstream="alpha")]))
    holdfast = w.start_holdfast()
    client = w.client("cpp")
    client.wait_serving("alpha", timeout=START_TIMEOUT)
    url = f"http://127.0.0.1:{holdfast.admin.port}/"

    # Events are observed once a second (ReplicaEventWatch), so the first
    # publication may reach the page a second after the proxy synced.
    dom = wait_for(lambda: page_dom(url),
                   lambda d: 'class="synced">1<' in d and "published to group default" in d,
                   timeout=CONVERGE_TIMEOUT,
                   what="the page to count one synced proxy and show the publication event")
    assert "ready: serving snapshot" in dom and "v0." in dom, dom[:3000]
    assert "Accepted" in dom and "Upstream test/alpha" in dom, dom[-5000:]
    screenshot(url, "healthy")

    # A change the proxyless client rejects (Random is not a gRPC policy) and
    # an object holdfast refuses.
    bad_upstream = upstream("alpha", w.alpha.port)
    bad_upstream["spec"]["loadBalancing"] = "Random"
    w.config.write("upstreams.yaml", bad_upstream)
    w.config.write("broken.yaml", virtual_service("broken", [route({"regex": "(broken"},
                                                                   upstream="alpha")]))
    regex_line = w.config.line_of("broken.yaml", "(broken")
    dom = wait_for(lambda: page_dom(url),
                   lambda d: 'class="nacking">nacking<' in d and 'class="Rejected">Rejected<' in d,
                   timeout=CONVERGE_TIMEOUT, what="the NACK and the Rejected object on the page")
    nack = holdfast.admin.proxy(client.node_id)["types"][
        "type.googleapis.com/envoy.config.cluster.v3.Cluster"]["nack"]
    assert client.node_id in dom, "the NACKing proxy's node id is not shown"
    assert "CDS " + nack["version"] + ": " in dom, dom
    assert nack["error"].split("[")[0].strip() in dom, "the client's error is not shown"
    assert "VirtualService test/broken" in dom, dom
    assert "spec.routes[0].match.regex" in dom and f"broken.yaml:{regex_line}" in dom, dom
    # Trouble first: the Rejected row comes before any Accepted one.
    assert dom.index('class="Rejected">Rejected<') < dom.index('class="Accepted">Accepted<')
    screenshot(url, "nacking-and-rejected")


def test_behind_a_token_the_page_asks_for_it_and_shows_nothing(world, tmp_path):
    token = tmp_path / "admin-token"
    token.write_text("page-token\n")
    world.holdfast.start(extra_args=["--admin-token-file", token])
    world.holdfast.wait_ready()
    dom = page_dom(f"http://127.0.0.1:{world.holdfast.admin.port}/")
    assert 'id="auth" style="display: block;"' in dom, dom[:3000]
    assert "not updated: /" in dom, dom[:3000]
    # The script's text is in the DOM too: look at what it filled in.
    assert '<span id="replica">loading</span>' in dom and '<span id="snapshot"></span>' in dom
    assert '<div id="readiness"></div>' in dom and '<table id="proxies"></table>' in dom

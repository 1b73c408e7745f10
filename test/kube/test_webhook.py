"""The validating admission webhook against a real API server: holdfast
serves it over HTTPS (`serve --webhook-listen`), the API server calls it for
holdfast's objects, and an object holdfast would reject is refused at
apply time with its field paths, while valid objects are stored. With every
replica gone, the failure policy (Ignore) lets the cluster go on."""

import base64
import copy
import json

import yaml

from hf_admin import Admin
from hf_gateway import route, upstream, virtual_service
from hf_kube import REPO
from hf_process import environ_without_grpc, wait_for_file
from hf_tls import TestCa
from hf_wait import wait_for
from hf_world import START_TIMEOUT, Binaries

CRDS = ["gateways.holdfast.dev", "virtualservices.holdfast.dev", "routetables.holdfast.dev",
        "upstreams.holdfast.dev"]


def webhook_configuration(port: int, ca_file) -> dict:
    """deploy/webhook.yaml, pointed at this test's holdfast by URL."""
    config = yaml.safe_load((REPO / "deploy/webhook.yaml").read_text())
    hook = config["webhooks"][0]
    hook["clientConfig"] = {
        "url": f"https://127.0.0.1:{port}/validate",
        "caBundle": base64.b64encode(ca_file.read_bytes()).decode(),
    }
    return config


def test_bad_objects_are_refused_at_apply_with_field_paths(kube, procs, tmp_path):
    kube.admin.apply(sorted((REPO / "deploy/crds").glob("*.yaml")))
    kube.admin.wait_crds_established(CRDS)
    kube.ensure_namespace("test")
    serving = TestCa(tmp_path / "webhook-ca", "webhook-ca").issue("webhook")
    (tmp_path / "config").mkdir()
    ports_file = tmp_path / "ports.json"
    binaries = Binaries.from_env()
    holdfast = procs.start("holdfast", [
        binaries.holdfast, "serve", "--config-dir", tmp_path / "config",
        "--xds-listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
        "--webhook-listen", "127.0.0.1:0", "--webhook-cert", serving.cert_file,
        "--webhook-key", serving.key_file,
        "--ports-file", ports_file, "--state-dir", tmp_path / "state"],
        env=environ_without_grpc())
    ports = json.loads(wait_for_file(ports_file, holdfast, START_TIMEOUT))
    admin = Admin(int(ports["admin"]))
    kube.admin.apply(webhook_configuration(int(ports["webhook"]), serving.ca_file))

    bad = virtual_service("vs", [route({"regex": "/(x"}, upstream="up")])
    bad["spec"]["routes"][0]["options"] = {"requestHeaders": {"set": {"x-ok": "1"}}}
    # The webhook configuration takes effect within a second or two.
    refused = wait_for(lambda: kube.admin.try_apply(bad, namespace="test"),
                       lambda r: r.status != 200 and r.status != 201, timeout=30,
                       what="the API server to call the webhook")
    assert refused.status == 422, refused.text()
    text = refused.text()
    assert "spec.routes[0].match.regex" in text and "invalid regex" in text, text
    assert "holdfast" in text, text

    # Valid objects, and objects naming ones not created yet, are stored.
    for ok in (upstream("up", 8080), virtual_service("vs", [route(upstream="up")])):
        r = kube.admin.try_apply(ok, namespace="test")
        assert r.status in (200, 201), r.text()
    assert admin.metric("holdfast_webhook_denied_total") >= 1
    assert admin.metric("holdfast_webhook_reviews_total") >= 2

    # Every replica gone: failurePolicy Ignore admits (the schema still
    # checks), so holdfast being down never blocks the cluster.
    assert holdfast.stop() == 0
    later = copy.deepcopy(bad)
    r = kube.admin.try_apply(later, namespace="test")
    assert r.status in (200, 201), r.text()

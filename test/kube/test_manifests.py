"""The install manifests (deploy/) applied to a real API server with
server-side apply, in kustomization order: every object is stored as
written, the holdfast ServiceAccount may do exactly what a replica needs and
nothing else, and the webhook configuration never blocks a change when no
replica answers. (No kubelet: the Deployment is stored, not run.)"""

import time

import pytest
import yaml

from hf_kube import HOLDFAST_NAMESPACE, REPO
from hf_wait import wait_for

DEPLOY = REPO / "deploy"
API = "holdfast.dev/v1"


def kustomization_files(directory):
    k = yaml.safe_load((directory / "kustomization.yaml").read_text())
    return [directory / f for f in k["resources"]]


def objects(files):
    return [d for f in files for d in yaml.safe_load_all(f.read_text()) if d]


@pytest.fixture(scope="module")
def installed(kube_shared, kube_binaries):
    a = kube_shared.admin
    # The Gateway API CRDs first (a prerequisite of deploy/gateway-api).
    gateway_crds = sorted(kube_binaries.gateway_api_crds.glob("*.yaml"))
    crds = [d for d in objects(gateway_crds) if d["kind"] == "CustomResourceDefinition"]
    a.apply(crds, field_manager="gateway-api")
    a.wait_crds_established([c["metadata"]["name"] for c in crds])
    files = kustomization_files(DEPLOY)
    for f in files:  # in order: namespace, CRDs, RBAC, workload, webhook
        a.apply(f, field_manager="holdfast-install")
        if "crds/" in str(f):
            a.wait_crds_established([d["metadata"]["name"] for d in objects([f])])
    a.apply(kustomization_files(DEPLOY / "gateway-api"), field_manager="holdfast-install")
    yield kube_shared
    # The status fencing policy refuses every status write without a Lease
    # holder: later tests on the shared cluster write statuses as admin.
    a.call("DELETE", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/"
                     "holdfast-status-fencing")


def test_kustomization_lists_every_manifest():
    listed = {f.resolve() for f in kustomization_files(DEPLOY)}
    on_disk = {p.resolve() for p in DEPLOY.glob("*.yaml") if p.name != "kustomization.yaml"}
    on_disk |= {p.resolve() for p in (DEPLOY / "crds").glob("*.yaml")}
    assert listed == on_disk


def test_every_object_is_stored(installed):
    a = installed.admin
    for obj in objects(kustomization_files(DEPLOY) + kustomization_files(DEPLOY / "gateway-api")):
        _, namespaced = a.resource(obj["apiVersion"], obj["kind"])
        ns = obj["metadata"].get("namespace") if namespaced else None
        assert not namespaced or ns, f"{obj['kind']} {obj['metadata']['name']} has no namespace"
        stored = a.get(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], ns)
        assert stored is not None, f"{obj['kind']} {obj['metadata']['name']} not stored"
        for field in ("rules", "roleRef", "subjects", "webhooks"):
            if field in obj:
                assert len(stored[field]) == len(obj[field]), field

    d = a.get("apps/v1", "Deployment", "holdfast", HOLDFAST_NAMESPACE)
    pod = d["spec"]["template"]["spec"]
    assert d["spec"]["replicas"] == 3
    container = pod["containers"][0]
    assert container["args"][:2] == ["serve", "--in-cluster"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert any(a.startswith("--state-dir=") for a in container["args"])
    assert pod["affinity"]["podAntiAffinity"]
    assert pod["serviceAccountName"] == "holdfast"
    pdb = a.get("policy/v1", "PodDisruptionBudget", "holdfast", HOLDFAST_NAMESPACE)
    assert pdb["spec"]["maxUnavailable"] == 1
    svc = a.get("v1", "Service", "holdfast-xds", HOLDFAST_NAMESPACE)
    assert svc["spec"]["ports"][0]["port"] == 18000 and svc["spec"]["clusterIP"]
    hook = a.get("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration",
                 "holdfast", None)
    assert [w["failurePolicy"] for w in hook["webhooks"]] == ["Ignore"]
    gc = a.get("gateway.networking.k8s.io/v1", "GatewayClass", "holdfast", None)
    assert gc["spec"]["controllerName"] == "holdfast.dev/gateway-controller"
    binding = a.get("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding",
                    "holdfast-status-fencing", None)
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert binding["spec"]["paramRef"] == {
        "name": "holdfast-leader", "namespace": HOLDFAST_NAMESPACE,
        "parameterNotFoundAction": "Deny"}


HOLDFAST_KINDS = ["gateways", "virtualservices", "routetables", "upstreams", "rolloutpolicies"]
GATEWAY_API_READ = ["gatewayclasses", "gateways", "httproutes", "grpcroutes", "referencegrants"]
GATEWAY_API_STATUS = ["gatewayclasses", "gateways", "httproutes", "grpcroutes"]

# (verb, group, resource, subresource, namespace, name, allowed)
ACCESS = (
    [(v, "holdfast.dev", r, None, "shop", None, True)
     for r in HOLDFAST_KINDS for v in ("get", "list", "watch")]
    + [("update", "holdfast.dev", r, "status", "shop", None, True) for r in HOLDFAST_KINDS]
    + [(v, "holdfast.dev", r, None, "shop", None, False)
       for r in HOLDFAST_KINDS for v in ("create", "update", "patch", "delete",
                                         "deletecollection")]
    + [("patch", "holdfast.dev", "upstreams", "status", "shop", None, False)]
    + [(v, "gateway.networking.k8s.io", r, None, "shop", None, True)
       for r in GATEWAY_API_READ for v in ("get", "list", "watch")]
    + [("update", "gateway.networking.k8s.io", r, "status", "shop", None, True)
       for r in GATEWAY_API_STATUS]
    + [("update", "gateway.networking.k8s.io", "referencegrants", "status", "shop", None, False),
       ("update", "gateway.networking.k8s.io", "httproutes", None, "shop", None, False),
       ("delete", "gateway.networking.k8s.io", "gateways", None, "shop", None, False),
       ("create", "gateway.networking.k8s.io", "httproutes", None, "shop", None, False)]
    + [(v, "", "services", None, "shop", None, True) for v in ("get", "list", "watch")]
    + [(v, "discovery.k8s.io", "endpointslices", None, "shop", None, True)
       for v in ("get", "list", "watch")]
    + [(v, "", "namespaces", None, None, None, True) for v in ("get", "list", "watch")]
    + [("update", "", "services", None, "shop", None, False),
       ("update", "discovery.k8s.io", "endpointslices", None, "shop", None, False),
       ("list", "", "pods", None, "shop", None, False),
       ("list", "", "configmaps", None, "shop", None, False),
       ("create", "", "namespaces", None, None, None, False)]
    # Secrets: only where a RoleBinding grants them.
    + [(v, "", "secrets", None, HOLDFAST_NAMESPACE, None, True) for v in ("get", "list", "watch")]
    + [("get", "", "secrets", None, "shop", None, False),
       ("list", "", "secrets", None, None, None, False),
       ("create", "", "secrets", None, HOLDFAST_NAMESPACE, None, False)]
    # The Lease: create in holdfast's namespace, get/update that one only.
    + [("create", "coordination.k8s.io", "leases", None, HOLDFAST_NAMESPACE, None, True),
       ("get", "coordination.k8s.io", "leases", None, HOLDFAST_NAMESPACE, "holdfast-leader",
        True),
       ("update", "coordination.k8s.io", "leases", None, HOLDFAST_NAMESPACE, "holdfast-leader",
        True),
       ("get", "coordination.k8s.io", "leases", None, HOLDFAST_NAMESPACE, "other", False),
       ("update", "coordination.k8s.io", "leases", None, HOLDFAST_NAMESPACE, "other", False),
       ("delete", "coordination.k8s.io", "leases", None, HOLDFAST_NAMESPACE, "holdfast-leader",
        False),
       ("list", "coordination.k8s.io", "leases", None, HOLDFAST_NAMESPACE, None, False),
       ("create", "coordination.k8s.io", "leases", None, "default", None, False),
       ("get", "coordination.k8s.io", "leases", None, "kube-system", "holdfast-leader", False)]
    # The rollout's shared decisions: one ConfigMap in holdfast's namespace.
    + [("create", "", "configmaps", None, HOLDFAST_NAMESPACE, None, True),
       ("get", "", "configmaps", None, HOLDFAST_NAMESPACE, "holdfast-rollout", True),
       ("update", "", "configmaps", None, HOLDFAST_NAMESPACE, "holdfast-rollout", True),
       ("get", "", "configmaps", None, HOLDFAST_NAMESPACE, "other", False),
       ("update", "", "configmaps", None, HOLDFAST_NAMESPACE, "other", False),
       ("delete", "", "configmaps", None, HOLDFAST_NAMESPACE, "holdfast-rollout", False),
       ("create", "", "configmaps", None, "shop", None, False)]
    # Nothing that widens its own rights.
    + [("create", "rbac.authorization.k8s.io", "rolebindings", None, HOLDFAST_NAMESPACE, None,
        False),
       ("update", "apiextensions.k8s.io", "customresourcedefinitions", None, None, None, False),
       ("update", "admissionregistration.k8s.io", "validatingwebhookconfigurations", None, None,
        None, False),
       # ... nor escapes its fencing.
       ("delete", "admissionregistration.k8s.io", "validatingadmissionpolicybindings", None,
        None, "holdfast-status-fencing", False),
       ("update", "admissionregistration.k8s.io", "validatingadmissionpolicies", None, None,
        "holdfast-status-fencing", False)]
)


def access_id(case):
    verb, group, resource, sub, ns, name, allowed = case
    what = f"{resource}/{sub}" if sub else resource
    return f"{verb}-{group or 'core'}-{what}-{ns or 'cluster'}{'-' + name if name else ''}"


@pytest.mark.parametrize("case", ACCESS, ids=[access_id(c) for c in ACCESS])
def test_holdfast_rbac(installed, case):
    verb, group, resource, sub, ns, name, allowed = case
    assert installed.holdfast.can_i(verb, resource, group=group, namespace=ns,
                                    subresource=sub, name=name) == allowed


def test_holdfast_rbac_in_practice(installed):
    """The same, through real requests as the holdfast user: read, write a
    status, take the Lease; refused deletes and spec writes."""
    a, h = installed.admin, installed.holdfast
    installed.ensure_namespace("rbac-test")
    up = {"apiVersion": API, "kind": "Upstream",
          "metadata": {"name": "u", "namespace": "rbac-test"},
          "spec": {"hosts": [{"address": "10.0.0.1", "port": 80}]}}
    a.apply(up)
    listed = h.list(API, "Upstream")
    assert "u" in [i["metadata"]["name"] for i in listed["items"]]
    # Take the Lease first: deploy/status-fencing.yaml admits a status
    # only from its holder, in its term (leaseTransitions + 1).
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "holdfast-leader", "namespace": HOLDFAST_NAMESPACE},
             "spec": {"holderIdentity": "holdfast-0", "leaseDurationSeconds": 15,
                      "leaseTransitions": 0}}
    created = h.create(lease)

    def write_status():
        obj = h.get(API, "Upstream", "u", "rbac-test")
        obj["status"] = {"state": "Accepted",
                         "observedGeneration": obj["metadata"]["generation"],
                         "writer": {"replica": "holdfast-0", "term": 1}}
        return h.request("PUT", h.object_path(obj, "status"), obj)
    # The policy sees the new Lease after a short propagation delay.
    r = wait_for(write_status, lambda r: r.status == 200, timeout=30,
                 what="the Lease holder's status write", interval=0.2)
    written = r.json()
    assert written["status"]["writer"] == {"replica": "holdfast-0", "term": 1}
    assert h.request("DELETE", h.path(API, "Upstream", "u", "rbac-test")).status == 403
    spec = dict(written)
    spec["spec"] = {"hosts": [{"address": "10.0.0.2", "port": 80}]}
    assert h.request("PUT", h.object_path(spec), spec).status == 403
    assert a.get(API, "Upstream", "u", "rbac-test")["spec"] == up["spec"]

    created["spec"]["leaseTransitions"] = 1
    assert h.update(created)["spec"]["leaseTransitions"] == 1
    assert h.request("DELETE", h.object_path(created)).status == 403
    r = h.request("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", lease)
    assert r.status == 403


def test_webhook_never_blocks_when_no_replica_answers(installed):
    """No replica runs (no kubelet): the webhook cannot be reached, and with
    failurePolicy Ignore objects are still admitted, within its timeout."""
    installed.ensure_namespace("webhook-test")
    up = {"apiVersion": API, "kind": "Upstream",
          "metadata": {"name": "w", "namespace": "webhook-test"},
          "spec": {"hosts": [{"address": "10.0.0.1", "port": 80}]}}
    mark = installed.apiserver.log_size()
    t0 = time.monotonic()
    installed.admin.apply(up)
    elapsed = time.monotonic() - t0
    print(f"admitted with the webhook unreachable in {elapsed:.2f}s")
    assert installed.admin.get(API, "Upstream", "w", "webhook-test") is not None
    timeout = installed.admin.get("admissionregistration.k8s.io/v1",
                                  "ValidatingWebhookConfiguration", "holdfast",
                                  None)["webhooks"][0]["timeoutSeconds"]
    assert elapsed < timeout + 5, f"admission took {elapsed:.1f}s"
    # It failed for want of endpoints: the harness never lets the API server
    # resolve a Service through DNS (which could leave the machine).
    log = "\n".join(installed.apiserver.log_lines_since(mark))
    assert 'no endpoints available for service "holdfast-webhook"' in log, log[-2000:]
    # The schema still applies with the webhook down.
    bad = {**up, "metadata": {"name": "w2", "namespace": "webhook-test"},
           "spec": {"hosts": [{"address": "10.0.0.1", "port": 0}]}}
    assert installed.admin.try_apply(bad).status == 422

"""A real Kubernetes API server for tests: etcd 3.6 and kube-apiserver as
children of the test's ProcessSet, and a small HTTP client to drive them.

Binaries come from scripts/kube.sh, which builds them into $HOLDFAST_CACHE
(see KubeBinaries.from_env): HOLDFAST_KUBE_APISERVER, HOLDFAST_ETCD36 and
HOLDFAST_GATEWAY_API_CRDS override the paths it prints.

What one KubeCluster is:
- etcd 3.6 (hf_etcd.EtcdCluster with the 3.6 binary), one member on
  loopback; or an etcd the test already runs (`etcd=`), shared by several
  API servers with distinct `etcd_prefix`es.
- kube-apiserver on `host` (default 127.0.0.1) at a port picked at run time
  (its --secure-port cannot be 0: 0 turns HTTPS off), serving a certificate
  from a CA made for this cluster; a service-account key pair made at run
  time (so the TokenRequest API works: service_account_token()); static
  tokens (--token-auth-file) for two users:
    admin     group system:masters: may do anything;
    holdfast  named like the ServiceAccount deploy/ installs
              (system:serviceaccount:holdfast-system:holdfast), so the RBAC of
              deploy/rbac.yaml applies to it unchanged; it has no rights until
              that RBAC is applied.
  --authorization-mode=RBAC, --endpoint-reconciler-type=none (no kubelet, no
  controller manager: Deployments and Services are stored, nothing runs).
- A kubeconfig per user (kubeconfig("admin"), kubeconfig("holdfast")) with
  the CA inline, for holdfast's --kubeconfig and for kubectl.

The API server can be stopped and started again alone (stop_apiserver /
start_apiserver keep port, certificates, tokens and data), killed with a
signal, or put behind a hf_etcd.FaultProxy (proxy(); kubeconfig(user,
server=proxy.endpoint)) to make it unreachable without stopping it.
close() stops the API server, then etcd, and fails if either exited with an
unexpected code.

KubeClient speaks the API's JSON over HTTPS (one connection per request, so
a restarted server needs no reconnect logic): server-side apply
(application/apply-patch+yaml with a field manager), get/list/delete/
create/update, watches, raw requests, and access reviews.
"""

import base64
import http.client
import json
import os
import secrets
import signal
import ssl
import subprocess
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence, Union

import yaml

from hf_etcd import EtcdCluster, free_ports
from hf_process import ManagedProcess, ProcessSet, environ_without_grpc
from hf_tls import TestCa, _openssl
from hf_wait import wait_for

REPO = Path(__file__).resolve().parents[2]

# kube-apiserver starts in ~3 s on an idle machine; two cores shared with
# compilers can make that many times longer.
APISERVER_START_TIMEOUT = 90.0
REQUEST_TIMEOUT = 30.0

# The identity of deploy/'s ServiceAccount, which the `holdfast` user of the
# test API server takes so that deploy/rbac.yaml applies to it as written.
HOLDFAST_NAMESPACE = "holdfast-system"
HOLDFAST_SERVICE_ACCOUNT = "holdfast"
HOLDFAST_USER = f"system:serviceaccount:{HOLDFAST_NAMESPACE}:{HOLDFAST_SERVICE_ACCOUNT}"
HOLDFAST_GROUPS = ("system:serviceaccounts", f"system:serviceaccounts:{HOLDFAST_NAMESPACE}")

SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"

# Exit codes that count as a clean stop after SIGTERM. kube-apiserver shuts
# down gracefully and exits 0; etcd re-raises the signal after its cleanup,
# so it ends "killed by SIGTERM".
APISERVER_CLEAN_EXITS = (0,)
ETCD_CLEAN_EXITS = (0, -signal.SIGTERM)


# --- binaries -------------------------------------------------------------------

@dataclass(frozen=True)
class KubeBinaries:
    apiserver: Path
    etcd: Path
    gateway_api_crds: Path  # directory of the standard channel's CRD files
    version: str

    @staticmethod
    def from_env() -> "KubeBinaries":
        """Paths from the environment, else from `scripts/kube.sh --print-env`
        (which prints where it builds them, building nothing)."""
        env = {}
        keys = ("HOLDFAST_KUBE_APISERVER", "HOLDFAST_ETCD36", "HOLDFAST_GATEWAY_API_CRDS",
                "HOLDFAST_KUBE_VERSION")
        if not all(os.environ.get(k) for k in keys[:3]):
            r = subprocess.run(["bash", str(REPO / "scripts" / "kube.sh"), "--print-env"],
                               capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                raise AssertionError(f"scripts/kube.sh --print-env failed: {r.stderr}")
            for line in r.stdout.splitlines():
                if line.startswith("export "):
                    k, _, v = line[len("export "):].partition("=")
                    env[k] = v.strip("'\"")
        env.update({k: os.environ[k] for k in keys if os.environ.get(k)})
        return KubeBinaries(apiserver=Path(env["HOLDFAST_KUBE_APISERVER"]),
                            etcd=Path(env["HOLDFAST_ETCD36"]),
                            gateway_api_crds=Path(env["HOLDFAST_GATEWAY_API_CRDS"]),
                            version=env.get("HOLDFAST_KUBE_VERSION", ""))

    def missing(self) -> list[str]:
        out = [str(p) for p in (self.apiserver, self.etcd) if not os.access(p, os.X_OK)]
        if not self.gateway_api_crds.is_dir():
            out.append(str(self.gateway_api_crds))
        return out


# --- HTTP client --------------------------------------------------------------------

@dataclass
class Response:
    status: int
    body: bytes
    headers: dict

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError as e:
            raise AssertionError(f"HTTP {self.status}: not JSON ({e}): {self.body[:500]!r}")

    def text(self) -> str:
        return self.body.decode(errors="replace")


class KubeError(AssertionError):
    """The API answered with an unexpected status; `response` has it (its
    body is usually a metav1.Status with `reason` and `message`)."""

    def __init__(self, message: str, response: Response):
        super().__init__(message)
        self.response = response

    @property
    def status(self) -> int:
        return self.response.status


def _docs(manifests: Union[str, Path, dict, Sequence[Union[dict, Path]]]) -> list[dict]:
    """Objects from a dict, YAML text, a YAML file, or a list of any of
    these (each document one object; empty documents and `kind: List` items
    handled)."""
    if isinstance(manifests, (list, tuple)):
        return [o for m in manifests for o in _docs(m)]
    if isinstance(manifests, dict):
        docs = [manifests]
    elif isinstance(manifests, Path):
        docs = list(yaml.safe_load_all(manifests.read_text()))
    elif isinstance(manifests, str):
        docs = list(yaml.safe_load_all(manifests))
    else:
        raise TypeError(f"not a manifest: {manifests!r}")
    out = []
    for d in docs:
        if not d:
            continue
        if d.get("kind", "").endswith("List") and "items" in d:
            out.extend(d["items"])
        else:
            out.append(d)
    return out


class KubeClient:
    """A client of one API server as one user (a bearer token)."""

    def __init__(self, server: str, ca_file: Path, token: str, name: str = ""):
        self.server = server.rstrip("/")
        u = urllib.parse.urlsplit(self.server)
        assert u.scheme == "https", server
        self._host, self._port = u.hostname, u.port or 443
        self.ca_file = Path(ca_file)
        self.token = token
        self.name = name
        self._ctx = ssl.create_default_context(cafile=str(ca_file))
        # { "group/version": {kind: (plural, namespaced)} }
        self._discovery: dict[str, dict[str, tuple[str, bool]]] = {}

    def with_server(self, server: str) -> "KubeClient":
        """The same user and CA against another address (a FaultProxy)."""
        return KubeClient(server, self.ca_file, self.token, self.name)

    # -- raw --

    def _connect(self, timeout: float) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self._host, self._port, context=self._ctx,
                                           timeout=timeout)

    def request(self, method: str, path: str, body: Any = None, *,
                content_type: str = "application/json", params: Optional[dict] = None,
                timeout: float = REQUEST_TIMEOUT, headers: Optional[dict] = None) -> Response:
        """One request; any status comes back as a Response. `body`: bytes,
        str, or an object sent as JSON. Raises OSError when the server cannot
        be reached."""
        if params:
            path += ("&" if "?" in path else "?") + urllib.parse.urlencode(
                {k: v for k, v in params.items() if v is not None})
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        h = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if body is not None:
            h["Content-Type"] = content_type
        h.update(headers or {})
        conn = self._connect(timeout)
        try:
            conn.request(method, path, body=body, headers=h)
            r = conn.getresponse()
            return Response(r.status, r.read(), dict(r.getheaders()))
        finally:
            conn.close()

    def call(self, method: str, path: str, body: Any = None, *,
             expect: Sequence[int] = (200, 201), **kwargs) -> Any:
        """request() that fails unless the status is in `expect`; returns the
        decoded JSON body."""
        r = self.request(method, path, body, **kwargs)
        if r.status not in expect:
            raise KubeError(f"{self.name or 'client'}: {method} {path}: HTTP {r.status}: "
                            f"{r.text()[:2000]}", r)
        return r.json() if r.body else None

    # -- addressing --

    def _resources(self, group_version: str, refresh: bool = False) -> dict:
        if refresh or group_version not in self._discovery:
            path = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
            r = self.request("GET", path)
            table = {}
            if r.status == 200:
                for res in r.json().get("resources", []):
                    if "/" not in res["name"]:
                        table[res["kind"]] = (res["name"], res["namespaced"])
            self._discovery[group_version] = table
        return self._discovery[group_version]

    def resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        """(plural, namespaced) of a kind, from discovery (refreshed once on
        a miss: a CRD may have just been established)."""
        table = self._resources(api_version)
        if kind not in table:
            table = self._resources(api_version, refresh=True)
        if kind not in table:
            raise AssertionError(f"the API server does not serve {kind} in {api_version}")
        return table[kind]

    def path(self, api_version: str, kind: str, name: Optional[str] = None,
             namespace: Optional[str] = None, subresource: Optional[str] = None) -> str:
        """The URL path of a collection (name None) or an object."""
        plural, namespaced = self.resource(api_version, kind)
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        if namespaced and namespace is not None:
            base += f"/namespaces/{namespace}"
        base += f"/{plural}"
        if name is not None:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base

    def object_path(self, obj: dict, subresource: Optional[str] = None,
                    default_namespace: str = "default") -> str:
        meta = obj.get("metadata", {})
        _, namespaced = self.resource(obj["apiVersion"], obj["kind"])
        ns = meta.get("namespace", default_namespace) if namespaced else None
        return self.path(obj["apiVersion"], obj["kind"], meta["name"], ns, subresource)

    # -- objects --

    def apply(self, manifests: Union[str, Path, dict, Sequence[Union[dict, Path]]], *,
              field_manager: str = "holdfast-test", dry_run: bool = False,
              force: bool = True, subresource: Optional[str] = None,
              namespace: str = "default", field_validation: str = "Strict",
              timeout: float = REQUEST_TIMEOUT) -> list[dict]:
        """Server-side apply of every object (PATCH with
        application/apply-patch+yaml); returns what the server stored (or
        would store, with dry_run). Fails on the first refusal (KubeError).
        field_validation Strict (kubectl's default) refuses unknown fields;
        the API's own default, Warn, drops them."""
        out = []
        for obj in _docs(manifests):
            r = self.try_apply(obj, field_manager=field_manager, dry_run=dry_run, force=force,
                               subresource=subresource, namespace=namespace,
                               field_validation=field_validation, timeout=timeout)
            if r.status not in (200, 201):
                meta = obj.get("metadata", {})
                raise KubeError(f"{self.name}: apply {obj.get('kind')} "
                                f"{meta.get('namespace', '')}/{meta.get('name')}: HTTP "
                                f"{r.status}: {r.text()[:2000]}", r)
            out.append(r.json())
        return out

    def try_apply(self, obj: dict, *, field_manager: str = "holdfast-test",
                  dry_run: bool = False, force: bool = True,
                  subresource: Optional[str] = None, namespace: str = "default",
                  field_validation: str = "Strict",
                  timeout: float = REQUEST_TIMEOUT) -> Response:
        """apply() of one object, returning the raw response instead of
        failing: for tests of refusals (HTTP 422, the body a Status whose
        details.causes name the fields)."""
        params = {"fieldManager": field_manager, "force": "true" if force else None,
                  "dryRun": "All" if dry_run else None, "fieldValidation": field_validation}
        return self.request("PATCH", self.object_path(obj, subresource, namespace),
                            yaml.safe_dump(obj), params=params, timeout=timeout,
                            content_type="application/apply-patch+yaml")

    def create(self, obj: dict, namespace: str = "default") -> dict:
        meta = obj.get("metadata", {})
        _, namespaced = self.resource(obj["apiVersion"], obj["kind"])
        return self.call("POST", self.path(obj["apiVersion"], obj["kind"], None,
                                           meta.get("namespace", namespace) if namespaced
                                           else None), obj)

    def update(self, obj: dict, subresource: Optional[str] = None) -> dict:
        """PUT: conditioned on obj's metadata.resourceVersion if it has one
        (409 Conflict when it is stale)."""
        return self.call("PUT", self.object_path(obj, subresource), obj)

    def get(self, api_version: str, kind: str, name: str,
            namespace: Optional[str] = "default") -> Optional[dict]:
        """The object, or None when it does not exist."""
        r = self.request("GET", self.path(api_version, kind, name, namespace))
        if r.status == 404:
            return None
        if r.status != 200:
            raise KubeError(f"GET {kind} {namespace}/{name}: HTTP {r.status}: {r.text()}", r)
        return r.json()

    def list(self, api_version: str, kind: str, namespace: Optional[str] = None,
             **params) -> dict:
        """The list object (items, metadata.resourceVersion). `namespace`
        None: every namespace. params: labelSelector, limit, ..."""
        return self.call("GET", self.path(api_version, kind, None, namespace), params=params)

    def delete(self, api_version: str, kind: str, name: str,
               namespace: Optional[str] = "default", *, missing_ok: bool = True) -> Response:
        r = self.request("DELETE", self.path(api_version, kind, name, namespace))
        if r.status not in (200, 202) and not (missing_ok and r.status == 404):
            raise KubeError(f"DELETE {kind} {namespace}/{name}: HTTP {r.status}: {r.text()}", r)
        return r

    def watch(self, api_version: str, kind: str, namespace: Optional[str] = None, *,
              resource_version: Optional[str] = None, bookmarks: bool = True,
              timeout_seconds: int = 60, read_timeout: float = 90.0,
              **params) -> Iterator[dict]:
        """Watch events ({type, object}) as they arrive, until the server
        ends the watch (timeoutSeconds) or read_timeout passes in silence
        (socket.timeout). An ERROR event (e.g. 410 Gone) is yielded like any
        other."""
        query = {"watch": "1", "resourceVersion": resource_version,
                 "allowWatchBookmarks": "true" if bookmarks else None,
                 "timeoutSeconds": str(timeout_seconds), **params}
        path = self.path(api_version, kind, None, namespace) + "?" + urllib.parse.urlencode(
            {k: v for k, v in query.items() if v is not None})
        conn = self._connect(read_timeout)
        try:
            conn.request("GET", path, headers={"Authorization": f"Bearer {self.token}",
                                               "Accept": "application/json"})
            r = conn.getresponse()
            if r.status != 200:
                raise KubeError(f"watch {path}: HTTP {r.status}",
                                Response(r.status, r.read(), dict(r.getheaders())))
            for line in r:
                line = line.strip()
                if line:
                    yield json.loads(line)
        finally:
            conn.close()

    # -- access --

    def can_i(self, verb: str, resource: str, *, group: str = "",
              namespace: Optional[str] = None, subresource: Optional[str] = None,
              name: Optional[str] = None) -> bool:
        """SelfSubjectAccessReview: may this user do `verb` on `resource`?"""
        attrs = {"verb": verb, "resource": resource, "group": group}
        for k, v in (("namespace", namespace), ("subresource", subresource), ("name", name)):
            if v:
                attrs[k] = v
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                  "spec": {"resourceAttributes": attrs}}
        r = self.call("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review)
        return bool(r["status"].get("allowed"))

    def wait_crds_established(self, names: Sequence[str], timeout: float = 60.0) -> None:
        """Waits until every CRD named (plural.group) is Established."""
        def observe():
            pending = []
            for n in names:
                crd = self.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", n, None)
                conds = {c["type"]: c["status"] for c in
                         ((crd or {}).get("status", {}).get("conditions") or [])}
                if conds.get("Established") != "True":
                    pending.append(n)
            return pending

        wait_for(observe, lambda p: not p, timeout=timeout, what="CRDs to be established",
                 interval=0.2)


# --- the cluster ------------------------------------------------------------------

class KubeCluster:
    """etcd 3.6 + kube-apiserver (see the module docstring)."""

    USERS = ("admin", "holdfast")

    def __init__(self, procs: ProcessSet, work: Path, binaries: KubeBinaries, *,
                 etcd: Optional[EtcdCluster] = None, etcd_prefix: str = "/registry",
                 host: str = "127.0.0.1", port: Optional[int] = None,
                 name: str = "kube", extra_args: Sequence[str] = ()):
        self._procs = procs
        self.work = Path(work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.binaries = binaries
        self.name = name
        self.host = host
        self.port = port or free_ports(1)[0]
        self.etcd_prefix = etcd_prefix
        self.extra_args = list(extra_args)
        self._own_etcd = etcd is None
        self.etcd = etcd or EtcdCluster(procs, self.work / "etcd", size=1, name=f"{name}-etcd",
                                        binary=str(binaries.etcd))
        self.apiserver: Optional[ManagedProcess] = None
        # Exits the test caused (kill): not checked at close.
        self._expected_exit: set[int] = set()
        self._stopped: list[tuple[str, int, Sequence[int]]] = []
        self._proxies = []
        self._make_credentials()
        self.admin = self.client("admin")
        self.holdfast = self.client("holdfast")

    # -- credentials --

    def _make_credentials(self) -> None:
        d = self.work / "pki"
        ca = TestCa(d / "ca", f"{self.name}-ca")
        self.ca_file = ca.cert_file
        self.serving = ca.issue("apiserver", ip=self.host)
        self.sa_key = d / "sa.key"
        self.sa_pub = d / "sa.pub"
        _openssl("genrsa", "-out", self.sa_key, "2048", cwd=d)
        _openssl("rsa", "-in", self.sa_key, "-pubout", "-out", self.sa_pub, cwd=d)
        self.tokens = {u: secrets.token_hex(16) for u in self.USERS}
        self.token_file = d / "tokens.csv"
        rows = [f'{self.tokens["admin"]},admin,uid-admin,"system:masters"',
                f'{self.tokens["holdfast"]},{HOLDFAST_USER},uid-holdfast,'
                f'"{",".join(HOLDFAST_GROUPS)}"']
        self.token_file.write_text("\n".join(rows) + "\n")
        os.chmod(self.token_file, 0o600)

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"

    def client(self, user: str, server: Optional[str] = None) -> KubeClient:
        return KubeClient(server or self.url, self.ca_file, self.tokens[user], name=user)

    def kubeconfig(self, user: str, server: Optional[str] = None) -> Path:
        """A kubeconfig file for `user` (admin, holdfast): one cluster, one
        context (current), the CA inline as certificate-authority-data and
        the user's bearer token. `server`: another address than the API
        server's own (e.g. "127.0.0.1:PORT" of a FaultProxy)."""
        server = server or self.url
        if "://" not in server:
            server = "https://" + server
        tag = "" if server == self.url else "-" + server.rsplit(":", 1)[-1]
        path = self.work / f"kubeconfig-{user}{tag}"
        config = {
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": self.name, "cluster": {
                "server": server,
                "certificate-authority-data":
                    base64.b64encode(self.ca_file.read_bytes()).decode()}}],
            "users": [{"name": user, "user": {"token": self.tokens[user]}}],
            "contexts": [{"name": f"{user}@{self.name}",
                          "context": {"cluster": self.name, "user": user,
                                      "namespace": "default"}}],
            "current-context": f"{user}@{self.name}",
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        os.chmod(path, 0o600)
        return path

    # -- lifecycle --

    def apiserver_argv(self) -> list:
        return [
            self.binaries.apiserver,
            f"--etcd-servers={','.join('http://' + e for e in self.etcd.endpoints)}",
            f"--etcd-prefix={self.etcd_prefix}",
            f"--bind-address={self.host}",
            f"--advertise-address={self.host}",
            f"--secure-port={self.port}",
            f"--tls-cert-file={self.serving.cert_file}",
            f"--tls-private-key-file={self.serving.key_file}",
            f"--cert-dir={self.work / 'apiserver-certs'}",
            f"--token-auth-file={self.token_file}",
            "--authorization-mode=RBAC",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--service-account-key-file={self.sa_pub}",
            f"--service-account-signing-key-file={self.sa_key}",
            "--service-cluster-ip-range=10.96.0.0/16",
            # No kubelets: nothing would reconcile the kubernetes Service's
            # endpoints to this address.
            "--endpoint-reconciler-type=none",
            # Reach webhooks (and aggregated APIs) named by a Service through
            # the Service's EndpointSlices, never through DNS: by default the
            # API server dials SERVICE.NAMESPACE.svc, which the machine's
            # resolver may send off the machine. Without endpoints the call
            # fails at once, here.
            "--enable-aggregator-routing=true",
            "--profiling=false",
            "--v=1",
            *self.extra_args,
        ]

    def start(self) -> "KubeCluster":
        """Starts etcd (unless given one) and the API server; returns once
        the API server is ready and the `default` namespace exists."""
        t0 = time.monotonic()
        if self._own_etcd:
            self.etcd.start()
        self.start_apiserver()
        self.start_seconds = time.monotonic() - t0
        return self

    def start_apiserver(self) -> None:
        """Starts (or starts again) the API server alone, on the same port,
        certificates, tokens and etcd prefix; waits until it is ready."""
        assert self.apiserver is None or not self.apiserver.running(), "already running"
        self.apiserver = self._procs.start(f"{self.name}-apiserver", self.apiserver_argv(),
                                           env=environ_without_grpc())
        self.wait_ready()

    def wait_ready(self, timeout: float = APISERVER_START_TIMEOUT) -> None:
        """Waits for /readyz to answer 200 and for the `default` namespace
        (made by the API server's own bootstrap controller after start)."""
        proc = self.apiserver

        def observe():
            if not proc.running():
                raise AssertionError(f"kube-apiserver exited with {proc.proc.returncode}:\n"
                                     f"{proc.log_tail(60)}")
            try:
                r = self.admin.request("GET", "/readyz", timeout=5)
                if r.status != 200:
                    return f"readyz {r.status}: {r.text()[-300:]}"
                r = self.admin.request("GET", "/api/v1/namespaces/default", timeout=5)
                return "ready" if r.status == 200 else f"namespace default: {r.status}"
            except (OSError, http.client.HTTPException) as e:
                return f"{type(e).__name__}: {e}"

        wait_for(observe, lambda s: s == "ready", timeout=timeout,
                 what=f"kube-apiserver at {self.url} to be ready", interval=0.25)

    def wait_writable(self, timeout: float = APISERVER_START_TIMEOUT) -> None:
        """Waits until a write of a Lease (`hf-write-probe` in `default`)
        succeeds within the API server's own 1 s request timeout. /readyz
        answers as soon as the API server reaches its etcd again, and its
        storage comes back per resource: after a 112 s etcd outage
        (docs/chaos-results.md, seed 45) ConfigMaps took writes at once and
        Leases only 47 s later. Leases are what holdfast elects on, so the
        store is back for a client once a Lease write goes through (as
        EtcdCluster.wait_writable waits for a write to etcd)."""
        path = "/apis/coordination.k8s.io/v1/namespaces/default/leases"

        def attempt():
            holder = f"probe-{time.time():.6f}"
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": "hf-write-probe"}, "spec": {"holderIdentity": holder}}
            try:
                r = self.admin.request("POST", path, body, params={"timeout": "1s"}, timeout=2)
                if r.status == 409:
                    r = self.admin.request("PATCH", f"{path}/hf-write-probe",
                                           {"spec": {"holderIdentity": holder}},
                                           content_type="application/merge-patch+json",
                                           params={"timeout": "1s"}, timeout=2)
                return "written" if r.status in (200, 201) else f"HTTP {r.status}: {r.text()[-300:]}"
            except (OSError, http.client.HTTPException) as e:
                return f"{type(e).__name__}: {e}"

        wait_for(attempt, lambda s: s == "written", timeout=timeout,
                 what=f"a Lease write to kube-apiserver at {self.url} to succeed", interval=0.2)

    def ready(self) -> bool:
        try:
            return self.admin.request("GET", "/readyz", timeout=5).status == 200
        except (OSError, http.client.HTTPException):
            return False

    def stop_apiserver(self, expect: Sequence[int] = APISERVER_CLEAN_EXITS) -> int:
        """SIGTERM (graceful shutdown) and wait; fails unless the exit code
        is in `expect`."""
        code = self.apiserver.stop(grace=30)
        assert code in expect, (f"kube-apiserver exited with {code} after SIGTERM:\n"
                                f"{self.apiserver.log_tail(40)}")
        self._expected_exit.add(self.apiserver.pid)
        return code

    def kill_apiserver(self, sig: int = signal.SIGKILL) -> int:
        """Sends `sig` (default SIGKILL: a crash) and waits for the exit."""
        self._expected_exit.add(self.apiserver.pid)
        return self.apiserver.kill(sig)

    def proxy(self):
        """A FaultProxy in front of the API server's port (TLS passes through:
        the certificate is for the same IP). Closed at close()."""
        from hf_etcd import FaultProxy
        p = FaultProxy(self.port, name=f"{self.name}-apiserver-proxy")
        self._proxies.append(p)
        return p

    def close(self) -> None:
        """Stops the API server, then etcd (if it is this cluster's own);
        fails if either exited on its own with an unexpected code or does not
        stop cleanly."""
        for p in self._proxies:
            p.close()
        problems = []
        if self.apiserver is not None:
            problems += self._stop(self.apiserver, APISERVER_CLEAN_EXITS)
        if self._own_etcd:
            for m in self.etcd.members:
                if m.proc is not None:
                    problems += self._stop(m.proc, ETCD_CLEAN_EXITS)
        if problems:
            raise AssertionError("\n".join(problems))

    def _stop(self, proc: ManagedProcess, clean: Sequence[int]) -> list[str]:
        exited_before = proc.proc.poll() is not None
        code = proc.stop(grace=30)
        if proc.pid in self._expected_exit:
            return []
        if exited_before:
            return [f"{proc.name} exited on its own with {code}:\n{proc.log_tail(30)}"]
        if code not in clean:
            return [f"{proc.name} exited with {code} after SIGTERM:\n{proc.log_tail(30)}"]
        return []

    # -- conveniences --

    def ensure_namespace(self, name: str) -> None:
        self.admin.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def service_account_token(self, namespace: str, name: str,
                              expiration_seconds: int = 3600) -> str:
        """A token of the ServiceAccount (which must exist) from the
        TokenRequest API, as a kubelet would mount it in a pod."""
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": expiration_seconds}}
        r = self.admin.call("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/"
                                    f"{name}/token", body)
        return r["status"]["token"]

    def version(self) -> dict:
        return self.admin.call("GET", "/version")

"""The moving parts of one integration test: holdfast, echo backends and
proxyless gRPC xDS clients, all children of one ProcessSet."""

import json
import os
import shutil
import signal
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from hf_admin import Admin
from hf_process import (ManagedProcess, ProcessSet, environ_without_grpc,
                        wait_for_file)
from hf_resources import ALL_TYPES, TARGET_HOST
from hf_wait import wait_for

SOURCE_DIR = Path(__file__).resolve().parent
REPO_ROOT = SOURCE_DIR.parent.parent

# Generous: two cores, possibly a compiler running beside the tests, and Node
# loads the Envoy protos at start-up.
START_TIMEOUT = 30.0
CONVERGE_TIMEOUT = 20.0


@dataclass
class Binaries:
    holdfast: Path
    echo_backend: Path
    xds_cpp_client: Path
    node: Optional[str]

    @staticmethod
    def from_env() -> "Binaries":
        build = Path(os.environ.get("HOLDFAST_BUILD_DIR", REPO_ROOT / "build"))
        return Binaries(
            holdfast=Path(os.environ.get("HOLDFAST_BIN", build / "src/app/holdfast")),
            echo_backend=build / "test/integration/echo_backend",
            xds_cpp_client=build / "test/integration/xds_cpp_client",
            node=shutil.which("node"))


class Holdfast:
    """The server under test. start() may be called again after kill() to
    restart on the same xDS port. `source_flag` says what `source_dir` holds:
    raw Envoy resources (--xds-dir) or gateway objects (--config-dir)."""

    def __init__(self, procs: ProcessSet, binary: Path, source_dir: Path, work: Path,
                 source_flag: str = "--xds-dir"):
        assert source_flag in ("--xds-dir", "--config-dir"), source_flag
        self._procs = procs
        self._binary = binary
        self._source_dir = source_dir
        self._source_flag = source_flag
        self._ports_file = work / "holdfast-ports.json"
        self._state_dir = work / "holdfast-state"
        self.proc: Optional[ManagedProcess] = None
        self.xds_port: Optional[int] = None
        self.admin: Optional[Admin] = None

    def start(self, xds_port: int = 0, *, wrapper: Sequence[str] = (),
              extra_args: Sequence[str] = ()) -> None:
        """`wrapper` runs before the binary (e.g. prlimit ... --), which it
        must exec; `extra_args` go after the usual flags."""
        assert self.proc is None or not self.proc.running(), "holdfast already running"
        self._ports_file.unlink(missing_ok=True)
        self.proc = self._procs.start("holdfast", [
            *wrapper, self._binary, "serve",
            self._source_flag, self._source_dir,
            "--xds-listen", f"127.0.0.1:{xds_port}",
            "--admin-listen", "127.0.0.1:0",
            "--ports-file", self._ports_file,
            "--state-dir", self._state_dir,
            *extra_args,
        ], env=environ_without_grpc(), check_exit=True)
        ports = json.loads(wait_for_file(self._ports_file, self.proc, START_TIMEOUT))
        self.xds_port = int(ports["xds"])
        if xds_port:
            assert self.xds_port == xds_port, f"asked for xDS port {xds_port}, got {ports}"
        self.admin = Admin(int(ports["admin"]))

    def wait_ready(self) -> None:
        wait_for(lambda: self.admin.get("/readyz")[0], lambda s: s == 200,
                 timeout=START_TIMEOUT, what="holdfast /readyz to return 200")

    def kill(self) -> None:
        """SIGKILL: no goodbye to connected clients."""
        self.proc.kill(signal.SIGKILL)


class Backend:
    def __init__(self, procs: ProcessSet, binary: Path, name: str, work: Path):
        port_file = work / f"backend-{name}.port"
        self.name = name
        self.proc = procs.start(f"backend-{name}", [binary, "--name", name,
                                                    "--port-file", port_file])
        self.port = int(wait_for_file(port_file, self.proc, START_TIMEOUT))


class XdsClient:
    """A proxyless gRPC client process printing one line per RPC:
    `ok <backend>` or `error <code> <message>`.

    `headers` are sent as request metadata with every RPC (what xDS route
    header matchers see); `count` makes the client exit after that many RPCs
    (0: forever). `node_id` and `channel_creds` (the bootstrap's, e.g. grpc-go's
    `tls` with certificate files) default to a unique id and plain text;
    `node_metadata` is the bootstrap node's metadata."""

    KINDS = ("cpp", "node", "go")

    def __init__(self, procs: ProcessSet, binaries: Binaries, kind: str,
                 xds_port: int, work: Path, interval_ms: int = 100,
                 go_client: Optional[Path] = None, *, target_host: str = TARGET_HOST,
                 headers: Sequence[tuple[str, str]] = (), count: int = 0,
                 deadline_ms: int = 1000, node_id: Optional[str] = None,
                 channel_creds: Optional[list] = None, node_metadata: Optional[dict] = None):
        self.kind = kind
        self.node_id = node_id or f"{kind}-{uuid.uuid4().hex[:12]}"
        bootstrap = work / f"bootstrap-{uuid.uuid4().hex[:12]}.json"
        bootstrap.write_text(json.dumps({
            "xds_servers": [{
                "server_uri": f"127.0.0.1:{xds_port}",
                "channel_creds": channel_creds or [{"type": "insecure"}],
                "server_features": ["xds_v3"],
            }],
            # grpc-js-xds 1.14 rejects a bootstrap whose node has no locality.
            "node": {"id": self.node_id, "cluster": "test",
                     "locality": {"region": "test", "zone": "test-a"},
                     **({"metadata": node_metadata} if node_metadata else {})},
        }))
        env = environ_without_grpc()
        env["GRPC_XDS_BOOTSTRAP"] = str(bootstrap)
        flags = ["--target", f"xds:///{target_host}", "--interval-ms", str(interval_ms),
                 "--deadline-ms", str(deadline_ms)]
        if count:
            flags += ["--count", str(count)]
        for name, value in headers:
            flags += ["--header", f"{name}={value}"]
        if kind == "cpp":
            argv = [binaries.xds_cpp_client, *flags]
        elif kind == "node":
            assert binaries.node, "node is not on PATH"
            argv = [binaries.node, SOURCE_DIR / "xds_node_client.js", *flags]
        elif kind == "go":
            assert go_client, "the grpc-go client was not built"
            argv = [go_client, *flags]
        else:
            raise ValueError(f"unknown client kind {kind}")
        self.proc = procs.start(f"client-{self.node_id.replace('/', '_')}", argv, env=env,
                                capture_lines=True)

    def mark(self) -> int:
        """Index of the next output line; pass to lines()/wait_* as `since`."""
        return self.proc.line_count()

    def lines(self, since: int = 0) -> list[str]:
        return self.proc.lines(since)

    def wait_lines(self, count: int, since: int = 0, timeout: float = CONVERGE_TIMEOUT,
                   guard: Optional[Callable[[], None]] = None) -> list[str]:
        """The first `count` lines printed after `since`; fails early if the
        client exits without printing them, or when `guard` (called on every
        poll) raises."""
        def observe():
            if guard is not None:
                guard()
            # Completeness first: read after it, the lines are final; read
            # before it, the process may finish printing in between.
            complete = self.proc.output_complete()
            lines = self.lines(since)
            if len(lines) < count and complete:
                raise AssertionError(
                    f"client {self.node_id} exited with {self.proc.proc.returncode} after "
                    f"{len(lines)} of {count} RPC results: {lines!r}")
            return lines

        lines = wait_for(observe, lambda ls: len(ls) >= count,
                         timeout=timeout, what=f"{count} RPC results from {self.node_id}")
        return lines[:count]

    def wait_serving(self, backend: str, consecutive: int = 5, since: int = 0,
                     timeout: float = CONVERGE_TIMEOUT,
                     guard: Optional[Callable[[], None]] = None) -> None:
        """Waits until the last `consecutive` RPCs (after `since`) all reached
        `backend`; fails early when `guard` (called on every poll) raises."""
        want = f"ok {backend}"

        def tail():
            if guard is not None:
                guard()
            assert self.proc.running(), (
                f"client {self.node_id} exited with {self.proc.proc.returncode}")
            return self.lines(since)[-consecutive:]

        wait_for(tail, lambda ls: len(ls) == consecutive and all(l == want for l in ls),
                 timeout=timeout,
                 what=f"{consecutive} consecutive '{want}' from {self.node_id}")


def proxy_type_state(admin: Admin, node_id: str, type_url: str) -> Optional[dict]:
    proxy = admin.proxy(node_id)
    if proxy is None:
        return None
    return (proxy.get("types") or {}).get(type_url)


def assert_no_nack(admin: Admin, node_id: str) -> None:
    """Fails with the proxy's own words if `node_id` rejected any resource
    type (passes while it is not connected)."""
    proxy = admin.proxy(node_id)
    if proxy is None:
        return
    nacks = {t: s["nack"] for t, s in (proxy.get("types") or {}).items() if s.get("nack")}
    assert not nacks, f"client {node_id} NACKed what holdfast sent: {nacks!r}"


def fully_acked(proxy: Optional[dict], types=ALL_TYPES) -> bool:
    """Every type has been sent and its last sent version ACKed, no NACK."""
    if proxy is None:
        return False
    for t in types:
        state = (proxy.get("types") or {}).get(t)
        if not state or not state.get("last_sent_version"):
            return False
        if state.get("acked_version") != state["last_sent_version"] or state.get("nack"):
            return False
    return True

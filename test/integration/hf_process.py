"""Child processes of a test: started in their own session, logged to files,
always stopped at teardown (SIGTERM, then SIGKILL). A process started with
check_exit (the server under test) must also end well: stopped with SIGTERM
it exits 0 within the grace period, and it never exits unless the test ended
it; otherwise teardown fails (ProcessSet.close_all)."""

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Optional, Sequence


class ManagedProcess:
    """One child process. stderr goes to a log file; stdout either to the same
    file or, with capture_lines, into an in-memory list of lines (each also
    appended to the log) that tests can poll. With check_exit, how it ended
    is judged (exit_problems)."""

    def __init__(self, name: str, argv: Sequence[str], *, log_dir: Path,
                 env: Optional[dict] = None, cwd: Optional[Path] = None,
                 capture_lines: bool = False, check_exit: bool = False):
        self.name = name
        self.check_exit = check_exit
        self.exit_problems: list[str] = []
        self._ended_by_test = False
        self.argv = [str(a) for a in argv]
        self.log_path = Path(log_dir) / f"{name}.log"
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._log = open(self.log_path, "ab", buffering=0)
        self._log.write(f"$ {' '.join(self.argv)}\n".encode())
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if capture_lines else self._log,
            stderr=self._log,
            env=env, cwd=cwd,
            # Own session: a signal sent to the test runner's process group
            # never reaches children, and children never outlive teardown.
            start_new_session=True)
        self._reader = None
        if capture_lines:
            self._reader = threading.Thread(target=self._read_stdout, daemon=True,
                                            name=f"{name}-stdout")
            self._reader.start()

    def _read_stdout(self) -> None:
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            with self._lock:
                self._lines.append(line)
            try:
                self._log.write(f"[stdout] {line}\n".encode())
            except ValueError:  # log closed at teardown
                return

    @property
    def pid(self) -> int:
        return self.proc.pid

    def lines(self, start: int = 0) -> list[str]:
        """Captured stdout lines from index `start`."""
        with self._lock:
            return self._lines[start:]

    def line_count(self) -> int:
        with self._lock:
            return len(self._lines)

    def running(self) -> bool:
        return self.proc.poll() is None

    def output_complete(self) -> bool:
        """The process has exited and all its stdout has been read."""
        return self.proc.poll() is not None and (self._reader is None
                                                 or not self._reader.is_alive())

    def kill(self, sig: int = signal.SIGKILL, wait: float = 10.0) -> int:
        """Sends `sig` to this process only and waits for it to exit: the
        test ends it, whatever the exit code."""
        if self.proc.poll() is None:
            self._ended_by_test = True
            self.proc.send_signal(sig)
        else:
            self._note_own_exit()
        return self.proc.wait(timeout=wait)

    def stop(self, grace: float = 5.0) -> Optional[int]:
        """SIGTERM, then SIGKILL after `grace` seconds. Returns the exit code;
        with check_exit, anything but exit 0 within the grace is a problem."""
        if self.proc.poll() is None:
            self._ended_by_test = True
            self.proc.send_signal(signal.SIGTERM)
            try:
                code = self.proc.wait(timeout=grace)
                if code != 0:
                    self._problem(f"exited with {code} after SIGTERM")
            except subprocess.TimeoutExpired:
                self._problem(f"still running {grace:g}s after SIGTERM (killed)")
                self.proc.kill()
                self.proc.wait(timeout=grace)
        else:
            self._note_own_exit()
        if self._reader is not None:
            self._reader.join(timeout=grace)
        return self.proc.returncode

    def _note_own_exit(self) -> None:
        if not self._ended_by_test:
            self._ended_by_test = True  # reported once
            self._problem(f"exited on its own with {self.proc.returncode}")

    def _problem(self, what: str) -> None:
        if self.check_exit:
            self.exit_problems.append(f"{self.name} (pid {self.pid}) {what}")

    def close(self) -> None:
        self.stop()
        self._log.close()

    def log_size(self) -> int:
        """Bytes in the log so far: a mark for log_lines_since()."""
        try:
            return self.log_path.stat().st_size
        except FileNotFoundError:
            return 0

    def log_lines_since(self, mark: int) -> list[str]:
        """Lines written to the log after `mark` (a log_size())."""
        with open(self.log_path, "rb") as f:
            f.seek(mark)
            return f.read().decode(errors="replace").splitlines()

    def log_tail(self, max_lines: int = 80) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as e:
            return f"<cannot read {self.log_path}: {e}>"
        # Collapse runs of identical lines (a client printing the same error
        # every 100 ms) so the tail shows history, not one repeated line.
        collapsed: list[str] = []
        run = 0
        for line in text.splitlines():
            if collapsed and line == collapsed[-1]:
                run += 1
                continue
            if run:
                collapsed.append(f"    ... previous line repeated {run} more times")
                run = 0
            collapsed.append(line)
        if run:
            collapsed.append(f"    ... previous line repeated {run} more times")
        return "\n".join(collapsed[-max_lines:])


class ProcessSet:
    """Owns every child process of one test; closes them in reverse order."""

    def __init__(self, log_dir: Path):
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.processes: list[ManagedProcess] = []

    def start(self, name: str, argv: Sequence[str], **kwargs) -> ManagedProcess:
        unique = name
        n = 1
        while any(p.name == unique for p in self.processes):
            n += 1
            unique = f"{name}.{n}"
        proc = ManagedProcess(unique, argv, log_dir=self.log_dir, **kwargs)
        self.processes.append(proc)
        return proc

    def close_all(self) -> None:
        """Stops every process (newest first), then fails if any process
        started with check_exit ended badly (each with its log tail)."""
        for proc in reversed(self.processes):
            proc.close()
        bad = [p for p in self.processes if p.exit_problems]
        if bad:
            raise AssertionError("\n\n".join(
                "; ".join(p.exit_problems) + f"\n{p.log_tail(40)}" for p in bad))


def wait_for_file(path: Path, proc: ManagedProcess, timeout: float) -> str:
    """Waits until `path` exists (written atomically by `proc`); fails early
    if the process exits first."""
    deadline = time.monotonic() + timeout
    while True:
        if path.exists():
            return path.read_text()
        if not proc.running():
            raise AssertionError(
                f"{proc.name} exited with {proc.proc.returncode} before writing "
                f"{path}:\n{proc.log_tail()}")
        if time.monotonic() >= deadline:
            raise AssertionError(f"{proc.name} did not write {path} within {timeout}s:\n"
                                 f"{proc.log_tail()}")
        time.sleep(0.02)


def free_port() -> int:
    """A port that was free a moment ago on 127.0.0.1 (the kernel picks it)."""
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environ_without_grpc() -> dict:
    """The runner's environment minus gRPC variables that would change client
    behaviour (a stray GRPC_XDS_BOOTSTRAP would point clients elsewhere)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GRPC_") and k not in ("http_proxy", "https_proxy",
                                                      "HTTP_PROXY", "HTTPS_PROXY",
                                                      "grpc_proxy", "no_grpc_proxy")}
    return env

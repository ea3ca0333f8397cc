"""Start and stop the reference Python agent-server (openhands-agent-server 1.58.2).

Shared by ``gen_fixtures.py`` and ``run.sh --reference``. Run with the compat
venv's interpreter (the server is imported from it).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

SESSION_KEY = "compat-key"
SECRET_KEY = "compat-fixture-secret-key-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def reference_env(run_dir: Path, session_key: str = SESSION_KEY, secret_key: str = SECRET_KEY) -> dict:
    """The offline, Docker-free environment the reference server needs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    env.pop("SESSION_API_KEY", None)
    env.update(
        {
            "OH_SESSION_API_KEYS_0": session_key,
            "OH_SECRET_KEY": secret_key,
            "OH_ENABLE_VSCODE": "0",
            "OH_PRELOAD_TOOLS": "0",
            "OH_ENABLE_BROWSER": "0",
            "OH_LEASE_TTL_SECONDS": "0",
            "OH_CONVERSATIONS_PATH": str(run_dir / "conversations"),
            "OH_WORKSPACE_PATH": str(run_dir / "project"),
            "OH_BASH_EVENTS_DIR": str(run_dir / "bash_events"),
            "OH_PERSISTENCE_DIR": str(run_dir / "persistence"),
            "OPENHANDS_AGENT_SERVER_CONFIG_PATH": str(run_dir / "openhands_agent_server_config.json"),
            "TMUX_TMPDIR": str(run_dir / "tmux"),
            "DO_NOT_TRACK": "1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_TELEMETRY": "False",
            "HF_HUB_OFFLINE": "1",
            "ALLOW_SHORT_CONTEXT_WINDOWS": "1",
            "COLUMNS": "200",
            "OPENHANDS_SUPPRESS_BANNER": "1",
        }
    )
    return env


class ReferenceServer:
    """``python -m openhands.agent_server`` in a private run directory."""

    def __init__(self, run_dir: Path, port: int | None = None, log_path: Path | None = None):
        self.run_dir = run_dir
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path or run_dir / "server.log"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 180.0) -> float:
        for sub in ("conversations", "project", "bash_events", "persistence", "tmux"):
            (self.run_dir / sub).mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "wb")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "openhands.agent_server", "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=self.run_dir,
            env=reference_env(self.run_dir),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"reference server exited with {self.proc.returncode}; see {self.log_path}")
            try:
                if requests.get(f"{self.url}/ready", timeout=2).status_code == 200:
                    return time.monotonic() - t0
            except requests.RequestException:
                pass
            time.sleep(0.3)
        self.stop()
        raise TimeoutError(f"reference server not ready after {timeout}s; see {self.log_path}")

    def stop(self) -> None:
        """Stop the server, then the tmux servers its terminals left behind."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        # Terminal sessions run in tmux servers that daemonize out of the
        # server's process group; their sockets live under our TMUX_TMPDIR.
        sock_dir = self.run_dir / "tmux" / f"tmux-{os.getuid()}"
        for sock in sock_dir.glob("*") if sock_dir.is_dir() else []:
            subprocess.run(["tmux", "-S", str(sock), "kill-server"], capture_output=True, timeout=10)


def main() -> int:
    """Run the reference server in the foreground until SIGTERM/SIGINT (used by run.sh --reference)."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--run-dir", required=True, type=Path)
    ap.add_argument("--port", type=int, required=True)
    args = ap.parse_args()
    server = ReferenceServer(args.run_dir.resolve(), port=args.port)
    stopping = []

    def on_signal(signum, _frame):
        stopping.append(signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        took = server.start()
        print(f"reference server ready on {server.url} after {took:.1f}s (log {server.log_path})", flush=True)
        while not stopping and server.proc is not None and server.proc.poll() is None:
            time.sleep(0.2)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

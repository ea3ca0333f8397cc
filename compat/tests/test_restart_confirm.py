"""Restart-then-confirm through the official Python client.

The client starts a conversation with ``AlwaysConfirm`` on a server of its
own (the agent-server binary, started here on private directories), the
action waits for confirmation, the server is stopped and started again on
the same directories, and the client, attached again by id, confirms: the
pending action runs and the agent finishes.

Needs ``OH_COMPAT_SERVER_BIN`` (set by ``compat/run.sh`` for our server).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
import requests
from pydantic import SecretStr

from openhands.sdk import LLM, Agent, Conversation, Tool, Workspace
from openhands.sdk.conversation.state import ConversationExecutionStatus as Status
from openhands.sdk.event import ActionEvent, ObservationEvent
from openhands.sdk.security.confirmation_policy import AlwaysConfirm

import openhands.tools.file_editor  # noqa: F401
import openhands.tools.task_tracker  # noqa: F401
import openhands.tools.terminal  # noqa: F401
from openhands.tools.terminal import TerminalAction

from conftest import MOCK_API_KEY, MOCK_MODEL, wait_until

RUN_TIMEOUT = 120.0
KEY = "restart-key"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OwnServer:
    """One agent-server process on fixed directories; can be restarted."""

    def __init__(self, binary: str, root: Path):
        self.binary = binary
        self.root = root
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        for d in ("conversations", "bash_events", "persistence", "tmux"):
            (root / d).mkdir(parents=True, exist_ok=True)

    def start(self) -> None:
        env = dict(os.environ)
        env.update(
            OH_SESSION_API_KEYS_0=KEY,
            OH_SECRET_KEY="restart-secret-key-0123456789",
            OH_ENABLE_VSCODE="0",
            OH_PRELOAD_TOOLS="0",
            OH_ENABLE_BROWSER="0",
            OH_LEASE_TTL_SECONDS="0",
            OH_CONVERSATIONS_PATH=str(self.root / "conversations"),
            OH_WORKSPACE_PATH=str(self.root),
            OH_BASH_EVENTS_DIR=str(self.root / "bash_events"),
            OH_PERSISTENCE_DIR=str(self.root / "persistence"),
            OPENHANDS_AGENT_SERVER_CONFIG_PATH=str(self.root / "server_config.json"),
            TMUX_TMPDIR=str(self.root / "tmux"),
        )
        log = open(self.root / "server.log", "ab")
        self.proc = subprocess.Popen(
            [self.binary, "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=self.root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )

        def ready() -> bool:
            assert self.proc is not None and self.proc.poll() is None, "the server exited"
            return requests.get(f"{self.url}/ready", timeout=2).status_code == 200

        wait_until(ready, timeout=60, what="server ready")

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None


@pytest.fixture
def own_server(tmp_path: Path):
    binary = os.environ.get("OH_COMPAT_SERVER_BIN", "")
    if not binary:
        pytest.skip("OH_COMPAT_SERVER_BIN is not set (run through compat/run.sh against our server)")
    server = OwnServer(binary, tmp_path / "server")
    server.start()
    yield server
    server.stop()


def _conversation(server: OwnServer, mock_url: str, workdir: Path, **kwargs):
    llm = LLM(
        model=MOCK_MODEL,
        base_url=f"{mock_url}/v1",
        api_key=SecretStr(MOCK_API_KEY),
        api_mode="chat",
        num_retries=0,
        usage_id="default",
    )
    agent = Agent(
        llm=llm,
        tools=[Tool(name="terminal"), Tool(name="file_editor"), Tool(name="task_tracker")],
    )
    workspace = Workspace(host=server.url, api_key=KEY, working_dir=str(workdir))
    events: list = []
    conv = Conversation(
        agent=agent,
        workspace=workspace,
        callbacks=[events.append],
        visualizer=None,
        delete_on_close=False,
        **kwargs,
    )
    return conv, events


def _status(conv) -> Status:
    return Status(conv.state.refresh_from_server()["execution_status"])


def test_pending_action_survives_a_restart_and_is_confirmed_afterwards(own_server, mock_url, workdir: Path):
    conv, _ = _conversation(own_server, mock_url, workdir)
    conv.set_confirmation_policy(AlwaysConfirm())
    conv.send_message("[[mock:script:confirm]] Write confirmed.txt, then finish.")
    conv.run(timeout=RUN_TIMEOUT)
    assert _status(conv) == Status.WAITING_FOR_CONFIRMATION
    pending = [
        e for e in conv.state.events if isinstance(e, ActionEvent) and isinstance(e.action, TerminalAction)
    ]
    assert len(pending) == 1
    assert not (workdir / "confirmed.txt").exists()
    conversation_id = conv.id
    conv.close()

    own_server.stop()
    own_server.start()

    again, log = _conversation(own_server, mock_url, workdir, conversation_id=conversation_id)
    assert again.id == conversation_id
    assert _status(again) == Status.WAITING_FOR_CONFIRMATION
    assert isinstance(again.state.confirmation_policy, AlwaysConfirm)
    assert not any(isinstance(e, ObservationEvent) for e in again.state.events)

    # Confirming = running again: the pending action runs, then the agent finishes.
    again.run(timeout=RUN_TIMEOUT)
    wait_until(lambda: _status(again) == Status.FINISHED, timeout=30, what="status finished")
    assert (workdir / "confirmed.txt").read_text() == "confirmed\n"
    observations = wait_until(
        lambda: [e for e in again.state.events if isinstance(e, ObservationEvent) and e.action_id == pending[0].id],
        timeout=20,
        what="the pending action's observation",
    )
    assert len(observations) == 1
    again.close()

"""The official Python client (openhands-sdk 1.58.2) creates a conversation
whose agent has an ``mcp_config`` (the reference MCP server
``@modelcontextprotocol/server-everything`` over stdio, named by
``OPENHANDS_TEST_MCP_EVERYTHING``, which scripts/test.sh installs); the
scripted model calls the server's ``echo`` tool and the client reads the
reference's MCP events back. The ``echo`` tool the model was offered is
compared with the one the reference server offered
(``recorded/mcp_echo_tool.json``, written by ``compat/run.sh --reference``
with ``OH_COMPAT_RECORD_MCP=1``): same name, description and parameters,
except the wording of our own ``summary``/``security_risk`` descriptions.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from pydantic import SecretStr

from openhands.sdk import LLM, Agent, Conversation, Workspace
from openhands.sdk.conversation.state import ConversationExecutionStatus as Status
from openhands.sdk.event import ActionEvent, ObservationEvent, SystemPromptEvent
from openhands.sdk.mcp.definition import MCPToolAction, MCPToolObservation

from conftest import MOCK_API_KEY, MOCK_MODEL

EVERYTHING = os.environ.get("OPENHANDS_TEST_MCP_EVERYTHING", "")
RECORDED_TOOL = Path(__file__).resolve().parent.parent / "recorded" / "mcp_echo_tool.json"


def offered_echo_tool(mock_url: str) -> dict:
    """The ``echo`` tool of the latest completion request that offered it."""
    import requests

    log = requests.get(f"{mock_url}/_mock/requests", timeout=10).json()
    for entry in reversed(log):
        body = entry.get("body") or {}
        for tool in body.get("tools") or []:
            fn = tool.get("function", tool)
            if fn.get("name") == "echo":
                return fn
    raise AssertionError("no completion request offered the echo tool")


def comparable(fn: dict) -> dict:
    """The tool without the wording of the descriptions we write ourselves."""
    fn = json.loads(json.dumps(fn))
    props = fn.get("parameters", {}).get("properties", {})
    for own in ("summary", "security_risk"):
        if own in props:
            props[own].pop("description", None)
    return fn


@pytest.mark.skipif(
    not os.path.isfile(EVERYTHING),
    reason="OPENHANDS_TEST_MCP_EVERYTHING does not name server-everything (scripts/test.sh installs it)",
)
def test_official_client_runs_an_mcp_tool(server_url, session_key, mock_url, workdir, cleanup_conversations):
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
        tools=[],
        mcp_config={"everything": {"command": "node", "args": [EVERYTHING, "stdio"], "env": {"COMPAT_MCP": "1"}}},
    )
    events: list = []
    lock = threading.Lock()

    def collect(e):
        with lock:
            events.append(e)

    workspace = Workspace(host=server_url, api_key=session_key, working_dir=str(workdir))
    conv = Conversation(agent=agent, workspace=workspace, callbacks=[collect], visualizer=None, delete_on_close=True)
    cleanup_conversations.append(str(conv.id))
    try:
        conv.send_message("[[mock:script:mcp]] echo compat")
        conv.run()
        assert Status(conv.state.refresh_from_server()["execution_status"]) == Status.FINISHED
        stored = list(conv.state.events)
        prompt = next(e for e in stored if isinstance(e, SystemPromptEvent))
        names = [t.name for t in prompt.tools]
        assert "echo" in names, names
        action = next(e for e in stored if isinstance(e, ActionEvent) and e.tool_name == "echo")
        assert isinstance(action.action, MCPToolAction)
        assert action.action.data == {"message": "compat"}
        obs = next(e for e in stored if isinstance(e, ObservationEvent) and e.tool_name == "echo")
        assert isinstance(obs.observation, MCPToolObservation)
        assert obs.observation.tool_name == "echo"
        assert not obs.observation.is_error
        texts = [c.text for c in obs.observation.content]
        assert texts == ["[Tool 'echo' executed.]", "Echo: compat"], texts

        offered = comparable(offered_echo_tool(mock_url))
        if os.environ.get("OH_COMPAT_RECORD_MCP") == "1":
            RECORDED_TOOL.write_text(json.dumps(offered, indent=2) + "\n")
        reference = json.loads(RECORDED_TOOL.read_text())
        assert offered == reference
    finally:
        conv.close()

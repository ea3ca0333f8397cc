"""The official Python client (openhands-sdk 1.58.2) creates a conversation
whose agent has an ``mcp_config`` (the reference MCP server
``@modelcontextprotocol/server-everything`` over stdio, named by
``OPENHANDS_TEST_MCP_EVERYTHING``, which scripts/test.sh installs); the
scripted model calls the server's ``echo`` tool and the client reads the
reference's MCP events back.
"""

from __future__ import annotations

import os
import threading

import pytest
from pydantic import SecretStr

from openhands.sdk import LLM, Agent, Conversation, Workspace
from openhands.sdk.conversation.state import ConversationExecutionStatus as Status
from openhands.sdk.event import ActionEvent, ObservationEvent, SystemPromptEvent
from openhands.sdk.mcp.definition import MCPToolAction, MCPToolObservation

from conftest import MOCK_API_KEY, MOCK_MODEL

EVERYTHING = os.environ.get("OPENHANDS_TEST_MCP_EVERYTHING", "")


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
    finally:
        conv.close()

"""Skills and hooks through the official Python client, identical against the
reference server (``run.sh --reference``) and ours: a repository with
``AGENTS.md`` and a keyword skill, ``load_project_skills``, and a PreToolUse
hook that blocks one terminal command and lets the next one run.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from openhands.sdk import LLM, Agent, AgentContext, Conversation, Tool, Workspace
from openhands.sdk.conversation.state import ConversationExecutionStatus as Status
from openhands.sdk.event import HookExecutionEvent, MessageEvent, SystemPromptEvent, UserRejectObservation
from openhands.sdk.hooks import HookConfig, HookDefinition, HookMatcher

import openhands.tools.terminal  # noqa: F401

from conftest import MOCK_API_KEY, MOCK_MODEL
from test_sdk_client import RUN_TIMEOUT, EventLog

BLOCKER = "if grep -q blocked.txt; then echo 'blocked.txt is off limits' >&2; exit 2; fi"


def test_project_skills_triggers_and_a_blocking_hook(server_url, session_key, mock_url, workdir: Path, cleanup_conversations):
    (workdir / "AGENTS.md").write_text("Always run the linter before committing.\n")
    skills = workdir / ".agents" / "skills"
    skills.mkdir(parents=True)
    (skills / "encryption.md").write_text("---\ntriggers:\n- encrypt\n---\nUse the rot13 helper in tools/enc.sh.\n")

    llm = LLM(model=MOCK_MODEL, base_url=f"{mock_url}/v1", api_key=SecretStr(MOCK_API_KEY),
              api_mode="chat", num_retries=0, usage_id="default")
    agent = Agent(llm=llm, tools=[Tool(name="terminal")],
                  agent_context=AgentContext(load_project_skills=True))
    hooks = HookConfig(pre_tool_use=[HookMatcher(matcher="terminal", hooks=[HookDefinition(command=BLOCKER, timeout=10)])])
    workspace = Workspace(host=server_url, api_key=session_key, working_dir=str(workdir))
    log = EventLog()
    conv = Conversation(agent=agent, workspace=workspace, callbacks=[log], visualizer=None,
                        hook_config=hooks, delete_on_close=False)
    cleanup_conversations.append(str(conv.id))
    try:
        conv.send_message("[[mock:script:skills_hooks]] Please encrypt the notes.")
        conv.run(timeout=RUN_TIMEOUT)
        assert conv.state.execution_status == Status.FINISHED

        # The hook kept the first command from running; the second ran.
        assert not (workdir / "blocked.txt").exists()
        assert (workdir / "allowed.txt").exists()
        events = conv.state.events
        rejects = [e for e in events if isinstance(e, UserRejectObservation)]
        assert len(rejects) == 1
        assert rejects[0].rejection_source == "hook"
        assert "blocked.txt is off limits" in rejects[0].rejection_reason
        hook_runs = [e for e in events if isinstance(e, HookExecutionEvent)]
        assert [(h.hook_event_type, h.blocked, h.exit_code) for h in hook_runs] == [
            ("PreToolUse", True, 2),
            ("PreToolUse", False, 0),
        ]
        assert all(h.tool_name == "terminal" and h.action_id for h in hook_runs)

        # AGENTS.md is in the system prompt's repository context.
        prompt = next(e for e in events if isinstance(e, SystemPromptEvent))
        dynamic = prompt.dynamic_context.text if prompt.dynamic_context else ""
        assert "[BEGIN context from [agents]]\nAlways run the linter before committing.\n" in dynamic
        assert "<REPO_CONTEXT>" in dynamic

        # The keyword skill was attached to the user turn and recorded.
        user = next(e for e in events if isinstance(e, MessageEvent) and e.source == "user")
        assert user.activated_skills == ["encryption"]
        extra = "\n".join(c.text for c in user.extended_content)
        assert "<EXTRA_INFO>" in extra and "Use the rot13 helper in tools/enc.sh." in extra
        assert '"encrypt"' in extra
        assert conv.state.activated_knowledge_skills == ["encryption"]
    finally:
        conv.close()

"""Delegation and goal-directed runs through the official Python client,
identical against the reference server (``run.sh --reference``) and ours.

* The parent agent starts two sub-agent tasks (the task tool set) in one
  turn; each answer comes back as its task's observation and the parent
  finishes.
* The client's ``run_goal`` drives a remote conversation: the judge (a
  second LLM, served here by a small stub that answers with verdicts in
  turn) first finds the goal incomplete, the agent is re-prompted with what
  is missing, and the second audit completes the goal.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from pydantic import SecretStr

from openhands.sdk import LLM, Agent, Conversation, Tool, Workspace
from openhands.sdk.conversation.goal import run_goal
from openhands.sdk.conversation.state import ConversationExecutionStatus as Status
from openhands.sdk.event import ActionEvent, MessageEvent, ObservationEvent

import openhands.tools.task  # noqa: F401
import openhands.tools.terminal  # noqa: F401

from conftest import MOCK_API_KEY, MOCK_MODEL
from test_sdk_client import RUN_TIMEOUT, EventLog


def _llm(mock_url: str) -> LLM:
    return LLM(model=MOCK_MODEL, base_url=f"{mock_url}/v1", api_key=SecretStr(MOCK_API_KEY),
               api_mode="chat", num_retries=0, usage_id="default")


def _text(event) -> str:
    if isinstance(event, ObservationEvent):
        return "\n".join(getattr(c, "text", "") for c in event.observation.to_llm_content)
    return ""


def test_two_tasks_started_in_one_turn_both_answer_the_parent(
        server_url, session_key, mock_url, workdir: Path, cleanup_conversations):
    agent = Agent(llm=_llm(mock_url), tools=[Tool(name="task_tool_set"), Tool(name="terminal")])
    workspace = Workspace(host=server_url, api_key=session_key, working_dir=str(workdir))
    log = EventLog()
    conv = Conversation(agent=agent, workspace=workspace, callbacks=[log], visualizer=None,
                        delete_on_close=False)
    cleanup_conversations.append(str(conv.id))
    try:
        conv.send_message("[[mock:script:deleg_parent]] Ask two helpers.")
        conv.run(timeout=RUN_TIMEOUT)
        assert conv.state.execution_status == Status.FINISHED

        events = conv.state.events
        calls = [e for e in events if isinstance(e, ActionEvent) and e.tool_name == "task"]
        assert len(calls) == 2
        # One assistant turn started both tasks.
        assert calls[0].llm_response_id == calls[1].llm_response_id
        answers = {e.tool_call_id: _text(e) for e in events
                   if isinstance(e, ObservationEvent) and e.tool_name == "task"}
        assert len(answers) == 2
        by_call = [answers[c.tool_call_id] for c in calls]
        assert "alpha counted 3 files" in by_call[0]
        assert "beta read the readme" in by_call[1]
        final = [e for e in events if isinstance(e, ActionEvent) and e.tool_name == "finish"]
        assert final and final[-1].action.message == "both helpers answered"
    finally:
        conv.close()


class _Judge:
    """A chat-completions endpoint answering with the next scripted verdict."""

    def __init__(self, verdicts: list[dict]):
        self.verdicts = list(verdicts)
        self.requests: list[dict] = []
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                judge.requests.append(body)
                verdict = judge.verdicts.pop(0) if judge.verdicts else {"score": 0.0}
                answer = {
                    "id": f"judge-{len(judge.requests)}", "object": "chat.completion", "created": 0,
                    "model": body.get("model", "judge"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": json.dumps(verdict)}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_run_goal_reprompts_with_what_is_missing_until_the_judge_is_satisfied(
        server_url, session_key, mock_url, workdir: Path, cleanup_conversations):
    judge = _Judge([
        {"score": 0.3, "complete": False, "missing": "goal.txt has no content yet"},
        {"score": 1.0, "complete": True, "missing": ""},
    ])
    judge_llm = LLM(model="openai/judge", base_url=judge.url, api_key=SecretStr("judge-key"),
                    num_retries=0, usage_id="judge")
    agent = Agent(llm=_llm(mock_url), tools=[Tool(name="terminal")])
    workspace = Workspace(host=server_url, api_key=session_key, working_dir=str(workdir))
    conv = Conversation(agent=agent, workspace=workspace, visualizer=None, delete_on_close=False)
    cleanup_conversations.append(str(conv.id))
    try:
        outcome = run_goal(conv, "[[mock:script:goal_agent]] Write 'goal reached' into goal.txt.",
                           judge_llm, max_iterations=3)
        assert outcome.status == "complete"
        assert outcome.iterations == 2
        assert outcome.verdict.complete
        assert (workdir / "goal.txt").read_text().strip() == "goal reached"
        assert conv.state.execution_status == Status.FINISHED

        # The follow-up the agent got names what the judge found missing.
        users = [e for e in conv.state.events if isinstance(e, MessageEvent) and e.source == "user"]
        assert len(users) == 2
        followup = "\n".join(c.text for c in users[1].llm_message.content)
        assert "goal.txt has no content yet" in followup

        # Each audit saw the transcript of the run so far, never the system prompt.
        assert len(judge.requests) == 2
        second = "\n".join(m["content"] if isinstance(m["content"], str)
                           else "\n".join(p.get("text", "") for p in m["content"])
                           for m in judge.requests[1]["messages"])
        assert "goal reached" in second
    finally:
        conv.close()
        judge.close()

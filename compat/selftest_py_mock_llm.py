"""Self-test of py_mock_llm.py (no server needed).

Run: ``$COMPAT_VENV/bin/python -m pytest compat/selftest_py_mock_llm.py -q``
"""

from __future__ import annotations

import json

import openai
import pytest
import requests
from openai import OpenAI

import py_mock_llm

SCRIPT = {
    "scripts": {
        "default": [
            {"tool_calls": [{"name": "terminal", "arguments": {"command": "ls"}, "id": "call_a"}]},
            {"text": "All done.", "reasoning": "thinking", "usage": {"prompt_tokens": 7, "completion_tokens": 3}},
        ],
        "flaky": [{"error": {"status": 503, "message": "mock error 503", "retry_after": 2}, "fail_times": 1,
                   "text": "recovered"}],
        "broken": [{"raw_body": "{not json"}],
    },
    "toolless_reply": {"text": "A title"},
}
TOOLS = [{"type": "function", "function": {"name": "terminal", "parameters": {"type": "object", "properties": {}}}}]


@pytest.fixture(scope="module")
def mock():
    srv = py_mock_llm.start_in_thread(SCRIPT)
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


@pytest.fixture(scope="module")
def client(mock):
    return OpenAI(api_key="k", base_url=f"{mock}/v1", max_retries=0)


def test_chat_turns_by_position(client):
    r1 = client.chat.completions.create(model="m", tools=TOOLS, messages=[{"role": "user", "content": "go"}])
    call = r1.choices[0].message.tool_calls[0]
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == ("call_a", "terminal", {"command": "ls"})
    assert r1.choices[0].finish_reason == "tool_calls"
    history = [{"role": "user", "content": "go"},
               {"role": "assistant", "tool_calls": [call.model_dump()]},
               {"role": "tool", "tool_call_id": "call_a", "content": "x"}]
    r2 = client.chat.completions.create(model="m", tools=TOOLS, messages=history)
    assert r2.choices[0].message.content == "All done."
    assert r2.usage.prompt_tokens == 7 and r2.usage.total_tokens == 10
    history.append({"role": "assistant", "content": "All done."})
    r3 = client.chat.completions.create(model="m", tools=TOOLS, messages=history)
    assert r3.choices[0].message.content == "Script exhausted."


def test_toolless_and_stream(client):
    r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "title?"}])
    assert r.choices[0].message.content == "A title"
    history = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "x"}]
    chunks = list(client.chat.completions.create(model="m", tools=TOOLS, messages=history, stream=True,
                                                  stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "All done."
    assert chunks[-1].usage.completion_tokens == 3
    calls = list(client.chat.completions.create(model="m", tools=TOOLS, stream=True,
                                                 messages=[{"role": "user", "content": "go"}]))
    args = "".join(c.choices[0].delta.tool_calls[0].function.arguments or ""
                   for c in calls if c.choices and c.choices[0].delta.tool_calls)
    assert json.loads(args) == {"command": "ls"}


def test_marker_error_fail_times_and_raw(client, mock):
    msgs = [{"role": "user", "content": "[[mock:script:flaky]] please"}]
    with pytest.raises(openai.APIStatusError) as err:
        client.chat.completions.create(model="m", tools=TOOLS, messages=msgs, extra_body={"prompt_cache_key": "c1"})
    assert err.value.status_code == 503 and err.value.response.headers["retry-after"] == "2"
    r = client.chat.completions.create(model="m", tools=TOOLS, messages=msgs, extra_body={"prompt_cache_key": "c1"})
    assert r.choices[0].message.content == "recovered"
    raw = requests.post(f"{mock}/v1/chat/completions", timeout=10,
                        json={"tools": TOOLS, "messages": [{"role": "user", "content": "[[mock:script:broken]]"}]})
    assert raw.status_code == 200 and raw.text == "{not json"


def test_responses_plain_and_stream(client):
    r = client.responses.create(model="m", input="go", tools=[{"type": "function", "name": "terminal", "parameters": {}}])
    fc = [o for o in r.output if o.type == "function_call"][0]
    assert fc.name == "terminal" and fc.call_id == "call_a"
    inp = [{"role": "user", "content": "go"},
           {"type": "function_call", "call_id": "call_a", "name": "terminal", "arguments": "{}"},
           {"type": "function_call_output", "call_id": "call_a", "output": "x"}]
    r2 = client.responses.create(model="m", input=inp, tools=[{"type": "function", "name": "terminal", "parameters": {}}])
    assert r2.output_text == "All done."
    events = list(client.responses.create(model="m", input=inp, stream=True,
                                          tools=[{"type": "function", "name": "terminal", "parameters": {}}]))
    assert events[-1].type == "response.completed"
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "All done."


def test_request_log(mock):
    log = requests.get(f"{mock}/_mock/requests", timeout=10).json()
    assert log and all("seq" in e and "path" in e for e in log)
    assert requests.delete(f"{mock}/_mock/requests", timeout=10).json()["cleared"] == len(log)

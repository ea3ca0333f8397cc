#!/usr/bin/env python3
"""Checks that the official `openai` and `anthropic` Python SDKs parse every
answer of the mock LLM server, plain and streaming.

Usage (not part of CI; needs `pip install openai anthropic`):

    cargo run -p openhands-testkit --example serve -- crates/testkit/python/check_script.json 18555 &
    python crates/testkit/python/check_sdks.py http://127.0.0.1:18555
"""

from __future__ import annotations

import json
import sys

import anthropic
import openai

TOOLS_CHAT = [{"type": "function", "function": {"name": "terminal", "description": "run",
                                                "parameters": {"type": "object", "properties": {}}}}]
TOOLS_RESP = [{"type": "function", "name": "terminal", "description": "run",
               "parameters": {"type": "object", "properties": {}}}]
TOOLS_ANT = [{"name": "terminal", "description": "run", "input_schema": {"type": "object", "properties": {}}}]


def check(cond: bool, what: str) -> None:
    if not cond:
        raise SystemExit(f"FAIL: {what}")
    print(f"ok   {what}")


def main(root: str) -> None:
    oa = openai.OpenAI(base_url=f"{root}/v1", api_key="mock-key", max_retries=0)
    an = anthropic.Anthropic(base_url=root, api_key="mock-key", max_retries=0)
    user = [{"role": "user", "content": "go"}]

    # --- chat, plain
    r = oa.chat.completions.create(model="mock-model", messages=user, tools=TOOLS_CHAT)
    msg = r.choices[0].message
    check(r.choices[0].finish_reason == "tool_calls", "chat plain finish_reason")
    check(msg.tool_calls[0].function.name == "terminal", "chat plain tool call name")
    check(json.loads(msg.tool_calls[0].function.arguments) == {"command": "ls"}, "chat plain args")
    check(msg.content == "Looking.", "chat plain content")
    check(getattr(msg, "reasoning_content", None) == "think first", "chat plain reasoning_content")
    check(r.usage.prompt_tokens == 100 and r.usage.completion_tokens == 10, "chat plain usage")
    check(r.usage.prompt_tokens_details.cached_tokens == 40, "chat cached tokens")

    # --- chat, stream (with usage)
    text, args, name, finish, usage = "", "", None, None, None
    stream = oa.chat.completions.create(model="mock-model", messages=user, tools=TOOLS_CHAT, stream=True,
                                        stream_options={"include_usage": True})
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        if not chunk.choices:
            continue
        d = chunk.choices[0].delta
        text += d.content or ""
        for tc in d.tool_calls or []:
            name = tc.function.name or name
            args += tc.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    check(text == "Looking.", "chat stream content")
    check(name == "terminal" and json.loads(args) == {"command": "ls"}, "chat stream tool call")
    check(finish == "tool_calls", "chat stream finish")
    check(usage is not None and usage.total_tokens == 110, "chat stream usage")

    # --- chat, stream helper (accumulates into a ChatCompletion)
    with oa.chat.completions.stream(model="mock-model", messages=user, tools=TOOLS_CHAT) as s:
        final = s.get_final_completion()
    check(final.choices[0].message.tool_calls[0].function.name == "terminal", "chat stream helper")

    # --- chat, error
    try:
        oa.chat.completions.create(model="mock-model", messages=[{"role": "user", "content": "[[mock:script:ratelimit]]"}])
        check(False, "chat 429 raises")
    except openai.RateLimitError as e:
        check(e.status_code == 429 and e.response.headers.get("retry-after") == "2", "chat 429 RateLimitError")
    try:
        oa.chat.completions.create(model="mock-model", messages=[{"role": "user", "content": "[[mock:script:ctx]]"}])
        check(False, "chat 400 raises")
    except openai.BadRequestError as e:
        check(e.code == "context_length_exceeded", "chat context window BadRequestError code")

    # --- responses, plain
    r = oa.responses.create(model="mock-model", input="go", tools=TOOLS_RESP, include=["reasoning.encrypted_content"])
    kinds = [o.type for o in r.output]
    check(kinds == ["reasoning", "message", "function_call"], f"responses plain output items {kinds}")
    check(r.output_text == "Looking.", "responses output_text")
    check(r.output[2].name == "terminal" and json.loads(r.output[2].arguments) == {"command": "ls"}, "responses call")
    check(r.usage.input_tokens == 100 and r.usage.input_tokens_details.cached_tokens == 40, "responses usage")

    # --- responses, stream
    text, args, completed = "", "", None
    for ev in oa.responses.create(model="mock-model", input="go", tools=TOOLS_RESP, stream=True):
        if ev.type == "response.output_text.delta":
            text += ev.delta
        elif ev.type == "response.function_call_arguments.delta":
            args += ev.delta
        elif ev.type == "response.completed":
            completed = ev.response
    check(text == "Looking." and json.loads(args) == {"command": "ls"}, "responses stream deltas")
    check(completed is not None and completed.status == "completed", "responses stream completed")

    with oa.responses.stream(model="mock-model", input="go", tools=TOOLS_RESP) as s:
        final = s.get_final_response()
    check(final.output_text == "Looking.", "responses stream helper")

    # second turn: the previous output replayed as input
    prev = [o.model_dump(exclude_none=True) for o in r.output]
    inp = [{"role": "user", "content": "go"}, *prev,
           {"type": "function_call_output", "call_id": r.output[2].call_id, "output": "a.txt"}]
    r2 = oa.responses.create(model="mock-model", input=inp, tools=TOOLS_RESP)
    check(r2.output_text == "Finished.", "responses second turn by position")

    # --- anthropic, plain
    m = an.messages.create(model="claude-mock", max_tokens=100, messages=user, tools=TOOLS_ANT)
    kinds = [b.type for b in m.content]
    check(kinds == ["thinking", "text", "tool_use"], f"anthropic blocks {kinds}")
    check(m.content[2].input == {"command": "ls"} and m.stop_reason == "tool_use", "anthropic tool_use")
    check(m.usage.input_tokens == 60 and m.usage.cache_read_input_tokens == 40, "anthropic usage")

    # --- anthropic, stream (SDK accumulator)
    with an.messages.stream(model="claude-mock", max_tokens=100, messages=user, tools=TOOLS_ANT) as s:
        final = s.get_final_message()
    kinds = [b.type for b in final.content]
    check(kinds == ["thinking", "text", "tool_use"], f"anthropic stream blocks {kinds}")
    check(final.content[0].signature.startswith("mock-signature-"), "anthropic stream signature")
    check(final.content[1].text == "Looking.", "anthropic stream text")
    check(final.content[2].input == {"command": "ls"}, "anthropic stream tool input")
    check(final.stop_reason == "tool_use" and final.usage.output_tokens == 10, "anthropic stream stop/usage")

    try:
        an.messages.create(model="claude-mock", max_tokens=10,
                           messages=[{"role": "user", "content": "[[mock:script:overloaded]]"}])
        check(False, "anthropic 529 raises")
    except anthropic.APIStatusError as e:
        check(e.status_code == 529 and e.body["error"]["type"] == "overloaded_error", "anthropic 529 error shape")

    # --- models
    models = oa.models.list()
    check([m.id for m in models.data] == ["mock-model"], "openai models.list")
    check([m.id for m in an.models.list().data] == ["mock-model"], "anthropic models.list")
    print("ALL OK")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:18555")

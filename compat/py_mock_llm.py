#!/usr/bin/env python3
"""A small scripted OpenAI-compatible LLM server in pure Python (stdlib only).

It follows the shared script format (see compat/README.md and
compat/scripts/*.json) closely enough to drive the reference agent-server:

* script selection by the first ``[[mock:script:NAME]]`` marker in a user
  message, else ``default``;
* stateless turn position = number of assistant turns already in the request;
* tool-less requests (title generation, ask_agent) answered by
  ``toolless_reply`` when set; past the end of a script ``exhausted_reply``;
* TURN fields ``text``, ``reasoning``, ``tool_calls``, ``error`` (+``fail_times``,
  ``retry_after``), ``delay_ms``, ``usage``, ``raw_body``, ``cut_stream``,
  ``chunk_chars``.

Endpoints (with and without the ``/v1`` prefix): ``POST /chat/completions``
(plain and SSE), ``POST /responses`` (plain and SSE), ``GET /models``, plus
``GET|DELETE /_mock/requests`` (request log), ``PUT /_mock/script`` and
``GET /health``. Anthropic Messages is not spoken here.

Usage: ``python py_mock_llm.py --script FILE --port P [--host 127.0.0.1]``.
Prints ``mock LLM listening on http://HOST:PORT`` once it accepts requests.
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MARKER = re.compile(r"\[\[mock:script:([A-Za-z0-9_.-]+)\]\]")
MOCK_MODEL = "mock-model"


def load_script(data: Any) -> dict:
    """Normalise a parsed script file (bare list = default script)."""
    if isinstance(data, list):
        data = {"scripts": {"default": data}}
    if not isinstance(data, dict) or not isinstance(data.get("scripts", {}), dict):
        raise ValueError("script must be a list of turns or an object with 'scripts'")
    data.setdefault("scripts", {})
    return data


def content_text(content: Any) -> str:
    """Text of a message content (string or list of parts), tool results skipped."""
    if isinstance(content, str):
        return content
    out = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and part.get("type") != "tool_result":
                if isinstance(part.get("text"), str):
                    out.append(part["text"])
    return "\n".join(out)


def chat_view(body: dict) -> tuple[list[tuple[str, str]], int]:
    """(role, text) messages of a Chat request and its assistant-turn count."""
    msgs = []
    for m in body.get("messages") or []:
        if isinstance(m, dict):
            msgs.append((m.get("role", ""), content_text(m.get("content"))))
    return msgs, sum(1 for r, _ in msgs if r == "assistant")


def responses_view(body: dict) -> tuple[list[tuple[str, str]], int]:
    """(role, text) messages of a Responses request; runs of output items = 1 turn."""
    msgs: list[tuple[str, str]] = []
    turns = 0
    inp = body.get("input")
    if isinstance(inp, str):
        return [("user", inp)], 0
    in_run = False
    for item in inp if isinstance(inp, list) else []:
        if not isinstance(item, dict):
            continue
        ty, role = item.get("type"), item.get("role")
        is_output = ty in ("function_call", "reasoning", "custom_tool_call") or (
            ty in (None, "message") and role == "assistant"
        )
        if is_output:
            if not in_run:
                turns += 1
                in_run = True
            msgs.append(("assistant", content_text(item.get("content"))))
        else:
            in_run = False
            msgs.append((role or "", content_text(item.get("content"))))
    return msgs, turns


class Engine:
    """Chooses the turn for a request; counts failures for ``fail_times``."""

    def __init__(self, script: dict):
        self.script = script
        self.lock = threading.Lock()
        self.failures: dict[tuple, int] = {}

    def select(self, msgs, turns, tools_offered, conv_key) -> tuple[str, int, dict]:
        if not tools_offered and self.script.get("toolless_reply"):
            return "toolless", turns, dict(self.script["toolless_reply"])
        name = "default"
        for role, text in msgs:
            if role == "user":
                m = MARKER.search(text)
                if m:
                    name = m.group(1)
                    break
        turns_list = self.script["scripts"].get(name, [])
        if turns >= len(turns_list):
            return name, turns, dict(
                self.script.get("exhausted_reply") or {"text": "Script exhausted."}
            )
        turn = dict(turns_list[turns])
        if turn.get("error") and turn.get("fail_times") is not None:
            if conv_key is None:
                conv_key = next((t for r, t in msgs if r == "user"), "")
            k = (name, turns, conv_key)
            with self.lock:
                seen = self.failures.get(k, 0)
                self.failures[k] = seen + 1
            if seen >= int(turn["fail_times"]):
                turn.pop("error")
        return name, turns, turn


def chunks(text: str, n: int) -> list[str]:
    n = max(1, n)
    return [text[i : i + n] for i in range(0, len(text), n)] or [""]


def normalise_calls(turn: dict, position: int) -> list[dict]:
    calls = []
    for i, c in enumerate(turn.get("tool_calls") or []):
        args = c.get("arguments", {})
        calls.append(
            {
                "id": c.get("id") or f"call_{position}_{i}_{secrets.token_hex(4)}",
                "name": c["name"],
                "arguments": args if isinstance(args, str) else json.dumps(args),
            }
        )
    return calls


def usage_numbers(turn: dict) -> dict:
    u = {"prompt_tokens": 100, "completion_tokens": 10, "cache_read_tokens": 0,
         "cache_write_tokens": 0, "reasoning_tokens": 0}
    u.update(turn.get("usage") or {})
    return u


def chat_usage(u: dict) -> dict:
    return {
        "prompt_tokens": u["prompt_tokens"],
        "completion_tokens": u["completion_tokens"],
        "total_tokens": u["prompt_tokens"] + u["completion_tokens"],
        "prompt_tokens_details": {"cached_tokens": u["cache_read_tokens"]},
        "completion_tokens_details": {"reasoning_tokens": u["reasoning_tokens"]},
    }


def error_type(status: int) -> str:
    return {401: "authentication_error", 403: "permission_error", 404: "not_found_error",
            429: "rate_limit_error"}.get(status, "server_error" if status >= 500 else "invalid_request_error")


class Handler(BaseHTTPRequestHandler):
    server_version = "py-mock-llm/1"
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet by default
        if self.server.verbose:
            sys.stderr.write("mock: " + fmt % args + "\n")

    # ---- plumbing -------------------------------------------------------
    def _read(self) -> tuple[bytes, Any]:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        return raw, parsed

    def _record(self, raw: bytes, parsed: Any):
        path, _, query = self.path.partition("?")
        entry = {"method": self.command, "path": path,
                 "headers": {k.lower(): v for k, v in self.headers.items()},
                 "body": parsed}
        if query:
            entry["query"] = query
        if raw and parsed is None:
            entry["body_text"] = raw.decode("utf-8", "replace")
        with self.server.log_lock:
            self.server.seq += 1
            entry["seq"] = self.server.seq
            self.server.log.append(entry)

    def _json(self, status: int, obj: Any, headers: dict | None = None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, err: dict):
        status = int(err.get("status", 500))
        body = {"error": {"message": err.get("message", f"mock error {status}"),
                          "type": err.get("type") or error_type(status),
                          "code": err.get("code"), "param": None}}
        headers = {}
        if err.get("retry_after") is not None:
            headers["Retry-After"] = str(err["retry_after"])
        self._json(status, body, headers)

    def _sse(self, events: list[str], cut: bool):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        if cut:
            events = events[: max(1, len(events) // 2)]
        for e in events:
            self.wfile.write(e.encode())
            self.wfile.flush()
        self.close_connection = True

    # ---- routes ---------------------------------------------------------
    def do_GET(self):
        path = self.path.split("?")[0]
        if path in ("/health",):
            return self._json(200, {"status": "ok"})
        if path == "/_mock/requests":
            with self.server.log_lock:
                return self._json(200, list(self.server.log))
        if path in ("/v1/models", "/models"):
            self._record(b"", None)
            return self._json(200, {"object": "list", "data": [
                {"id": MOCK_MODEL, "object": "model", "created": 0, "owned_by": "py-mock-llm"}]})
        self._json(404, {"error": {"message": f"mock LLM: no route for GET {path}",
                                   "type": "invalid_request_error", "code": "not_found", "param": None}})

    def do_DELETE(self):
        if self.path.split("?")[0] == "/_mock/requests":
            with self.server.log_lock:
                n = len(self.server.log)
                self.server.log.clear()
            return self._json(200, {"cleared": n})
        self._json(404, {"error": {"message": "no route", "type": "invalid_request_error",
                                   "code": "not_found", "param": None}})

    def do_PUT(self):
        raw, parsed = self._read()
        if self.path.split("?")[0] != "/_mock/script":
            return self._json(404, {"error": {"message": "no route"}})
        try:
            script = load_script(parsed)
        except ValueError as e:
            return self._error({"status": 400, "message": str(e)})
        self.server.engine = Engine(script)
        self._json(200, {"ok": True, "scripts": sorted(script["scripts"])})

    def do_POST(self):
        raw, body = self._read()
        self._record(raw, body)
        path = self.path.split("?")[0]
        if path.endswith("/chat/completions"):
            api = "chat"
        elif path.endswith("/responses"):
            api = "responses"
        else:
            return self._error({"status": 404, "message": f"mock LLM: no route for POST {path}",
                                "code": "not_found"})
        if not isinstance(body, dict):
            return self._error({"status": 400, "message": "mock LLM: body must be a JSON object"})
        msgs, turns = chat_view(body) if api == "chat" else responses_view(body)
        if api == "responses" and isinstance(body.get("instructions"), str):
            msgs.insert(0, ("system", body["instructions"]))
        tools_offered = any(isinstance(body.get(k), list) and body.get(k) for k in ("tools", "functions"))
        conv_key = body.get("prompt_cache_key") or self.headers.get("x-litellm-session-id")
        name, position, turn = self.server.engine.select(msgs, turns, tools_offered, conv_key)
        if self.server.verbose:
            sys.stderr.write(f"mock: {api} script={name} position={position}\n")
        if turn.get("delay_ms"):
            time.sleep(turn["delay_ms"] / 1000.0)
        if turn.get("error"):
            return self._error(turn["error"])
        stream = bool(body.get("stream"))
        if "raw_body" in turn:
            data = turn["raw_body"].encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream" if stream else "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        model = body.get("model") or MOCK_MODEL
        calls = normalise_calls(turn, position)
        u = usage_numbers(turn)
        n = int(turn.get("chunk_chars") or 8)
        if api == "chat":
            if stream:
                return self._sse(chat_stream(model, turn, calls, u, n, body), bool(turn.get("cut_stream")))
            return self._json(200, chat_body(model, turn, calls, u))
        if stream:
            return self._sse(responses_stream(model, turn, calls, u, n), bool(turn.get("cut_stream")))
        return self._json(200, responses_body(model, turn, calls, u))


# ---- Chat Completions ------------------------------------------------------
def chat_body(model, turn, calls, u) -> dict:
    msg = {"role": "assistant", "content": turn.get("text")}
    if calls:
        msg["tool_calls"] = [{"id": c["id"], "type": "function",
                              "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]
    if turn.get("reasoning"):
        msg["reasoning_content"] = turn["reasoning"]
    return {"id": f"chatcmpl-{secrets.token_hex(12)}", "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": chat_usage(u)}


def chat_stream(model, turn, calls, u, n, body) -> list[str]:
    cid, created = f"chatcmpl-{secrets.token_hex(12)}", int(time.time())

    def chunk(delta, finish=None, choices=True):
        c = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if choices else []}
        return "data: " + json.dumps(c) + "\n\n"

    out = [chunk({"role": "assistant", "content": ""})]
    for piece in chunks(turn["reasoning"], n) if turn.get("reasoning") else []:
        out.append(chunk({"reasoning_content": piece}))
    for piece in chunks(turn["text"], n) if turn.get("text") else []:
        out.append(chunk({"content": piece}))
    for i, c in enumerate(calls):
        out.append(chunk({"tool_calls": [{"index": i, "id": c["id"], "type": "function",
                                          "function": {"name": c["name"], "arguments": ""}}]}))
        for piece in chunks(c["arguments"], n):
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    out.append(chunk({}, "tool_calls" if calls else "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        c = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
             "choices": [], "usage": chat_usage(u)}
        out.append("data: " + json.dumps(c) + "\n\n")
    out.append("data: [DONE]\n\n")
    return out


# ---- Responses ---------------------------------------------------------------
def responses_items(turn, calls) -> list[dict]:
    items = []
    if turn.get("reasoning"):
        items.append({"id": f"rs_{secrets.token_hex(12)}", "type": "reasoning",
                      "summary": [{"type": "summary_text", "text": turn["reasoning"]}]})
    if turn.get("text") or not calls:
        items.append({"id": f"msg_{secrets.token_hex(12)}", "type": "message", "role": "assistant",
                      "status": "completed",
                      "content": [{"type": "output_text", "text": turn.get("text") or "",
                                   "annotations": []}]})
    for c in calls:
        items.append({"id": f"fc_{secrets.token_hex(12)}", "type": "function_call", "status": "completed",
                      "call_id": c["id"], "name": c["name"], "arguments": c["arguments"]})
    return items


def responses_usage(u) -> dict:
    return {"input_tokens": u["prompt_tokens"],
            "input_tokens_details": {"cached_tokens": u["cache_read_tokens"]},
            "output_tokens": u["completion_tokens"],
            "output_tokens_details": {"reasoning_tokens": u["reasoning_tokens"]},
            "total_tokens": u["prompt_tokens"] + u["completion_tokens"]}


def responses_body(model, turn, calls, u, items=None) -> dict:
    now = time.time()
    return {"id": f"resp_{secrets.token_hex(12)}", "object": "response", "created_at": int(now),
            "status": "completed", "model": model, "output": items or responses_items(turn, calls),
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": responses_usage(u)}


def responses_stream(model, turn, calls, u, n) -> list[str]:
    items = responses_items(turn, calls)
    full = responses_body(model, turn, calls, u, items)
    seq = iter(range(1, 1_000_000))

    def ev(kind, **fields):
        fields.update({"type": kind, "sequence_number": next(seq)})
        return f"event: {kind}\ndata: {json.dumps(fields)}\n\n"

    started = dict(full, status="in_progress", output=[])
    out = [ev("response.created", response=started), ev("response.in_progress", response=started)]
    for idx, item in enumerate(items):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            out.append(ev("response.output_item.added", output_index=idx,
                          item=dict(item, status="in_progress", content=[])))
            out.append(ev("response.content_part.added", item_id=item["id"], output_index=idx,
                          content_index=0, part={"type": "output_text", "text": "", "annotations": []}))
            for piece in chunks(text, n):
                out.append(ev("response.output_text.delta", item_id=item["id"], output_index=idx,
                              content_index=0, delta=piece))
            out.append(ev("response.output_text.done", item_id=item["id"], output_index=idx,
                          content_index=0, text=text))
        elif item["type"] == "function_call":
            out.append(ev("response.output_item.added", output_index=idx,
                          item=dict(item, status="in_progress", arguments="")))
            for piece in chunks(item["arguments"], n):
                out.append(ev("response.function_call_arguments.delta", item_id=item["id"],
                              output_index=idx, delta=piece))
            out.append(ev("response.function_call_arguments.done", item_id=item["id"],
                          output_index=idx, arguments=item["arguments"]))
        else:
            out.append(ev("response.output_item.added", output_index=idx, item=dict(item, summary=[])))
        out.append(ev("response.output_item.done", output_index=idx, item=item))
    out.append(ev("response.completed", response=full))
    return out


class MockServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, script: dict, verbose: bool = False):
        super().__init__(addr, Handler)
        self.engine = Engine(script)
        self.verbose = verbose
        self.log: list[dict] = []
        self.log_lock = threading.Lock()
        self.seq = 0


def start_in_thread(script: dict, host: str = "127.0.0.1", port: int = 0) -> MockServer:
    """Start a mock server on a background thread (port 0 = any free port)."""
    srv = MockServer((host, port), load_script(script))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--script", required=True, help="script JSON file")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    with open(args.script) as f:
        script = load_script(json.load(f))
    srv = MockServer((args.host, args.port), script, args.verbose)
    print(f"mock LLM listening on http://{args.host}:{srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

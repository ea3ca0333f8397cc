#!/usr/bin/env python3
"""Regenerate the reference fixtures from the real reference server.

Runs ``openhands-agent-server==1.58.2`` (from the compat venv) against the
pure-Python scripted mock LLM (``py_mock_llm.py``), drives one two-step
conversation through the REST API (terminal ``echo hi > x.txt``, then
``finish``), saves an LLM profile, and writes:

* ``crates/sdk/tests/fixtures/reference/two_step_conversation/`` — the
  conversation directory (``meta.json``, ``base_state.json``, ``events/``)
  with machine-specific paths replaced by placeholder tokens;
* ``crates/sdk/tests/fixtures/reference/profiles/fixture.json`` — the stored
  LLM profile (API key encrypted with the fixed test secret key);
* ``compat/recorded/*.json`` — example HTTP answers (and WebSocket frames)
  for shape comparisons.

Usage (from the repository root)::

    compat/setup.sh
    /var/cache/openhands-rs/compat-venv/bin/python compat/gen_fixtures.py [--keep-run-dir]

Timestamps and ids change on every run; the committed files are one sample.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import requests
from websockets.sync.client import connect as ws_connect

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import py_mock_llm  # noqa: E402
from refserver import SECRET_KEY, SESSION_KEY, ReferenceServer  # noqa: E402

REPO = HERE.parent
FIXTURES = REPO / "crates" / "sdk" / "tests" / "fixtures" / "reference"
RECORDED = HERE / "recorded"

TASK = "Please create x.txt containing hi, then finish."
PROFILE_API_KEY = "sk-fixture-123"

# Placeholder tokens written into the fixtures instead of machine paths.
TOK_CONVERSATIONS = "__CONVERSATIONS_DIR__"
TOK_WORKSPACE = "__WORKSPACE__"
TOK_PERSISTENCE = "__PERSISTENCE_DIR__"
TOK_RUN = "__RUN_DIR__"
TOK_MOCK = "__MOCK_LLM_URL__"


def llm_config(mock_url: str, **extra) -> dict:
    cfg = {
        "model": "openai/mock-model",
        "base_url": f"{mock_url}/v1",
        "api_key": "mock-key",
        "api_mode": "chat",
        "num_retries": 0,
    }
    cfg.update(extra)
    return cfg


class Recorder:
    """Performs HTTP calls and keeps the ones worth committing."""

    def __init__(self, base: str):
        self.base = base
        self.s = requests.Session()
        self.s.headers["X-Session-API-Key"] = SESSION_KEY
        self.saved: dict[str, dict] = {}

    def call(self, method: str, path: str, *, name: str | None = None, auth: bool = True,
             json_body=None, params=None, headers=None, note: str | None = None) -> requests.Response:
        h = dict(headers or {})
        if auth:
            r = self.s.request(method, self.base + path, json=json_body, params=params, headers=h, timeout=60)
        else:
            r = requests.request(method, self.base + path, json=json_body, params=params, headers=h, timeout=60)
        if name:
            try:
                body = r.json()
            except ValueError:
                body = r.text
            entry = {"request": {"method": method, "path": path}, "status": r.status_code,
                     "content_type": r.headers.get("content-type"), "body": body}
            if params:
                entry["request"]["query"] = params
            if json_body is not None:
                entry["request"]["body"] = json_body
            if h:
                entry["request"]["headers"] = h
            if not auth:
                entry["request"]["note"] = "sent without X-Session-API-Key"
            if note:
                entry["note"] = note
            oh_headers = {k: v for k, v in r.headers.items() if k.lower().startswith("x-openhands")}
            if oh_headers:
                entry["response_headers"] = oh_headers
            self.saved[name] = entry
        return r


def collect_ws(url: str, cid: str, frames: list, stop: threading.Event, ready: threading.Event):
    """Collect the legacy event socket's frames until told to stop."""
    ws_url = url.replace("http://", "ws://") + f"/sockets/events/{cid}"
    with ws_connect(ws_url, open_timeout=10) as ws:
        ws.send(json.dumps({"type": "auth", "session_api_key": SESSION_KEY}))
        while not stop.is_set():
            try:
                msg = ws.recv(timeout=0.2)
            except TimeoutError:
                continue
            frame = json.loads(msg)
            frames.append(frame)
            ready.set()


def wait_status(rec: Recorder, cid: str, want: set[str], timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = rec.call("GET", f"/api/conversations/{cid}").json()
        if info.get("execution_status") in want:
            return info
        time.sleep(0.2)
    raise TimeoutError(f"conversation {cid} never reached {want}")


def wait_events_settle(rec: Recorder, cid: str, quiet: float = 1.5, timeout: float = 30) -> int:
    deadline = time.monotonic() + timeout
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        n = rec.call("GET", f"/api/conversations/{cid}/events/count").json()
        if n != last:
            last, since = n, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return n
        time.sleep(0.2)
    return last


MOCK_URL = ""  # set in main()


def scrub_text(text: str, run_dir: Path) -> str:
    """Replace machine-specific absolute paths and the mock URL with tokens."""
    if MOCK_URL:
        text = text.replace(MOCK_URL, TOK_MOCK)
    real = Path(str(run_dir)).resolve()
    for base in {str(run_dir), str(real)}:
        text = text.replace(f"{base}/conversations", TOK_CONVERSATIONS)
        text = text.replace(f"{base}/project", TOK_WORKSPACE)
        text = text.replace(f"{base}/persistence", TOK_PERSISTENCE)
        text = text.replace(base, TOK_RUN)
    return text


def copy_scrubbed(src: Path, dst: Path, run_dir: Path) -> list[str]:
    if dst.exists():
        shutil.rmtree(dst)
    written = []
    for p in sorted(src.rglob("*")):
        rel = p.relative_to(src)
        out = dst / rel
        if p.is_dir():
            out.mkdir(parents=True, exist_ok=True)
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        data = p.read_bytes()
        try:
            out.write_text(scrub_text(data.decode("utf-8"), run_dir), encoding="utf-8")
        except UnicodeDecodeError:
            out.write_bytes(data)
        written.append(str(rel))
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep-run-dir", action="store_true", help="leave the temporary run dir for inspection")
    args = ap.parse_args()

    script = json.loads((HERE / "scripts" / "compat.json").read_text())
    mock = py_mock_llm.start_in_thread(script)
    mock_url = f"http://127.0.0.1:{mock.server_address[1]}"
    global MOCK_URL
    MOCK_URL = mock_url

    run_dir = Path(tempfile.mkdtemp(prefix="ohfix-", dir="/tmp"))
    server = ReferenceServer(run_dir)
    print(f"run dir {run_dir}; mock {mock_url}", flush=True)
    t_ready = server.start()
    print(f"reference ready on {server.url} after {t_ready:.1f}s", flush=True)
    rec = Recorder(server.url)
    try:
        rec.call("GET", "/server_info", name="server_info")
        rec.call("GET", "/api/conversations/search", name="error_401_missing_key", auth=False)
        rec.call("GET", "/api/conversations/search", name="error_401_wrong_key", auth=False,
                 headers={"X-Session-API-Key": "wrong-key"})
        rec.call("GET", f"/api/conversations/{uuid.uuid4()}", name="error_404_conversation")
        rec.call("GET", f"/api/conversations/{uuid.uuid4()}/events/search", name="error_404_events_search")
        rec.call("POST", "/api/conversations", name="error_422_create_empty", json_body={})
        rec.call("POST", "/api/conversations", name="error_422_create_bad_types",
                 json_body={"agent": {"kind": "Agent", "llm": {"model": "openai/mock-model", "api_key": "sk-redact-me"},
                                      "tools": "terminal"},
                            "workspace": {"working_dir": str(run_dir / "project")}, "max_iterations": 0},
                 )
        rec.call("POST", "/api/conversations", name="error_422_create_redacted_input",
                 json_body={"agent": {"kind": "NoSuchAgent", "llm": {"model": "openai/mock-model",
                                                                     "api_key": "sk-redact-me"}},
                            "workspace": {"working_dir": str(run_dir / "project")}},
                 note="secrets inside a 422 error's input are redacted by the reference")

        workspace = run_dir / "project"
        create_body = {
            "agent": {
                "kind": "Agent",
                "llm": llm_config(mock_url),
                "tools": [{"name": "terminal"}, {"name": "file_editor"}, {"name": "task_tracker"}],
            },
            "workspace": {"kind": "LocalWorkspace", "working_dir": str(workspace)},
        }
        r = rec.call("POST", "/api/conversations", name="conversation_create", json_body=create_body)
        assert r.status_code in (200, 201), r.text
        cid = r.json()["id"]
        hex_id = uuid.UUID(cid).hex
        print(f"conversation {cid} created ({r.status_code})", flush=True)
        rec.call("POST", "/api/conversations", name="conversation_create_again",
                 json_body=dict(create_body, conversation_id=cid),
                 note="idempotent create with an existing conversation_id")

        frames: list = []
        stop, ready = threading.Event(), threading.Event()
        t = threading.Thread(target=collect_ws, args=(server.url, cid, frames, stop, ready), daemon=True)
        t.start()
        if not ready.wait(10):
            raise RuntimeError("event socket sent nothing after auth")

        rec.call("POST", f"/api/conversations/{cid}/events", name="send_message",
                 json_body={"role": "user", "content": [{"type": "text", "text": TASK}], "run": False})
        rec.call("POST", f"/api/conversations/{cid}/run", name="run")
        wait_status(rec, cid, {"finished", "error", "stuck"})
        n_events = wait_events_settle(rec, cid)
        time.sleep(0.5)
        stop.set()
        t.join(5)
        print(f"run finished with {n_events} events", flush=True)

        rec.call("GET", f"/api/conversations/{cid}", name="conversation_get")
        rec.call("GET", "/api/conversations/search", name="conversation_search", params={"limit": 10})
        rec.call("GET", "/api/conversations/count", name="conversation_count")
        rec.call("GET", f"/api/conversations/{cid}/events/search", name="events_search", params={"limit": 100})
        rec.call("GET", f"/api/conversations/{cid}/events/search", name="events_search_page",
                 params={"limit": 3, "kind": "ConversationStateUpdateEvent"})
        rec.call("GET", f"/api/conversations/{cid}/events/count", name="events_count")
        rec.call("GET", f"/api/conversations/{cid}/events/search", name="error_422_events_limit",
                 params={"limit": 0})
        rec.call("GET", f"/api/conversations/{cid}/agent_final_response", name="agent_final_response")
        rec.call("PATCH", f"/api/conversations/{cid}", name="error_422_patch_blank_title",
                 json_body={"title": "   "})

        # LLM profile with an encrypted key.
        rec.call("POST", "/api/profiles/fixture", name="profile_save",
                 json_body={"llm": llm_config(mock_url, api_key=PROFILE_API_KEY), "include_secrets": True})
        rec.call("GET", "/api/profiles", name="profiles_list")
        rec.call("GET", "/api/profiles/fixture", name="profile_get")
        rec.call("GET", "/api/profiles/nope", name="error_404_profile")
        rec.call("GET", "/v1/models", name="v1_models")
        rec.call("POST", "/v1/chat/completions", name="v1_error_unknown_model",
                 json_body={"model": "openhands_nope", "messages": [{"role": "user", "content": "hi"}]})
        rec.call("POST", "/v1/chat/completions", name="v1_error_model_without_prefix",
                 json_body={"model": "nope", "messages": [{"role": "user", "content": "hi"}]})
        rec.call("POST", "/v1/chat/completions", name="v1_error_no_messages",
                 json_body={"model": "openhands_fixture", "messages": []})
        rec.call("POST", "/v1/responses", name="v1_responses_error_store",
                 json_body={"model": "openhands_fixture", "input": "hi", "store": True})
        rec.call("POST", "/v1/responses", name="v1_responses_error_previous_response_id",
                 json_body={"model": "openhands_fixture", "input": "hi", "previous_response_id": "resp_1"})
        rec.call("POST", "/v1/responses", name="v1_responses_error_stream",
                 json_body={"model": "openhands_fixture", "input": "hi", "stream": True})
        r = rec.call("POST", "/v1/chat/completions", name="v1_chat_completion",
                     json_body={"model": "openhands_fixture",
                                "messages": [{"role": "system", "content": "Be brief."},
                                             {"role": "user", "content": "[[mock:script:gateway_chat]] hi"}]})
        gw_cid = r.headers.get("X-OpenHands-ServerConversation-ID")
        rec.call("POST", "/v1/chat/completions", name="v1_chat_completion_continued",
                 json_body={"model": "openhands_fixture",
                            "messages": [{"role": "user", "content": "[[mock:script:gateway_chat]] again"}]},
                 headers={"X-OpenHands-ServerConversation-ID": gw_cid or ""})
        rec.call("POST", "/v1/responses", name="v1_response",
                 json_body={"model": "openhands_fixture", "instructions": "Be brief.",
                            "input": "[[mock:script:gateway_responses]] hi", "store": False})
        r = requests.post(server.url + "/v1/chat/completions", timeout=60,
                          headers={"Authorization": f"Bearer {SESSION_KEY}"},
                          json={"model": "openhands_fixture", "stream": True,
                                "stream_options": {"include_usage": True},
                                "messages": [{"role": "user", "content": "[[mock:script:gateway_stream]] hi"}]})
        rec.saved["v1_chat_completion_stream"] = {
            "request": {"method": "POST", "path": "/v1/chat/completions", "note": "stream=true, Bearer auth"},
            "status": r.status_code, "content_type": r.headers.get("content-type"),
            "response_headers": {k: v for k, v in r.headers.items() if k.lower().startswith("x-openhands")},
            "sse_lines": [line for line in r.text.split("\n") if line]}
        rec.call("GET", "/v1/models", name="v1_error_401", auth=False,
                 headers={"Authorization": "Bearer wrong-key"})

        # Mock LLM traffic: keep the shape, drop the long prompt texts.
        llm_requests = []
        for entry in mock.log:
            body = json.loads(json.dumps(entry.get("body")))
            for m in (body or {}).get("messages", []) if isinstance(body, dict) else []:
                if m.get("role") == "system" and isinstance(m.get("content"), list):
                    for part in m["content"]:
                        if isinstance(part.get("text"), str) and len(part["text"]) > 200:
                            part["text"] = f"<{len(part['text'])} chars omitted>"
            for tool in (body or {}).get("tools", []) if isinstance(body, dict) else []:
                fn = tool.get("function", {})
                if isinstance(fn.get("description"), str):
                    fn["description"] = f"<{len(fn['description'])} chars omitted>"
                for prop in fn.get("parameters", {}).get("properties", {}).values():
                    if isinstance(prop.get("description"), str) and len(prop["description"]) > 80:
                        prop["description"] = f"<{len(prop['description'])} chars omitted>"
            llm_requests.append({"path": entry["path"], "body": body,
                                 "headers": {k: v for k, v in entry["headers"].items()
                                             if k in ("x-litellm-session-id", "content-type", "authorization")}})

        server.stop()
        print("reference stopped", flush=True)

        # --- write fixtures ----------------------------------------------------
        conv_src = run_dir / "conversations" / hex_id
        conv_dst = FIXTURES / "two_step_conversation"
        written = copy_scrubbed(conv_src, conv_dst, run_dir)
        prof_src = run_dir / "persistence" / "profiles" / "fixture.json"
        prof_dst = FIXTURES / "profiles" / "fixture.json"
        prof_dst.parent.mkdir(parents=True, exist_ok=True)
        prof_dst.write_text(scrub_text(prof_src.read_text(), run_dir))
        persistence_listing = sorted(str(p.relative_to(run_dir / "persistence"))
                                     for p in (run_dir / "persistence").rglob("*") if p.is_file())

        RECORDED.mkdir(exist_ok=True)
        for old in RECORDED.glob("*.json"):
            old.unlink()
        for name, entry in rec.saved.items():
            text = scrub_text(json.dumps(entry, indent=2, ensure_ascii=False), run_dir)
            (RECORDED / f"{name}.json").write_text(text + "\n")
        ws_doc = {"note": "frames of WS /sockets/events/{id} from subscribe until the run finished",
                  "kinds": [f["kind"] + (f":{f['key']}" if f.get("key") else "") for f in frames],
                  "frames": frames}
        (RECORDED / "ws_events_frames.json").write_text(
            scrub_text(json.dumps(ws_doc, indent=2, ensure_ascii=False), run_dir) + "\n")
        (RECORDED / "llm_requests.json").write_text(
            scrub_text(json.dumps(llm_requests, indent=2, ensure_ascii=False), run_dir) + "\n")

        manifest = {
            "conversation_id": cid,
            "conversation_dir_files": written,
            "event_count": n_events,
            "persistence_dir_files": persistence_listing,
            "session_api_key": SESSION_KEY,
            "secret_key": SECRET_KEY,
            "profile_api_key": PROFILE_API_KEY,
            "placeholders": {TOK_CONVERSATIONS: "OH_CONVERSATIONS_PATH", TOK_WORKSPACE: "workspace working_dir",
                             TOK_PERSISTENCE: "OH_PERSISTENCE_DIR", TOK_RUN: "server working directory",
                             TOK_MOCK: "scripted mock LLM base URL (without /v1)"},
            "reference_versions": {"openhands-agent-server": "1.58.2", "openhands-sdk": "1.58.2",
                                   "openhands-tools": "1.58.2"},
            "server_ready_seconds": round(t_ready, 1),
        }
        (FIXTURES / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        print(f"wrote {len(written)} conversation files, profile, {len(rec.saved) + 2} recordings", flush=True)
    finally:
        server.stop()
        mock.shutdown()
        if not args.keep_run_dir:
            shutil.rmtree(run_dir, ignore_errors=True)
        else:
            print(f"kept {run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

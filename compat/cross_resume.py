#!/usr/bin/env python3
"""A conversation directory written by OUR agent-server resumes in the REFERENCE server.

Run with the compat venv's interpreter (``compat/setup.sh`` builds it)::

    CARGO_TARGET_DIR=/work/target $VENV/bin/python compat/cross_resume.py [--keep]

Steps:

1. starts ``openhands mock-llm`` with ``scripts/cross_resume.json`` (terminal
   ``echo hi > x.txt``, ``finish`` "done", then ``finish`` "continued");
2. starts our ``openhands-agent-server`` with a fixed ``OH_SECRET_KEY`` and a
   conversations dir D, creates a conversation, sends the task with
   ``run: true``, waits for ``finished``, records its events, stops the server
   (SIGTERM, waits for the exit);
3. starts the reference ``python -m openhands.agent_server`` (1.58.2) with the
   SAME secret key and the same D, and checks that it serves the conversation
   (``finished``, every event id and kind back), then continues it with a
   follow-up message: the mock must see ``Authorization: Bearer mock-key``
   (the key decrypted from our ``base_state.json``) and the history we wrote,
   and the final response must be "continued";
4. stops every process and tmux server it started.

Exits 0 on success, 1 with a message naming the failed check otherwise
(2 when a prerequisite such as a binary is missing). Every wait has a timeout
and the whole run is bounded by ``--deadline`` seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import requests

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from refserver import free_port, reference_env  # noqa: E402

SESSION_KEY = "compat-key"
SECRET_KEY = "cross-resume-secret-key-0123456789"
LLM_KEY = "mock-key"
TASK = "Please create x.txt containing hi, then finish."
FOLLOW_UP = "Please continue."
HTTP_TIMEOUT = 30


class CheckFailed(Exception):
    """A compatibility check did not hold."""


class Deadline(Exception):
    """The whole run took longer than allowed."""


def log(msg: str) -> None:
    print(f"cross_resume: {msg}", flush=True)


class Proc:
    """A child process in its own session, with its log file."""

    def __init__(self, name: str, argv: list[str], env: dict, cwd: Path, log_path: Path):
        self.name = name
        self.log_path = log_path
        with open(log_path, "wb") as out:
            self.p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                      start_new_session=True)

    def alive(self) -> bool:
        return self.p.poll() is None

    def tail(self, n: int = 40) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-n:])

    def stop(self, timeout: float = 20) -> int | None:
        """SIGTERM the process, wait for it; SIGKILL its group when it does not exit."""
        if self.p.poll() is None:
            try:
                os.kill(self.p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                log(f"{self.name} ignored SIGTERM for {timeout}s; killing its process group")
                try:
                    os.killpg(self.p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.p.wait(timeout=10)
        # Anything else left in its process group (e.g. shells) goes too.
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return self.p.returncode


def wait_http(url: str, proc: Proc, timeout: float) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if not proc.alive():
            raise CheckFailed(f"{proc.name} exited ({proc.p.returncode}) before answering {url}; "
                              f"last log lines:\n{proc.tail()}")
        try:
            if requests.get(url, timeout=2).status_code == 200:
                return time.monotonic() - t0
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise CheckFailed(f"{proc.name} did not answer {url} within {timeout}s; last log lines:\n{proc.tail()}")


def kill_tmux(tmux_dir: Path) -> None:
    """Kill the tmux servers whose sockets live under a private TMUX_TMPDIR."""
    for sock in sorted(tmux_dir.glob("tmux-*/*")) if tmux_dir.is_dir() else []:
        if sock.is_socket():
            subprocess.run(["tmux", "-S", str(sock), "kill-server"], capture_output=True, timeout=10)


class Api:
    def __init__(self, base: str, name: str):
        self.base = base
        self.name = name
        self.s = requests.Session()
        self.s.headers["X-Session-API-Key"] = SESSION_KEY

    def call(self, method: str, path: str, want: tuple[int, ...] = (200,), **kw) -> requests.Response:
        r = self.s.request(method, self.base + path, timeout=HTTP_TIMEOUT, **kw)
        if r.status_code not in want:
            raise CheckFailed(f"{self.name}: {method} {path} -> {r.status_code} (wanted {want}): {r.text[:2000]}")
        return r

    def info(self, cid: str) -> dict:
        return self.call("GET", f"/api/conversations/{cid}").json()

    def events(self, cid: str) -> list[dict]:
        body = self.call("GET", f"/api/conversations/{cid}/events/search", params={"limit": 100}).json()
        if body.get("next_page_id"):
            raise CheckFailed(f"{self.name}: more than 100 events, next_page_id={body['next_page_id']!r}")
        return body["items"]

    def final_response(self, cid: str) -> str:
        return self.call("GET", f"/api/conversations/{cid}/agent_final_response").json().get("response")

    def wait_finished(self, cid: str, timeout: float, until=None) -> dict:
        """Poll until execution_status is finished (and ``until(info)`` holds); fail fast on error/stuck."""
        deadline = time.monotonic() + timeout
        info: dict = {}
        while time.monotonic() < deadline:
            info = self.info(cid)
            status = info.get("execution_status")
            if status in ("error", "stuck"):
                raise CheckFailed(f"{self.name}: conversation {cid} reached {status!r}")
            if status == "finished" and (until is None or until(info)):
                return info
            time.sleep(0.25)
        raise CheckFailed(f"{self.name}: conversation {cid} not finished within {timeout}s "
                          f"(last execution_status {info.get('execution_status')!r})")

    def wait_events_settle(self, cid: str, quiet: float = 1.0, timeout: float = 15) -> int:
        deadline = time.monotonic() + timeout
        last, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            n = self.call("GET", f"/api/conversations/{cid}/events/count").json()
            if n != last:
                last, since = n, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return n
            time.sleep(0.2)
        return last


def llm_config(mock_url: str) -> dict:
    return {"model": "openai/mock-model", "base_url": f"{mock_url}/v1", "api_key": LLM_KEY,
            "api_mode": "chat", "num_retries": 0}


def user_message(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}], "run": True}


def our_env(tmp: Path, ours: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    env.pop("SESSION_API_KEY", None)
    env.update({
        "OH_SESSION_API_KEYS_0": SESSION_KEY,
        "OH_SECRET_KEY": SECRET_KEY,
        "OH_ENABLE_VSCODE": "0",
        "OH_PRELOAD_TOOLS": "0",
        "OH_ENABLE_BROWSER": "0",
        "OH_LEASE_TTL_SECONDS": "0",
        "OH_CONVERSATIONS_PATH": str(tmp / "conversations"),
        "OH_WORKSPACE_PATH": str(tmp / "project"),
        "OH_BASH_EVENTS_DIR": str(ours / "bash_events"),
        "OH_PERSISTENCE_DIR": str(ours / "persistence"),
        "OPENHANDS_AGENT_SERVER_CONFIG_PATH": str(ours / "openhands_agent_server_config.json"),
        "TMUX_TMPDIR": str(ours / "tmux"),
        "DO_NOT_TRACK": "1",
    })
    return env


def run(tmp: Path, bin_dir: Path, started: list[Proc]) -> None:
    conversations = tmp / "conversations"
    project = tmp / "project"
    ours, ref = tmp / "ours", tmp / "ref"
    for d in (conversations, project):
        d.mkdir(parents=True)
    for base in (ours, ref):
        for sub in ("bash_events", "persistence", "tmux"):
            (base / sub).mkdir(parents=True)

    # 1. mock LLM
    mock_port = free_port()
    mock_url = f"http://127.0.0.1:{mock_port}"
    mock = Proc("mock LLM", [str(bin_dir / "openhands"), "mock-llm", "--script",
                             str(HERE / "scripts" / "cross_resume.json"), "--port", str(mock_port)],
                dict(os.environ), tmp, tmp / "mock.log")
    started.append(mock)
    wait_http(f"{mock_url}/health", mock, 30)

    # 2. our server writes the conversation
    port = free_port()
    server = Proc("our agent-server", [str(bin_dir / "openhands-agent-server"), "--host", "127.0.0.1",
                                       "--port", str(port)], our_env(tmp, ours), tmp, tmp / "ours.log")
    started.append(server)
    took = wait_http(f"http://127.0.0.1:{port}/ready", server, 60)
    log(f"our server ready after {took:.1f}s")
    api = Api(f"http://127.0.0.1:{port}", "our server")
    create = {
        "agent": {"kind": "Agent", "llm": llm_config(mock_url),
                  "tools": [{"name": "terminal"}, {"name": "file_editor"}, {"name": "task_tracker"}]},
        "workspace": {"kind": "LocalWorkspace", "working_dir": str(project)},
    }
    cid = api.call("POST", "/api/conversations", want=(200, 201), json=create).json()["id"]
    hex_id = uuid.UUID(cid).hex
    api.call("POST", f"/api/conversations/{cid}/events", json=user_message(TASK))
    api.wait_finished(cid, 60)
    api.wait_events_settle(cid)
    our_events = api.events(cid)
    our_final = api.final_response(cid)
    if our_final != "done":
        raise CheckFailed(f"our server: agent_final_response {our_final!r}, expected 'done'")
    x_txt = project / "x.txt"
    if not x_txt.is_file() or x_txt.read_text(errors="replace").strip() != "hi":
        raise CheckFailed("our server: x.txt with 'hi' was not written in the workspace")
    log(f"our server finished conversation {cid} with {len(our_events)} events: "
        f"{[e.get('kind') for e in our_events]}")
    rc = server.stop()
    started.remove(server)
    kill_tmux(ours / "tmux")
    log(f"our server stopped (exit {rc})")

    conv_dir = conversations / hex_id
    if not (conv_dir / "base_state.json").is_file():
        raise CheckFailed(f"our server left no {conv_dir}/base_state.json; dir holds "
                          f"{sorted(p.name for p in conversations.iterdir())}")
    base_state = (conv_dir / "base_state.json").read_text()
    if LLM_KEY in base_state:
        raise CheckFailed(f"{conv_dir}/base_state.json holds the LLM api_key in clear text")
    on_disk = sorted((conv_dir / "events").glob("*.json"))
    if len(on_disk) != len(our_events):
        raise CheckFailed(f"our server served {len(our_events)} events but wrote {len(on_disk)} files "
                          f"under {conv_dir}/events")

    r = requests.delete(f"{mock_url}/_mock/requests", timeout=HTTP_TIMEOUT)
    if r.status_code != 200:
        raise CheckFailed(f"mock: DELETE /_mock/requests -> {r.status_code}: {r.text[:500]}")

    # 3. the reference reads and continues it
    ref_port = free_port()
    env = reference_env(ref, session_key=SESSION_KEY, secret_key=SECRET_KEY)
    env["OH_CONVERSATIONS_PATH"] = str(conversations)
    env["OH_WORKSPACE_PATH"] = str(project)
    reference = Proc("reference server", [sys.executable, "-m", "openhands.agent_server", "--host", "127.0.0.1",
                                          "--port", str(ref_port)], env, ref, tmp / "reference.log")
    started.append(reference)
    took = wait_http(f"http://127.0.0.1:{ref_port}/ready", reference, 180)
    log(f"reference server ready after {took:.1f}s")
    rapi = Api(f"http://127.0.0.1:{ref_port}", "reference server")
    try:
        info = rapi.info(cid)
        if info.get("execution_status") != "finished":
            raise CheckFailed(f"reference: GET /api/conversations/{cid} execution_status "
                              f"{info.get('execution_status')!r}, expected 'finished'")
        ref_events = rapi.events(cid)
        ours_ids = [(e["id"], e.get("kind")) for e in our_events]
        ref_ids = [(e["id"], e.get("kind")) for e in ref_events]
        if ours_ids != ref_ids:
            missing = [x for x in ours_ids if x not in ref_ids]
            extra = [x for x in ref_ids if x not in ours_ids]
            raise CheckFailed(f"reference: events/search differs from what we wrote: "
                              f"{len(ref_ids)} vs our {len(ours_ids)}; missing {missing}; extra {extra}")
        log(f"reference serves all {len(ref_events)} events (same ids and kinds, same order)")

        rapi.call("POST", f"/api/conversations/{cid}/events", json=user_message(FOLLOW_UP))
        rapi.wait_finished(cid, 90, until=lambda _info: rapi.final_response(cid) == "continued")
        after = rapi.events(cid)
        if [(e["id"], e.get("kind")) for e in after[: len(ours_ids)]] != ours_ids:
            raise CheckFailed("reference: the events we wrote are no longer the head of the history after the follow-up")
    except CheckFailed as e:
        raise CheckFailed(f"{e}\n---- reference log tail ----\n{reference.tail(60)}") from None

    reqs = requests.get(f"{mock_url}/_mock/requests", timeout=HTTP_TIMEOUT).json()
    completions = [q for q in reqs if q.get("path", "").endswith("/chat/completions")]
    if not completions:
        raise CheckFailed(f"mock: the reference sent no chat completion (requests: "
                          f"{[q.get('path') for q in reqs]})")
    auths = {q.get("headers", {}).get("authorization") for q in completions}
    if auths != {f"Bearer {LLM_KEY}"}:
        raise CheckFailed(f"mock: the reference sent Authorization {sorted(map(str, auths))}, "
                          f"expected only 'Bearer {LLM_KEY}' (key decrypted from our base_state.json)")
    with_tools = [q for q in completions if q.get("body", {}).get("tools")]
    if not with_tools:
        raise CheckFailed("mock: the reference sent no agent step (no request with tools)")
    body = json.dumps(with_tools[-1]["body"])
    for needle in ("echo hi > x.txt", TASK, FOLLOW_UP):
        if needle not in body:
            raise CheckFailed(f"mock: the reference's step request lacks {needle!r} (our history was not continued)")
    log(f"reference continued the conversation: {len(completions)} LLM request(s) with "
        f"'Bearer {LLM_KEY}', final response 'continued', {len(after)} events")

    rc = reference.stop()
    started.remove(reference)
    kill_tmux(ref / "tmux")
    log(f"reference server stopped (exit {rc})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (logs, conversations)")
    ap.add_argument("--deadline", type=int, default=420, help="whole-run limit in seconds (default 420)")
    args = ap.parse_args()

    bin_dir = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "debug"
    for b in ("openhands", "openhands-agent-server"):
        if not os.access(bin_dir / b, os.X_OK):
            print(f"cross_resume: missing {bin_dir / b} "
                  f"(cargo build --bins -p openhands-agent-server -p openhands-cli)", file=sys.stderr)
            return 2

    def on_alarm(_sig, _frame):
        raise Deadline(f"run exceeded {args.deadline}s")

    def on_term(sig, _frame):
        raise KeyboardInterrupt(f"signal {sig}")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, on_term)
    signal.alarm(args.deadline)

    tmp = Path(tempfile.mkdtemp(prefix="ohcross-", dir="/tmp"))
    started: list[Proc] = []
    t0 = time.monotonic()
    status = 1
    try:
        run(tmp, bin_dir, started)
        status = 0
    except (CheckFailed, Deadline) as e:
        print(f"cross_resume: FAILED: {e}", file=sys.stderr)
    except KeyboardInterrupt as e:
        print(f"cross_resume: interrupted ({e})", file=sys.stderr)
        status = 130
    finally:
        signal.alarm(0)
        for proc in reversed(started):
            proc.stop()
        for sub in ("ours", "ref"):
            kill_tmux(tmp / sub / "tmux")
        if status != 0:
            for name in ("ours.log", "reference.log", "mock.log"):
                p = tmp / name
                if p.is_file():
                    lines = p.read_text(errors="replace").splitlines()[-30:]
                    print(f"---- {name} (last lines) ----\n" + "\n".join(lines), file=sys.stderr)
        if args.keep or os.environ.get("COMPAT_KEEP") == "1":
            print(f"cross_resume: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if status == 0:
        print(f"cross_resume: OK in {time.monotonic() - t0:.1f}s", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())

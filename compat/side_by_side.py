#!/usr/bin/env python3
"""The same requests to OUR agent-server and to the REFERENCE server, answers compared.

Run with the compat venv's interpreter (``compat/setup.sh`` builds it)::

    CARGO_TARGET_DIR=/work/target $VENV/bin/python compat/side_by_side.py [--keep]

Both servers run at once on one shared fixture directory (a git repository
with work-tree changes, a plain directory, a small web site), so paths in
answers are identical. Checked, request by request: status code, the
``detail`` of errors, the headers that carry meaning, and the body in the
form that must match (patch bytes, tar member names and manifest, served
file bytes). Covered routes: ``GET /api/file/archive`` (both formats, the
errors), ``GET /api/conversations/{id}/workspace/...`` and the settings
sequence (``GET|PATCH /api/settings``, ``X-Expose-Secrets``, the two form
schemas; time stamps, Fernet tokens and the field named after
"Settings validation failed" are normalized).

Exits 0 when every answer matches, 1 listing the differences, 2 when a
prerequisite (a binary, the reference) is missing.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import requests

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from refserver import ReferenceServer, free_port  # noqa: E402

KEY = "compat-key"
HTTP_TIMEOUT = 60


def git(cwd: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=T", *args],
        cwd=cwd, capture_output=True, text=True, timeout=30, check=True,
    )
    return out.stdout.strip()


def build_fixture(root: Path) -> dict[str, Path]:
    """A workspace holding one repository with changes, a plain dir and a site."""
    ws = root / "ws"
    repo = ws / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "kept.txt").write_text("one\n")
    (repo / "gone.txt").write_text("bye\n")
    (repo / "node_modules").mkdir()
    (repo / "node_modules" / "dep.js").write_text("tracked dependency\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "base")
    (repo / "kept.txt").write_text("one\ntwo\n")
    (repo / "gone.txt").unlink()
    (repo / "new.txt").write_text("fresh\n")
    (repo / "blob.bin").write_bytes(bytes([0, 159, 146, 150, 1, 2]))
    (repo / "node_modules" / "dep.js").write_text("changed dependency\n")
    plain = root / "plain"
    (plain / "src").mkdir(parents=True)
    (plain / "empty").mkdir()
    (plain / "src" / "a.txt").write_text("alpha")
    (plain / "src" / "b.bin").write_text("binary-ish")
    (plain / "__pycache__").mkdir()
    (plain / "__pycache__" / "m.pyc").write_text("x")
    (ws / "index.html").write_text("<h1>home</h1>")
    (ws / "docs").mkdir()
    (ws / "docs" / "style.css").write_text("body{}")
    (ws / "notes").write_text("plain notes")
    return {"ws": ws, "repo": repo, "plain": plain, "root": root}


class OurServer:
    """Our ``openhands-agent-server`` binary in a private run directory."""

    def __init__(self, binary: Path, run_dir: Path):
        self.binary = binary
        self.run_dir = run_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60.0) -> None:
        for sub in ("conversations", "project", "bash_events", "persistence", "tmux"):
            (self.run_dir / sub).mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
        env.update({
            "OH_SESSION_API_KEYS_0": KEY,
            "OH_SECRET_KEY": "side-by-side-secret-key-0123456789",
            "OH_CONVERSATIONS_PATH": str(self.run_dir / "conversations"),
            "OH_WORKSPACE_PATH": str(self.run_dir / "project"),
            "OH_BASH_EVENTS_DIR": str(self.run_dir / "bash_events"),
            "OH_PERSISTENCE_DIR": str(self.run_dir / "persistence"),
            "OPENHANDS_AGENT_SERVER_CONFIG_PATH": str(self.run_dir / "config.json"),
            "TMUX_TMPDIR": str(self.run_dir / "tmux"),
            "OH_ENABLE_VSCODE": "0",  # as refserver.py starts the reference
        })
        log = open(self.run_dir / "server.log", "wb")
        self.proc = subprocess.Popen(
            [str(self.binary), "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=self.run_dir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        log.close()
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"our server exited with {self.proc.returncode}")
            try:
                if requests.get(f"{self.url}/ready", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise TimeoutError("our server did not become ready")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


def tar_view(body: bytes) -> dict:
    """Member names (directories marked with a slash) and the manifest."""
    names, manifest = [], None
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        for m in tar.getmembers():
            names.append(m.name + ("/" if m.isdir() else ""))
            if m.name.endswith("/archive_manifest.json"):
                manifest = json.loads(tar.extractfile(m).read())
    return {"members": sorted(names), "manifest": manifest}


MEANINGFUL_HEADERS = (
    "content-type", "content-disposition", "x-archive-base-commit", "x-archive-base-ref",
    "x-archive-branch", "x-archive-head-commit", "x-archive-repo-root", "x-archive-repo-remote",
)


def view(resp: requests.Response, body_kind: str) -> dict:
    out: dict = {"status": resp.status_code}
    if resp.status_code >= 400:
        detail = resp.json().get("detail")
        if isinstance(detail, list):  # pydantic errors: type and location
            detail = [{"type": d.get("type"), "loc": d.get("loc")} for d in detail]
        out["detail"] = detail
        return out
    out["headers"] = {h: resp.headers.get(h) for h in MEANINGFUL_HEADERS if h in resp.headers}
    if body_kind == "tar":
        out["body"] = tar_view(resp.content)
    else:
        out["body"] = resp.content.decode("utf-8", "replace")
    return out


def create_conversation(url: str, ws: Path) -> str:
    body = {
        "agent": {"kind": "Agent", "llm": {"model": "openai/mock-model", "api_key": "mock-key",
                                            "base_url": "http://127.0.0.1:9"}, "tools": []},
        "workspace": {"kind": "LocalWorkspace", "working_dir": str(ws)},
    }
    r = requests.post(f"{url}/api/conversations", json=body, headers={"X-Session-API-Key": KEY},
                      timeout=HTTP_TIMEOUT)
    r.raise_for_status()
    return r.json()["id"]


def requests_to_compare(fx: dict[str, Path]) -> list[tuple[str, str, dict, str]]:
    """(name, path, query, body kind) — `{cid}` is the conversation of each server."""
    repo, plain, ws = str(fx["repo"]), str(fx["plain"]), str(fx["ws"])
    return [
        ("delta of the repository found below the workspace", "/api/file/archive", {"path": ws}, "text"),
        ("delta of the repository itself", "/api/file/archive", {"path": repo}, "text"),
        ("delta without the default excludes", "/api/file/archive",
         {"path": repo, "use_default_excludes": "false"}, "text"),
        ("delta against an explicit base", "/api/file/archive", {"path": repo, "base_ref": "HEAD"}, "text"),
        ("tarball of a plain directory", "/api/file/archive",
         {"path": plain, "format": "tar.gz", "exclude": ["*.bin"]}, "tar"),
        ("tarball without default excludes", "/api/file/archive",
         {"path": plain, "format": "tar.gz", "use_default_excludes": "0"}, "tar"),
        ("delta of a non-repository", "/api/file/archive", {"path": plain}, "text"),
        ("unknown base", "/api/file/archive", {"path": repo, "base_ref": "nope"}, "text"),
        ("base that looks like an option", "/api/file/archive", {"path": repo, "base_ref": "-x"}, "text"),
        ("relative path", "/api/file/archive", {"path": "rel/dir"}, "text"),
        ("missing directory", "/api/file/archive", {"path": str(fx["root"] / "missing")}, "text"),
        ("a file, not a directory", "/api/file/archive", {"path": str(fx["ws"] / "notes")}, "text"),
        ("unknown format", "/api/file/archive", {"path": plain, "format": "zip"}, "text"),
        ("no path", "/api/file/archive", {}, "text"),
        ("workspace root page", "/api/conversations/{cid}/workspace", {}, "text"),
        ("workspace stylesheet", "/api/conversations/{cid}/workspace/docs/style.css", {}, "text"),
        ("workspace file without extension", "/api/conversations/{cid}/workspace/notes", {}, "text"),
        ("workspace directory without index", "/api/conversations/{cid}/workspace/docs", {}, "text"),
        ("workspace missing file", "/api/conversations/{cid}/workspace/nope.html", {}, "text"),
        ("workspace path leaving it", "/api/conversations/{cid}/workspace/docs/..%2F..%2Fplain%2Fsrc%2Fa.txt",
         {}, "text"),
    ]


SETTINGS_STEPS: list[tuple[str, str, str, object, dict]] = [
    ("fresh settings", "GET", "/api/settings", None, {}),
    ("empty patch", "PATCH", "/api/settings", {}, {}),
    ("diff of the wrong type", "PATCH", "/api/settings", {"agent_settings_diff": 5}, {}),
    ("llm and conversation diff", "PATCH", "/api/settings",
     {"agent_settings_diff": {"llm": {"model": "openai/gpt-4o", "api_key": "sk-side", "timeout": "45"}},
      "conversation_settings_diff": {"max_iterations": 42}, "misc_settings_diff": {"ui": {"a": 1, "b": 2}}}, {}),
    ("nested null unsets a misc entry", "PATCH", "/api/settings", {"misc_settings_diff": {"ui": {"a": None}}}, {}),
    ("unknown keys are dropped", "PATCH", "/api/settings", {"agent_settings_diff": {"bogus": 1, "llm": {"bogus": 2}}}, {}),
    ("bad integer", "PATCH", "/api/settings", {"agent_settings_diff": {"tool_concurrency_limit": "many"}}, {}),
    ("bound violated", "PATCH", "/api/settings", {"agent_settings_diff": {"condenser": {"max_size": -1}}}, {}),
    ("top-level null in conversation diff", "PATCH", "/api/settings",
     {"conversation_settings_diff": {"confirmation_mode": None}}, {}),
    ("no-op condenser", "PATCH", "/api/settings", {"agent_settings_diff": {"condenser": {"condenser_kind": "no_op"}}}, {}),
    ("bad profile name", "PATCH", "/api/settings", {"active_profile": "bad name"}, {}),
    ("unknown profile", "PATCH", "/api/settings", {"active_profile": "nope"}, {}),
    ("unknown agent profile", "PATCH", "/api/settings",
     {"active_agent_profile_id": "8f0c2b7e-1d2a-4c3b-9e4f-5a6b7c8d9e0f"}, {}),
    ("plaintext exposure", "GET", "/api/settings", None, {"X-Expose-Secrets": "plaintext"}),
    ("encrypted exposure", "GET", "/api/settings", None, {"X-Expose-Secrets": "encrypted"}),
    ("legacy exposure value", "GET", "/api/settings", None, {"X-Expose-Secrets": "true"}),
    ("bad exposure value", "GET", "/api/settings", None, {"X-Expose-Secrets": "bogus"}),
    ("switch to ACP", "PATCH", "/api/settings", {"agent_settings_diff": {"agent_kind": "acp", "acp_server": "codex"}}, {}),
    ("switch back", "PATCH", "/api/settings", {"agent_settings_diff": {"agent_kind": "openhands"}}, {}),
    ("agent schema", "GET", "/api/settings/agent-schema", None, {}),
    ("agent profiles seeded", "GET", "/api/agent-profiles", None, {}),
    ("default agent profile", "GET", "/api/agent-profiles/default", None, {}),
    ("agent profile without llm ref", "POST", "/api/agent-profiles/a1", {"bogus": 1}, {}),
    ("agent profile saved", "POST", "/api/agent-profiles/a1", {"llm_profile_ref": "x", "secret_refs": ["S"]}, {}),
    ("agent profile overwritten", "POST", "/api/agent-profiles/a1", {"llm_profile_ref": "y"}, {}),
    ("agent profile read", "GET", "/api/agent-profiles/a1", None, {}),
    ("agent profile bad acp server", "POST", "/api/agent-profiles/a2", {"agent_kind": "acp", "acp_server": "nope"}, {}),
    ("agent profile rename onto default", "POST", "/api/agent-profiles/a1/rename", {"new_name": "default"}, {}),
    ("agent profile renamed", "POST", "/api/agent-profiles/a1/rename", {"new_name": "b1"}, {}),
    ("agent profile unknown id", "POST", "/api/agent-profiles/nope/activate", None, {}),
    ("agent profile deleted", "DELETE", "/api/agent-profiles/b1", None, {}),
    ("meta-profile without route", "POST", "/api/meta-profiles/m1", {"classifier_model": "c"}, {}),
    ("meta-profile saved", "POST", "/api/meta-profiles/m1",
     {"classifier_model": "c", "classes": [{"description": "ui", "model": "vis"}]}, {}),
    ("meta-profiles listed", "GET", "/api/meta-profiles", None, {}),
    ("meta-profile activated", "POST", "/api/meta-profiles/m1/activate", None, {}),
    ("settings with routing", "GET", "/api/settings", None, {}),
    ("meta-profile deleted", "DELETE", "/api/meta-profiles/m1", None, {}),
    ("settings after routing", "GET", "/api/settings", None, {}),
    ("no provider connections", "GET", "/api/llm/provider-connections", None, {}),
    ("connection without key", "POST", "/api/llm/provider-connections", {"display_name": "T"}, {}),
    ("connection with a redacted key", "POST", "/api/llm/provider-connections",
     {"display_name": "T", "api_key": "**********"}, {}),
    ("connection with an extra field", "POST", "/api/llm/provider-connections",
     {"display_name": "T", "api_key": "k", "bogus": 1}, {}),
    ("unknown connection patched", "PATCH", "/api/llm/provider-connections/nope", {"provider": "x"}, {}),
    ("unknown connection deleted", "DELETE", "/api/llm/provider-connections/nope", None, {}),
    ("conversation schema", "GET", "/api/settings/conversation-schema", None, {}),
    ("no saved workspaces", "GET", "/api/workspaces", None, {}),
    ("workspaces added twice", "POST", "/api/workspaces",
     {"workspaces": [{"id": "/w/a", "name": "a", "path": "/w/a", "parentPath": "/w"},
                     {"id": "/w/a", "name": "a", "path": "/w/a"}, {"id": "/b", "name": "b", "path": "/b"}]}, {}),
    ("workspace with an empty id", "POST", "/api/workspaces", {"workspaces": [{"id": "", "name": "n", "path": "/x"}]}, {}),
    ("workspace parent added", "POST", "/api/workspaces/parents", {"parents": [{"id": "/w", "name": "w", "path": "/w"}]}, {}),
    ("unknown workspace deleted", "DELETE", "/api/workspaces?path=%2Fnope", None, {}),
    ("workspace deleted", "DELETE", "/api/workspaces?path=%2Fb", None, {}),
    ("unknown workspace parent deleted", "DELETE", "/api/workspaces/parents?path=%2Fnope", None, {}),
    ("workspace delete without path", "DELETE", "/api/workspaces", None, {}),
    ("saved workspaces", "GET", "/api/workspaces", None, {}),
    ("vscode status", "GET", "/api/vscode/status", None, {}),
    ("vscode url", "GET", "/api/vscode/url", None, {}),
    ("subscription models", "GET", "/api/llm/subscription/openai/models", None, {}),
    ("subscription status", "GET", "/api/llm/subscription/openai/status", None, {}),
    ("subscription poll of an unknown login", "POST", "/api/llm/subscription/openai/device/poll",
     {"device_code": "nope"}, {}),
    ("subscription poll without a code", "POST", "/api/llm/subscription/openai/device/poll", {}, {}),
    ("subscription logout", "POST", "/api/llm/subscription/openai/logout", None, {}),
    ("repository search without a token", "GET", "/api/git/repositories/search?provider=github", None, {}),
    ("repository search at gitlab", "GET", "/api/git/repositories/search?provider=gitlab", None, {}),
    ("repository search at an unknown provider", "GET", "/api/git/repositories/search?provider=svn", None, {}),
    ("repository search limit too high", "GET", "/api/git/repositories/search?provider=github&limit=101", None, {}),
    ("unknown agent profile materialized", "POST", "/api/agent-profiles/nope/materialize", None, {}),
]


def settings_view(resp: requests.Response) -> dict:
    """Status and body, with what legitimately differs normalized."""
    out: dict = {"status": resp.status_code}
    body = resp.json()
    if resp.status_code >= 400:
        detail = body.get("detail")
        if isinstance(detail, list):
            detail = [{"type": d.get("type"), "loc": d.get("loc")} for d in detail]
        elif isinstance(detail, str) and len(detail) > 60 and "with id '" in detail:
            detail = detail.split("'")[0]
        elif isinstance(detail, str) and detail.startswith("Settings validation failed"):
            detail = "Settings validation failed"  # ours also names the field
        out["detail"] = detail
        return out

    def norm(v):
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()
                    if k not in ("current_datetime", "description", "acp_file_secrets")}
        if isinstance(v, list):
            return [norm(x) for x in v]
        if isinstance(v, str) and v.startswith("gAAAA"):
            return "<fernet token>"
        if isinstance(v, str) and len(v) == 36 and v.count("-") == 4:
            return "<uuid>"
        return v

    out["body"] = norm(body)
    return out


def compare_settings(urls: list[str], failures: list[str]) -> None:
    for name, method, path, body, headers in SETTINGS_STEPS:
        answers = []
        for url in urls:
            resp = requests.request(method, url + path, json=body,
                                    headers={"X-Session-API-Key": KEY, **headers}, timeout=HTTP_TIMEOUT)
            answers.append(settings_view(resp))
        if answers[0] != answers[1]:
            failures.append(f"settings: {name}:\n  ours:      {answers[0]}\n  reference: {answers[1]}")
        else:
            print(f"same: settings: {name} ({answers[0]['status']})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    binary = target / "debug" / "openhands-agent-server"
    if not binary.is_file():
        print(f"missing {binary} (cargo build -p openhands-agent-server)", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="ohside-"))
    fx = build_fixture(tmp / "fixture")
    ours = OurServer(binary, tmp / "ours")
    reference = ReferenceServer(tmp / "reference")
    failures: list[str] = []
    try:
        ours.start()
        reference.start()
        cids = {ours.url: create_conversation(ours.url, fx["ws"]),
                reference.url: create_conversation(reference.url, fx["ws"])}
        for name, path, query, kind in requests_to_compare(fx):
            answers = []
            for url in (ours.url, reference.url):
                full = url + path.replace("{cid}", cids[url])
                resp = requests.get(full, params=query, headers={"X-Session-API-Key": KEY},
                                    timeout=HTTP_TIMEOUT)
                answers.append(view(resp, kind))
            if answers[0] != answers[1]:
                failures.append(f"{name}:\n  ours:      {answers[0]}\n  reference: {answers[1]}")
            else:
                print(f"same: {name} ({answers[0]['status']})")
        compare_settings([ours.url, reference.url], failures)
    finally:
        ours.stop()
        reference.stop()
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("DIFFERENT ANSWERS:\n" + "\n".join(failures), file=sys.stderr)
        return 1
    print("side by side: every answer matches the reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())

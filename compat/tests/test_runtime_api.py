"""The reference SDK's own ``APIRemoteWorkspace`` against our control plane's
self-hosted OpenHands Runtime API (``/v1/runtime``), docker sandboxes.

The test starts ``openhands-control serve`` of its own (``OH_COMPAT_CONTROL_BIN``,
exported by ``compat/run.sh``) with ``OH_CONTROL_SANDBOX=docker``, builds the
sandbox image from our agent server, makes a tenant and a workspace API key
with the admin commands, and then drives everything through the reference
client: start, ``execute_command``, a ``RemoteConversation`` to ``finished``
with the scripted mock LLM, re-attach by session id, pause/resume keeping
files, stop (then ``GET /sessions/{id}`` is 404) and a wrong key (401).

Without a docker daemon the test says so loudly and is skipped.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import json
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

import openhands.tools.file_editor  # noqa: F401
import openhands.tools.task_tracker  # noqa: F401
import openhands.tools.terminal  # noqa: F401
from openhands.sdk import LLM, Agent, Conversation, Tool
from openhands.sdk.conversation.state import ConversationExecutionStatus as Status
from openhands.workspace import APIRemoteWorkspace

from conftest import MOCK_API_KEY, MOCK_MODEL

IMAGE = "openhands-rs/agent-server:runtime-api-compat"
SECRET = "dGVzdC1rZXktZm9yLWNvbnRyb2wtcGxhbmUtdGVzdHM="


def _docker_works() -> bool:
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _docker_gateway() -> str | None:
    """This machine's address on docker's default bridge (where containers reach it)."""
    try:
        out = subprocess.run(
            ["docker", "network", "inspect", "bridge", "--format", "{{range .IPAM.Config}}{{.Gateway}} {{.Subnet}}\n{{end}}"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    for line in out.stdout.splitlines():
        fields = line.split()
        if len(fields) == 2:
            return fields[0]
        if len(fields) == 1:
            # No gateway named (a daemon that found its bridge already set
            # up): docker gives the bridge the subnet's first address.
            network = ipaddress.ip_network(fields[0], strict=False)
            return str(network.network_address + 1)
    return None


@pytest.fixture(scope="module")
def container_mock_url():
    """The scripted mock LLM where the sandboxes' agent servers reach it.

    Docker sandboxes run on a network of their own that cannot reach this
    machine's loopback, where the suite's mock listens; this one, with the
    suite's script, listens on the docker bridge's gateway address.
    """
    gateway = _docker_gateway()
    if gateway is None:
        print("\n*** SKIPPED: no docker bridge gateway (`docker network inspect bridge` failed).\n")
        pytest.skip("no docker bridge")
    compat = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("py_mock_llm", compat / "py_mock_llm.py")
    assert spec is not None and spec.loader is not None
    mock = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mock)
    script_path = Path(os.environ.get("COMPAT_SCRIPT") or compat / "scripts" / "compat.json")
    server = mock.start_in_thread(json.loads(script_path.read_text()), host=gateway, port=0)
    try:
        yield f"http://{gateway}:{server.server_address[1]}"
    finally:
        server.shutdown()


class ControlPlane:
    """``openhands-control serve`` on a free port with docker sandboxes."""

    def __init__(self, binary: str, agent_server: str, mock_url: str):
        self.dir = Path(tempfile.mkdtemp(prefix="ohrt-"))
        self.env = dict(os.environ)
        self.env.update(
            {
                "OH_CONTROL_SANDBOX": "docker",
                "OH_CONTROL_DOCKER_IMAGE": IMAGE,
                "OH_CONTROL_AGENT_SERVER_BIN": agent_server,
                "OH_CONTROL_SECRET_KEY": SECRET,
                "OH_CONTROL_STOP_SANDBOXES_ON_SHUTDOWN": "1",
                "LLM_MODEL": MOCK_MODEL,
                "LLM_API_KEY": MOCK_API_KEY,
                "LLM_BASE_URL": f"{mock_url}/v1",
            }
        )
        self.binary = binary
        self.args = ["--data-dir", str(self.dir / "data")]
        self.log = open(self.dir / "control.log", "w")
        self.proc = subprocess.Popen(
            [binary, "serve", "--host", "127.0.0.1", "--port", "0", *self.args],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        self.url = ""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("OPENHANDS_CONTROL_URL="):
                self.url = line.strip().split("=", 1)[1]
                break
        assert self.url, f"the control plane did not start: {self.log_text()}"

    def admin(self, *args: str) -> str:
        out = subprocess.run(
            [self.binary, *args, *self.args], env=self.env, capture_output=True, text=True, timeout=600
        )
        assert out.returncode == 0, f"openhands-control {args}: {out.stderr}"
        return out.stdout.strip()

    def log_text(self) -> str:
        return (self.dir / "control.log").read_text(errors="replace")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def control(container_mock_url: str):
    binary = os.environ.get("OH_COMPAT_CONTROL_BIN", "")
    agent_server = os.environ.get("OH_COMPAT_SERVER_BIN", "")
    if not (binary and Path(binary).is_file() and agent_server):
        pytest.skip("OH_COMPAT_CONTROL_BIN / OH_COMPAT_SERVER_BIN not set (run through compat/run.sh)")
    if not _docker_works():
        print("\n*** SKIPPED: no docker daemon answers (`docker info` failed); the Runtime API test needs one.\n")
        pytest.skip("no docker daemon")
    cp = ControlPlane(binary, agent_server, container_mock_url)
    try:
        image = cp.admin("image", "build", "--tag", IMAGE)
        assert image.startswith("sha256:"), image
        tenant = cp.tenant = cp.admin("tenant", "create", "acme")
        perms = "sandboxes:write,ai_chat:use"
        cp.admin("user", "create", "--tenant", tenant, "alice", "--permissions", perms)
        cp.key = cp.admin("key", "create", "--tenant", tenant, "--user", "alice", "--grants", perms)
        cp.read_key = cp.admin("key", "create", "--tenant", tenant, "--user", "alice", "--grants", "sandboxes:read")
        yield cp
    finally:
        cp.stop()


def _workspace(control: ControlPlane, session_id: str, **kw) -> APIRemoteWorkspace:
    return APIRemoteWorkspace(
        runtime_api_url=f"{control.url}/v1/runtime",
        runtime_api_key=control.key,
        server_image=IMAGE,
        session_id=session_id,
        # Our docker daemon has no sysbox runtime: the engine's default.
        runtime_class=None,
        startup_wait_timeout=120.0,
        **kw,
    )


def _session(control: ControlPlane, session_id: str, key: str | None = None) -> httpx.Response:
    return httpx.get(
        f"{control.url}/v1/runtime/sessions/{session_id}",
        headers={"X-API-Key": key or control.key},
        timeout=30,
    )


def test_reference_api_remote_workspace_on_our_runtime_api(control: ControlPlane, container_mock_url: str):
    session_id = f"compat-{uuid.uuid4()}"
    ws = _workspace(control, session_id)
    try:
        runtime_id = ws._runtime_id
        assert runtime_id and ws.host.startswith("http://")

        out = ws.execute_command("echo 'Hello from sandboxed environment!' && pwd")
        assert out.exit_code == 0, out
        assert "Hello from sandboxed environment!" in out.stdout
        # Without a cwd, commands run in the server's working directory: the
        # start request's `working_dir` ("/", as the client asks).
        assert out.stdout.strip().endswith("\n/")
        assert ws.execute_command("pwd", cwd="/workspace").stdout.strip() == "/workspace"

        # The runtime is one of the tenant's sandboxes (spec-003 API).
        tenant_sandboxes = httpx.get(
            f"{control.url}/v1/customer/tenants/{control.tenant}/sandboxes",
            headers={"Authorization": f"Bearer {control.key}"},
            timeout=30,
        ).json()["sandboxes"]
        assert [s["id"] for s in tenant_sandboxes if s["runtime_session_id"] == session_id] == [runtime_id]

        llm = LLM(
            model=MOCK_MODEL,
            base_url=f"{container_mock_url}/v1",
            api_key=SecretStr(MOCK_API_KEY),
            api_mode="chat",
            num_retries=0,
            usage_id="agent",
        )
        agent = Agent(llm=llm, tools=[Tool(name="terminal"), Tool(name="file_editor")])
        conv = Conversation(agent=agent, workspace=ws, visualizer=None, delete_on_close=False)
        try:
            conv.send_message("[[mock:script:two_step]] Please create x.txt containing hi, then finish.")
            conv.run(timeout=120)
            assert conv.state.execution_status == Status.FINISHED
        finally:
            conv.close()
        assert ws.execute_command("cat /workspace/x.txt").stdout.strip() == "hi"

        # The same session id attaches to the same runtime.
        again = _workspace(control, session_id, keep_alive=True)
        assert again._runtime_id == runtime_id
        assert again.host == ws.host

        # Pause and resume keep the files.
        ws.pause()
        assert _session(control, session_id).json()["status"] == "paused"
        ws.resume()
        assert _session(control, session_id).json()["pod_status"] == "ready"
        assert ws.execute_command("cat x.txt", cwd="/workspace").stdout.strip() == "hi"

        # A paused runtime is resumed by attaching to its session.
        ws.pause()
        third = _workspace(control, session_id, keep_alive=True)
        assert third._runtime_id == runtime_id
        assert third.execute_command("cat /workspace/x.txt").stdout.strip() == "hi"
    finally:
        ws.cleanup()
    # After stop the session is gone.
    assert _session(control, session_id).status_code == 404


def test_a_wrong_key_is_refused_and_starts_nothing(control: ControlPlane):
    session_id = f"compat-{uuid.uuid4()}"
    with pytest.raises(httpx.HTTPStatusError) as err:
        APIRemoteWorkspace(
            runtime_api_url=f"{control.url}/v1/runtime",
            runtime_api_key="wrong-key",
            server_image=IMAGE,
            session_id=session_id,
            runtime_class=None,
        )
    assert err.value.response.status_code == 401
    # A key without sandboxes:write is refused too.
    with pytest.raises(httpx.HTTPStatusError) as err:
        APIRemoteWorkspace(
            runtime_api_url=f"{control.url}/v1/runtime",
            runtime_api_key=control.read_key,
            server_image=IMAGE,
            session_id=session_id,
            runtime_class=None,
        )
    assert err.value.response.status_code == 403
    assert _session(control, session_id).status_code == 404

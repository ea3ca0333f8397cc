"""Shared fixtures for the compatibility suites.

The suites talk to a running agent-server and a running scripted mock LLM,
both started by ``compat/run.sh``. Environment:

* ``OH_COMPAT_SERVER``   server base URL, e.g. ``http://127.0.0.1:18000``
* ``OH_COMPAT_KEY``      a session API key the server accepts
* ``OH_COMPAT_MOCK_URL`` scripted mock LLM base URL (with or without ``/v1``)

The server and the tests must share a filesystem: workspaces are temporary
directories created by the tests.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests

# Quiet, offline imports of the reference client.
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("DO_NOT_TRACK", "1")

MOCK_MODEL = "openai/mock-model"


def _stop_events_client_promptly() -> None:
    """Make the reference client's ``close()`` return at once in the suites.

    The reference ``WebSocketCallbackClient`` only notices ``stop()`` when the
    next message arrives, so on an idle conversation ``stop()`` always waits
    out its 5-s thread join, whichever server it talks to. That wait tests
    nothing and cost the suites over a minute; here the join is short and the
    daemon thread ends at its next message or when the server closes the
    socket. Everything else the client does is unchanged.
    """
    from openhands.sdk.conversation.impl import remote_conversation

    client = remote_conversation.WebSocketCallbackClient

    def stop(self) -> None:
        if not self._thread:
            return
        self._stop.set()
        self._thread.join(timeout=0.2)
        self._thread = None

    client.stop = stop


_stop_events_client_promptly()
MOCK_API_KEY = "mock-key"


def _required_env(name: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        raise pytest.UsageError(f"{name} is not set; start the suites through compat/run.sh")
    return value


@pytest.fixture(scope="session")
def server_url() -> str:
    return _required_env("OH_COMPAT_SERVER").rstrip("/")


@pytest.fixture(scope="session")
def session_key() -> str:
    return _required_env("OH_COMPAT_KEY")


@pytest.fixture(scope="session")
def mock_url() -> str:
    """Mock LLM base URL without the ``/v1`` suffix."""
    url = _required_env("OH_COMPAT_MOCK_URL").rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


@pytest.fixture(scope="session")
def llm_config(mock_url: str) -> dict:
    """The LLM block every conversation in the suites uses (JSON form)."""
    return {
        "model": MOCK_MODEL,
        "base_url": f"{mock_url}/v1",
        "api_key": MOCK_API_KEY,
        "api_mode": "chat",
        "num_retries": 0,
    }


class Api:
    """Minimal authenticated HTTP helper for direct REST calls."""

    def __init__(self, base: str, key: str):
        self.base = base
        self.session = requests.Session()
        self.session.headers["X-Session-API-Key"] = key

    def request(self, method: str, path: str, **kw) -> requests.Response:
        kw.setdefault("timeout", 60)
        return self.session.request(method, self.base + path, **kw)

    def get(self, path: str, **kw) -> requests.Response:
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw) -> requests.Response:
        return self.request("POST", path, **kw)

    def delete(self, path: str, **kw) -> requests.Response:
        return self.request("DELETE", path, **kw)


@pytest.fixture(scope="session")
def api(server_url: str, session_key: str) -> Api:
    r = requests.get(f"{server_url}/ready", timeout=10)
    assert r.status_code == 200, f"server at {server_url} is not ready: {r.status_code} {r.text}"
    return Api(server_url, session_key)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """An empty workspace directory for one test (absolute path)."""
    d = tmp_path / "workspace"
    d.mkdir()
    return d.resolve()


def wait_until(predicate: Callable[[], object], timeout: float = 30.0, interval: float = 0.1, what: str = "condition"):
    """Poll ``predicate`` until it returns a truthy value; return that value."""
    deadline = time.monotonic() + timeout
    last_exc: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as e:  # keep polling through transient errors
            last_exc = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}" + (f" (last error: {last_exc})" if last_exc else ""))


@pytest.fixture
def cleanup_conversations(api: Api) -> Iterator[list[str]]:
    """Conversation ids appended here are deleted on the server after the test."""
    ids: list[str] = []
    yield ids
    for cid in ids:
        api.delete(f"/api/conversations/{cid}")

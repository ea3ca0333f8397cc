"""The ``openai`` Python package against the server's OpenAI-compatible ``/v1`` gateway.

Each request runs a full agent conversation on the scripted mock LLM; the
``[[mock:script:NAME]]`` marker in the user message selects the script, whose
text turns become the gateway's answers. Error texts are the verbatim ones of
the gateway documentation (spec 002) and of the reference server.
"""

from __future__ import annotations

import uuid

import openai
import pytest
import requests
from openai import OpenAI

PROFILE = "compat_gateway"
MODEL = f"openhands_{PROFILE}"


@pytest.fixture(scope="module")
def gateway_profile(api, llm_config):
    """An LLM profile backing the gateway model ``openhands_compat_gateway``."""
    r = api.post(f"/api/profiles/{PROFILE}", json={"llm": llm_config, "include_secrets": True})
    assert r.status_code == 201, r.text
    assert r.json() == {"name": PROFILE, "message": f"Profile '{PROFILE}' saved"}
    yield MODEL
    api.delete(f"/api/profiles/{PROFILE}")


@pytest.fixture(scope="module")
def client(server_url, session_key) -> OpenAI:
    return OpenAI(api_key=session_key, base_url=f"{server_url}/v1", timeout=120.0, max_retries=0)


def model_ids(client: OpenAI) -> list[str]:
    return [m.id for m in client.models.list().data]


def test_models_follow_saved_profiles(client, api, llm_config):
    name = "compat_models_probe"
    api.delete(f"/api/profiles/{name}")
    assert f"openhands_{name}" not in model_ids(client)

    r = api.post(f"/api/profiles/{name}", json={"llm": llm_config, "include_secrets": True})
    assert r.status_code == 201, r.text
    models = client.models.list().data
    listed = [m for m in models if m.id == f"openhands_{name}"]
    assert len(listed) == 1
    assert listed[0].object == "model"
    assert listed[0].owned_by == "openhands"
    assert listed[0].created == 0

    r = api.delete(f"/api/profiles/{name}")
    assert r.status_code == 200, r.text
    assert r.json()["name"] == name
    assert f"openhands_{name}" not in model_ids(client)


def test_chat_completion(client, gateway_profile):
    completion = client.chat.completions.create(
        model=gateway_profile,
        messages=[
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "[[mock:script:gateway_chat]] Say something."},
        ],
    )
    assert completion.object == "chat.completion"
    assert completion.model == gateway_profile
    assert completion.id.startswith("chatcmpl-")
    assert len(completion.choices) == 1
    choice = completion.choices[0]
    assert choice.index == 0
    assert choice.finish_reason == "stop"
    assert choice.message.role == "assistant"
    assert choice.message.content == "First gateway answer."
    assert not choice.message.tool_calls
    usage = completion.usage
    assert usage.prompt_tokens >= 100 and usage.completion_tokens >= 10
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_chat_completion_continues_server_conversation(client, gateway_profile, api, cleanup_conversations):
    raw = client.chat.completions.with_raw_response.create(
        model=gateway_profile,
        messages=[{"role": "user", "content": "[[mock:script:gateway_chat]] First question."}],
    )
    first = raw.parse()
    conversation_id = raw.headers["X-OpenHands-ServerConversation-ID"]
    cleanup_conversations.append(conversation_id)
    assert str(uuid.UUID(conversation_id)) == conversation_id
    assert first.choices[0].message.content == "First gateway answer."

    info = api.get(f"/api/conversations/{conversation_id}")
    assert info.status_code == 200, info.text
    assert info.json()["execution_status"] == "finished"

    raw2 = client.chat.completions.with_raw_response.create(
        model=gateway_profile,
        messages=[{"role": "user", "content": "[[mock:script:gateway_chat]] Second question."}],
        extra_headers={"X-OpenHands-ServerConversation-ID": conversation_id},
    )
    second = raw2.parse()
    assert raw2.headers["X-OpenHands-ServerConversation-ID"] == conversation_id
    # The mock answers by position: the reused conversation already holds one answer.
    assert second.choices[0].message.content == "Second gateway answer."

    events = api.get(f"/api/conversations/{conversation_id}/events/search",
                     params={"kind": "MessageEvent", "limit": 100}).json()["items"]
    user_texts = [e["llm_message"]["content"][0]["text"] for e in events if e["source"] == "user"]
    assert len(user_texts) == 2
    assert "First question." in user_texts[0] and "Second question." in user_texts[1]
    agent_texts = [e["llm_message"]["content"][0]["text"] for e in events if e["source"] == "agent"]
    assert agent_texts == ["First gateway answer.", "Second gateway answer."]

    # Without the header, a new conversation is started.
    raw3 = client.chat.completions.with_raw_response.create(
        model=gateway_profile,
        messages=[{"role": "user", "content": "[[mock:script:gateway_chat]] Fresh start."}],
    )
    fresh_id = raw3.headers["X-OpenHands-ServerConversation-ID"]
    cleanup_conversations.append(fresh_id)
    assert fresh_id != conversation_id
    assert raw3.parse().choices[0].message.content == "First gateway answer."


def test_chat_completion_stream(client, gateway_profile, cleanup_conversations):
    with client.chat.completions.with_streaming_response.create(
        model=gateway_profile,
        messages=[{"role": "user", "content": "[[mock:script:gateway_stream]] Stream please."}],
        stream=True,
        stream_options={"include_usage": True},
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        cid = response.headers["X-OpenHands-ServerConversation-ID"]
        cleanup_conversations.append(cid)
        chunks = list(response.parse())

    assert chunks, "no chunks streamed"
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert len({c.id for c in chunks}) == 1
    assert all(c.model == gateway_profile for c in chunks)
    with_choices = [c for c in chunks if c.choices]
    assert with_choices[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in with_choices)
    assert text == "Streamed gateway answer."
    finishes = [c.choices[0].finish_reason for c in with_choices if c.choices[0].finish_reason]
    assert finishes == ["stop"]
    usage_chunks = [c for c in chunks if c.usage is not None]
    assert len(usage_chunks) == 1 and usage_chunks[0] is chunks[-1]
    assert usage_chunks[0].choices == []
    assert usage_chunks[0].usage.total_tokens == usage_chunks[0].usage.prompt_tokens + usage_chunks[0].usage.completion_tokens


def test_chat_completion_stream_ends_with_done(server_url, session_key, gateway_profile, cleanup_conversations):
    r = requests.post(
        f"{server_url}/v1/chat/completions",
        headers={"Authorization": f"Bearer {session_key}"},
        json={"model": gateway_profile, "stream": True,
              "messages": [{"role": "user", "content": "[[mock:script:gateway_stream]] Stream please."}]},
        timeout=120,
    )
    assert r.status_code == 200
    cleanup_conversations.append(r.headers["X-OpenHands-ServerConversation-ID"])
    data_lines = [line for line in r.text.splitlines() if line.startswith("data: ")]
    assert data_lines[-1] == "data: [DONE]"
    assert all(line.startswith("data: {") for line in data_lines[:-1])


def test_responses_api(client, gateway_profile, api, cleanup_conversations):
    raw = client.responses.with_raw_response.create(
        model=gateway_profile,
        instructions="Answer briefly.",
        input="[[mock:script:gateway_responses]] Summarize.",
        store=False,
    )
    resp = raw.parse()
    cid = raw.headers["X-OpenHands-ServerConversation-ID"]
    cleanup_conversations.append(cid)
    assert api.get(f"/api/conversations/{cid}").status_code == 200

    assert resp.object == "response"
    assert resp.status == "completed"
    assert resp.model == gateway_profile
    assert resp.instructions == "Answer briefly."
    assert resp.id.startswith("resp_")
    assert resp.output_text == "Responses gateway answer."
    assert len(resp.output) == 1
    item = resp.output[0]
    assert item.type == "message" and item.role == "assistant" and item.status == "completed"
    assert item.id.startswith("msg_")
    assert [c.type for c in item.content] == ["output_text"]
    assert resp.tools == []
    assert resp.tool_choice == "none"
    assert resp.parallel_tool_calls is False
    assert resp.usage.total_tokens == resp.usage.input_tokens + resp.usage.output_tokens
    assert resp.usage.input_tokens_details.cached_tokens == 0
    assert resp.usage.output_tokens_details.reasoning_tokens == 0


def test_responses_list_input(client, gateway_profile, cleanup_conversations):
    raw = client.responses.with_raw_response.create(
        model=gateway_profile,
        input=[
            {"role": "developer", "content": "Answer briefly."},
            {"role": "user", "content": "[[mock:script:gateway_responses]] Summarize."},
        ],
        store=False,
    )
    cleanup_conversations.append(raw.headers["X-OpenHands-ServerConversation-ID"])
    assert raw.parse().output_text == "Responses gateway answer."


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"previous_response_id": "resp_123"}, "previous_response_id is not supported; replay input items instead"),
        ({"store": True}, "Persistent response storage (store=True) is not supported yet"),
        ({"stream": True}, "Streaming responses are not supported yet"),
    ],
)
def test_responses_unsupported_features_are_rejected_verbatim(client, gateway_profile, extra, message):
    kwargs = {"model": gateway_profile, "input": "hi", "store": False}
    kwargs.update(extra)
    with pytest.raises(openai.BadRequestError) as err:
        client.responses.create(**kwargs)
    assert err.value.status_code == 400
    assert err.value.response.json() == {"detail": message}


def test_unknown_model_errors(client, gateway_profile):
    with pytest.raises(openai.NotFoundError) as err:
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "hi"}])
    assert err.value.response.json() == {"detail": "Unknown OpenHands model 'nope'. Use GET /v1/models."}

    with pytest.raises(openai.NotFoundError) as err:
        client.chat.completions.create(model="openhands_no_such_profile",
                                       messages=[{"role": "user", "content": "hi"}])
    assert err.value.response.json() == {"detail": "Profile 'no_such_profile' not found"}


def test_chat_completion_needs_a_user_message(client, gateway_profile):
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model=gateway_profile, messages=[])
    assert err.value.response.json() == {"detail": "At least one user message is required"}


def test_auth_accepts_bearer_and_session_header(server_url, session_key, gateway_profile):
    url = f"{server_url}/v1/models"
    bearer = requests.get(url, headers={"Authorization": f"Bearer {session_key}"}, timeout=30)
    header = requests.get(url, headers={"X-Session-API-Key": session_key}, timeout=30)
    assert bearer.status_code == 200 and header.status_code == 200
    assert bearer.json() == header.json()
    assert bearer.json()["object"] == "list"
    assert MODEL in [m["id"] for m in bearer.json()["data"]]

    for headers in ({}, {"Authorization": "Bearer wrong-key"}, {"X-Session-API-Key": "wrong-key"}):
        r = requests.get(url, headers=headers, timeout=30)
        assert r.status_code == 401, headers
        assert r.json() == {"detail": "Unauthorized"}

    # A chat completion authenticated only by the session header.
    r = requests.post(f"{server_url}/v1/chat/completions", headers={"X-Session-API-Key": session_key},
                      json={"model": "nope", "messages": [{"role": "user", "content": "hi"}]}, timeout=30)
    assert r.status_code == 404, "authenticated request should reach model lookup"


def test_openai_client_with_wrong_key_is_rejected(server_url, gateway_profile):
    bad = OpenAI(api_key="wrong-key", base_url=f"{server_url}/v1", max_retries=0, timeout=30)
    with pytest.raises(openai.AuthenticationError) as err:
        bad.models.list()
    assert err.value.status_code == 401
    with pytest.raises(openai.AuthenticationError):
        bad.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])

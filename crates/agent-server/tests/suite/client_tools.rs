//! Client-defined tools (`client_tools` in the start request) and
//! structured output (`response_schema` on a tool spec) through the server:
//! a client tool call reaches a WebSocket subscriber as an `ActionEvent`
//! and the run goes on; bad specs are refused with the reference's 422s.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::*;
use openhands_testkit::{Script, Turn};
use serde_json::{Value, json};

fn chart() -> Value {
    json!({
        "name": "show_chart",
        "description": "Render a chart in the user's browser.",
        "parameters": {"type": "object", "properties": {"series": {"type": "array", "items": {"type": "number"}}}, "required": ["series"]}
    })
}

fn charting(_: &std::path::Path) -> Script {
    Script::from_turns([
        Turn::tool_call("show_chart", json!({"series": [3, 1, 2]})),
        Turn::tool_call("finish", json!({"message": "charted"})),
    ])
    .with_toolless_reply(Turn::text("A title"))
}

#[tokio::test]
async fn a_client_tool_call_reaches_the_socket_and_the_conversation_finishes() {
    let env = Env::start(charting).await;
    let info = env.create(json!({"client_tools": [chart()]})).await;
    let id = info["id"].as_str().unwrap();
    let mut want_spec = chart();
    want_spec["annotations"] = Value::Null;
    assert_eq!(info["client_tools"], json!([want_spec]));
    let mut ws = env.ws(id, "").await;
    ws.frame().await; // the full state
    env.send(id, "Chart my numbers.", true).await;
    let frames = ws.until(is_settled_full_state).await;
    let action = frames
        .iter()
        .find(|f| f["kind"] == "ActionEvent" && f["tool_name"] == "show_chart")
        .expect("the subscriber sees the client tool's action");
    assert_eq!(
        action["action"],
        json!({"series": [3, 1, 2], "kind": "ClientAction_show_chart"})
    );
    assert_eq!(action["tool_call"]["name"], "show_chart");
    let ack = frames
        .iter()
        .find(|f| f["kind"] == "ObservationEvent" && f["tool_name"] == "show_chart")
        .unwrap();
    assert_eq!(ack["observation"]["kind"], "ClientToolObservation");
    assert_eq!(
        ack["observation"]["content"][0]["text"],
        "Tool call dispatched to client."
    );
    assert_eq!(ack["action_id"], action["id"]);
    assert_eq!(
        frames.last().unwrap()["value"]["execution_status"],
        "finished"
    );
    assert!(
        frames
            .iter()
            .any(|f| f["kind"] == "ActionEvent" && f["tool_name"] == "finish")
    );
    // The model was offered the client's schema (plus `summary` and
    // `security_risk`), and saw the acknowledgement before finishing.
    let requests = agent_requests(&env);
    let tool = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "show_chart")
        .unwrap()
        .clone();
    assert_eq!(tool["function"]["description"], chart()["description"]);
    let params = &tool["function"]["parameters"];
    assert_eq!(params["required"], json!(["series"]));
    assert_eq!(
        params["properties"]["series"],
        chart()["parameters"]["properties"]["series"]
    );
    let keys: Vec<&String> = params["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["security_risk", "summary", "series"]);
    assert!(
        requests[1]
            .body
            .to_string()
            .contains("Tool call dispatched to client.")
    );
    // meta.json keeps the specs; the module map does not list client tools.
    let (_, again) = env.get(&format!("/api/conversations/{id}")).await;
    assert_eq!(again["client_tools"], json!([want_spec]));
    assert!(
        again["tool_module_qualnames"].get("show_chart").is_none(),
        "{again}"
    );
}

/// The LLM requests of the agent (the title request offers no tools).
fn agent_requests(env: &Env) -> Vec<openhands_testkit::server::RecordedRequest> {
    env.mock
        .completion_requests()
        .into_iter()
        .filter(|r| r.body["tools"].is_array())
        .collect()
}

async fn post(env: &Env, extra: Value) -> (u16, Value) {
    let body = env.start_body(extra);
    env.call("POST", "/api/conversations", Some(body)).await
}

#[tokio::test]
async fn bad_client_tool_specs_are_refused_naming_the_field() {
    let env = Env::start(charting).await;
    let mut not_object = chart();
    not_object["parameters"] = json!({"type": "string"});
    let (s, body) = post(&env, json!({"client_tools": [chart(), not_object]})).await;
    assert_eq!(s, 422, "{body}");
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "client_tools", 1, "parameters"])
    );
    assert_eq!(body["detail"][0]["type"], "value_error");
    assert!(
        body["detail"][0]["msg"]
            .as_str()
            .unwrap()
            .starts_with("Value error, ClientToolSpec.parameters must be an object JSON Schema (got type='string')"),
        "{body}"
    );
    let (s, body) = post(&env, json!({"client_tools": [{"description": "no name"}]})).await;
    assert_eq!(s, 422, "{body}");
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "client_tools", 0, "name"])
    );
    assert_eq!(body["detail"][0]["type"], "missing");
    let (s, body) = post(&env, json!({"client_tools": [chart(), chart()]})).await;
    assert_eq!(s, 422, "{body}");
    assert_eq!(
        body["detail"],
        "Duplicate client tool name 'show_chart' in one registration request. Client tool names must be unique."
    );
    let mut clash = chart();
    clash["name"] = json!("file_editor");
    let (s, body) = post(&env, json!({"client_tools": [clash]})).await;
    assert_eq!(s, 422, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("'file_editor' collides with an existing non-client tool")
    );
    let (s, _) = env.get("/api/conversations/search").await;
    assert_eq!(s, 200);
}

fn answer_schema() -> Value {
    json!({"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"], "additionalProperties": false})
}

fn structured_agent(env: &Env, schema: Value) -> Value {
    let mut agent = env.agent(&["file_editor"]);
    agent["tools"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "FinishTool", "params": {"response_schema": schema}}));
    agent["include_default_tools"] = json!(["ThinkTool"]);
    agent
}

#[tokio::test]
async fn a_response_schema_violation_is_reported_and_a_valid_finish_carries_the_result() {
    let env = Env::start(|_| {
        Script::from_turns([
            Turn::tool_call("finish", json!({"message": "done", "answer": "forty-two"})),
            Turn::tool_call("finish", json!({"message": "done", "answer": 42})),
        ])
        .with_toolless_reply(Turn::text("A title"))
    })
    .await;
    let info = env
        .create(json!({"agent": structured_agent(&env, answer_schema())}))
        .await;
    let id = info["id"].as_str().unwrap();
    env.send(id, "What is the answer?", true).await;
    env.wait_finished_and_settled(id).await;
    let events = env.events(id).await;
    let errors: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "AgentErrorEvent")
        .collect();
    assert_eq!(errors.len(), 1, "{events:?}");
    assert_eq!(errors[0]["tool_name"], "finish");
    assert!(
        errors[0]["error"].as_str().unwrap().contains(
            "response_schema validation failed: \"forty-two\" is not of type \"integer\""
        ),
        "{}",
        errors[0]
    );
    let finish = events
        .iter()
        .rev()
        .find(|e| e["kind"] == "ActionEvent" && e["tool_name"] == "finish")
        .unwrap();
    assert_eq!(
        finish["action"],
        json!({"message": "done", "kind": "FinishAction"})
    );
    let args: Value =
        serde_json::from_str(finish["tool_call"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args["answer"], 42);
    let offered = &agent_requests(&env)[0].body["tools"];
    let finish_tool = offered
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "finish")
        .unwrap();
    assert_eq!(
        finish_tool["function"]["parameters"]["required"],
        json!(["message", "answer"])
    );
    assert_eq!(
        finish_tool["function"]["parameters"]["additionalProperties"],
        false
    );
}

#[tokio::test]
async fn an_unusable_response_schema_is_refused_naming_the_tool() {
    let env = Env::start(charting).await;
    let body = env.start_body(json!({"agent": structured_agent(&env, json!({"type": "object", "properties": {"summary": {"type": "string"}}}))}));
    let (s, body) = env.call("POST", "/api/conversations", Some(body)).await;
    assert_eq!(s, 422, "{body}");
    assert_eq!(
        body["detail"][0]["loc"],
        json!(["body", "agent", "tools", 1, "params", "response_schema"])
    );
    assert!(
        body["detail"][0]["msg"]
            .as_str()
            .unwrap()
            .contains("are reserved"),
        "{body}"
    );
}

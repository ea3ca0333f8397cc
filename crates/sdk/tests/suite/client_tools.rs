//! Client-defined tools and structured output (`response_schema`) in a
//! local conversation with the scripted LLM, and the tool schemas the model
//! receives compared with what the reference produces for the same specs
//! (`fixtures/client_tools_reference.json`, written by
//! `fixtures/client_tools_reference.py` with the reference SDK 1.58.2).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use openhands_sdk::client_tool::ClientToolSpec;
use openhands_sdk::{ConversationOptions, LocalConversation};
use openhands_testkit::Turn;
use openhands_wire::event::{Event, EventBody};
use openhands_wire::state::ExecutionStatus;
use openhands_wire::tool::ToolSpec;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use std::sync::Arc;

const REFERENCE: &str = include_str!("../fixtures/client_tools_reference.json");

fn reference(key: &str) -> Value {
    let all: Value = serde_json::from_str(REFERENCE).unwrap();
    all[key].clone()
}

/// The chart spec the reference fixture was made from.
fn chart_spec() -> ClientToolSpec {
    serde_json::from_value(reference("client_definition")["input_schema"].clone())
        .map(|parameters| {
            ClientToolSpec::new("show_chart", "Render a chart in the user's browser.")
                .with_parameters(parameters)
        })
        .unwrap()
}

/// `schema` with the descriptions of the agent-added `summary` and
/// `security_risk` removed (those texts are our own).
fn without_meta_descriptions(mut schema: Value) -> Value {
    for meta in ["summary", "security_risk"] {
        if let Some(p) = schema["properties"]
            .get_mut(meta)
            .and_then(Value::as_object_mut)
        {
            assert!(
                p.remove("description")
                    .is_some_and(|d| d.as_str().is_some_and(|s| !s.is_empty()))
            );
        }
    }
    schema
}

fn sent_schema(f: &Fixture, name: &str) -> Value {
    let requests = f.backend.requests();
    let tool = requests[0]
        .tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("{name} not offered"));
    tool.parameters.clone()
}

/// Keys in order (serde_json keeps insertion order here).
fn property_order(schema: &Value) -> Vec<String> {
    schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[tokio::test]
async fn client_tool_schema_and_definition_match_the_reference() {
    let readonly: ClientToolSpec = serde_json::from_value(json!({
        "name": "peek", "description": "Read a value.", "annotations": {"readOnlyHint": true}
    }))
    .unwrap();
    let f = fixture(vec![Turn::text("ok")], |o| {
        o.agent.client_tools = vec![chart_spec(), readonly];
    });
    f.conversation.send_message("hi").unwrap();
    f.conversation.run().await.unwrap();
    for (name, key) in [
        ("show_chart", "client_risk"),
        ("peek", "client_readonly_risk"),
    ] {
        let want = reference(key)["function"]["parameters"].clone();
        let got = sent_schema(&f, name);
        assert_eq!(property_order(&got), property_order(&want), "{name}");
        assert_eq!(
            without_meta_descriptions(got),
            without_meta_descriptions(want),
            "{name}"
        );
        let offered = f.backend.requests()[0]
            .tools
            .iter()
            .find(|t| t.name == name)
            .cloned()
            .unwrap();
        assert_eq!(
            offered.description,
            reference(key)["function"]["description"]
        );
    }
    // The definition recorded in the SystemPromptEvent.
    let events = f.conversation.events();
    let tools = events
        .iter()
        .find_map(|e| match &e.body {
            EventBody::SystemPrompt(s) => Some(serde_json::to_value(&s.tools).unwrap()),
            _ => None,
        })
        .unwrap();
    let chart = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"] == "show_chart")
        .unwrap();
    let want = reference("client_definition");
    for k in [
        "description",
        "action_type",
        "observation_type",
        "kind",
        "title",
        "client_tool_name",
        "input_schema",
        "meta",
    ] {
        assert_eq!(chart[k], want[k], "{k}");
    }
    // The persisted agent carries the spec, so a resume rebuilds the tool.
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(
            f.conversation
                .persistence_dir()
                .unwrap()
                .join("base_state.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let stored = state["agent"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "show_chart")
        .unwrap();
    assert_eq!(stored["params"]["spec"], chart_spec().to_json());
}

#[tokio::test]
async fn a_client_tool_call_reaches_the_listener_and_the_run_goes_on() {
    let seen: Arc<Mutex<Vec<Event>>> = Arc::default();
    let sink = seen.clone();
    let f = fixture(
        vec![
            Turn::tool_call(
                "show_chart",
                json!({"series": [1, 2], "summary": "draw it"}),
            ),
            Turn::tool_call("show_chart", json!({"series": "nope"})),
            finish("charted"),
        ],
        |o| {
            o.agent.client_tools = vec![chart_spec()];
            o.listeners
                .callbacks
                .push(Arc::new(move |e: &Event| sink.lock().push(e.clone())));
        },
    );
    let c = &f.conversation;
    c.send_message("chart it").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let seen = seen.lock();
    let action = seen
        .iter()
        .find_map(|e| match &e.body {
            EventBody::Action(a) if a.tool_name == "show_chart" => Some(a.clone()),
            _ => None,
        })
        .expect("the listener saw the client tool's action");
    let mut want_action = reference("client_action");
    want_action["series"] = json!([1, 2]);
    assert_eq!(action.action.unwrap(), want_action);
    let ack = seen
        .iter()
        .find_map(|e| match &e.body {
            EventBody::Observation(o) if o.tool_name == "show_chart" => Some(o.observation.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        serde_json::to_value(&ack).unwrap(),
        reference("client_observation")
    );
    // The invalid call is reported to the model, which then finishes.
    let error = seen
        .iter()
        .find_map(|e| match &e.body {
            EventBody::AgentError(a) if a.tool_name == "show_chart" => Some(a.error.clone()),
            _ => None,
        })
        .unwrap();
    assert!(error.contains("is not of type \"array\""), "{error}");
    assert_eq!(c.agent_final_response(), "charted");
    assert_eq!(
        kinds(&seen)
            .iter()
            .filter(|k| *k == "Obs:show_chart")
            .count(),
        1
    );
}

#[test]
fn client_tools_may_not_take_an_existing_tool_name() {
    let (agent, _) = agent_turns(vec![]);
    let ws = tempfile::tempdir().unwrap();
    let e = LocalConversation::new(
        agent,
        ws.path(),
        ConversationOptions {
            agent: openhands_sdk::conversation::AgentOptions {
                client_tools: vec![ClientToolSpec::new("echo", "clash")],
                ..Default::default()
            },
            ..ConversationOptions::default()
        },
    )
    .err()
    .unwrap();
    assert!(
        e.to_string()
            .contains("collides with an existing non-client tool"),
        "{e}"
    );
}

fn answer_schema() -> Value {
    json!({"type":"object","properties":{"answer":{"type":"integer","description":"The answer."},"sources":{"type":"array","items":{"$ref":"#/$defs/Src"}}},"required":["answer"],"additionalProperties":false,
      "$defs":{"Src":{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}}})
}

/// A fixture whose agent has `finish` with `response_schema` instead of the
/// default one.
fn structured(turns: Vec<Turn>) -> Fixture {
    let workspace = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let (agent, backend) = agent_turns(turns);
    let mut spec = agent.spec().clone();
    let mut params = Map::new();
    params.insert("response_schema".into(), answer_schema());
    spec.tools.push(ToolSpec {
        name: "FinishTool".into(),
        params,
    });
    spec.include_default_tools = vec!["ThinkTool".into()];
    let agent = openhands_sdk::Agent::with_llm(spec, agent.llm().clone(), agent.registry().clone());
    let conversation =
        LocalConversation::new(agent, workspace.path(), persisted(root.path())).unwrap();
    Fixture {
        conversation,
        backend,
        workspace,
        root,
    }
}

#[tokio::test]
async fn finish_with_a_response_schema_is_offered_like_the_reference() {
    let f = structured(vec![Turn::tool_call(
        "finish",
        json!({"message": "m", "answer": 1}),
    )]);
    f.conversation.send_message("q").unwrap();
    f.conversation.run().await.unwrap();
    let got = sent_schema(&f, "finish");
    let want = reference("finish_response")["function"]["parameters"].clone();
    assert_eq!(property_order(&got), property_order(&want));
    let strip = |mut v: Value| {
        let v2 = without_meta_descriptions(v.clone());
        v = v2;
        v["properties"]["message"]
            .as_object_mut()
            .unwrap()
            .remove("description");
        v
    };
    assert_eq!(strip(got), strip(want));
}

#[derive(Debug, serde::Deserialize, PartialEq)]
struct Answer {
    answer: i64,
    #[serde(default)]
    sources: Vec<Source>,
}

#[derive(Debug, serde::Deserialize, PartialEq)]
struct Source {
    url: String,
}

#[tokio::test]
async fn a_response_schema_violation_is_reported_and_a_valid_call_yields_the_typed_result() {
    let f = structured(vec![
        Turn::tool_call("finish", json!({"message": "done", "answer": "x"})),
        Turn::tool_call(
            "finish",
            json!({"message": "done", "answer": 42, "sources": [{"url": "https://a"}]}),
        ),
    ]);
    let c = &f.conversation;
    c.send_message("what is the answer?").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    let events = c.events();
    let errors: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.body {
            EventBody::AgentError(a) => Some(a.error.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("response_schema validation failed: \"x\" is not of type \"integer\""),
        "{}",
        errors[0]
    );
    // The model saw the error before its second call.
    let second = &f.backend.requests()[1];
    assert!(
        second
            .messages
            .iter()
            .any(|m| format!("{m:?}").contains("response_schema validation failed"))
    );
    // The accepted action is the finish tool's own; the typed result is read back.
    let action = events
        .iter()
        .rev()
        .find_map(|e| match &e.body {
            EventBody::Action(a) if a.action.is_some() => a.action.clone(),
            _ => None,
        })
        .unwrap();
    assert_eq!(action, json!({"message": "done", "kind": "FinishAction"}));
    assert_eq!(
        c.structured_output("finish").unwrap(),
        Some(json!({"answer": 42, "sources": [{"url": "https://a"}]}))
    );
    assert_eq!(
        c.structured_output_as::<Answer>("finish").unwrap(),
        Some(Answer {
            answer: 42,
            sources: vec![Source {
                url: "https://a".into()
            }]
        })
    );
    assert!(
        c.structured_output("think").is_err(),
        "think has no response_schema"
    );
}

#[tokio::test]
async fn a_resumed_conversation_keeps_its_client_tools() {
    let f = fixture(vec![Turn::text("noted")], |o| {
        o.agent.client_tools = vec![chart_spec()];
    });
    f.conversation
        .send_message("remember the chart tool")
        .unwrap();
    f.conversation.run().await.unwrap();
    let id = f.conversation.id();
    drop(f.conversation);
    // The caller's agent does not mention the client tool; the stored one did.
    // The script answers by position in the history, which already holds
    // one reply.
    let (agent, backend) = agent_turns(vec![
        Turn::text("noted"),
        Turn::tool_call("show_chart", json!({"series": [5]})),
        finish("shown"),
    ]);
    let c = LocalConversation::resume(
        f.root.path(),
        id,
        Some(agent),
        ConversationOptions::default(),
    )
    .unwrap();
    c.send_message("now chart").unwrap();
    assert_eq!(c.run().await.unwrap(), ExecutionStatus::Finished);
    assert!(
        backend.requests()[0]
            .tools
            .iter()
            .any(|t| t.name == "show_chart")
    );
    let ack = c
        .events()
        .iter()
        .find_map(|e| match &e.body {
            EventBody::Observation(o) if o.tool_name == "show_chart" => Some(o.observation.clone()),
            _ => None,
        })
        .expect("the client tool ran after the resume");
    assert_eq!(
        serde_json::to_value(&ack).unwrap()["kind"],
        "ClientToolObservation"
    );
}

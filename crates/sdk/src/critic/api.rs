//! `APIBasedCritic`: the conversation, rendered with the critic model's
//! chat template, is sent to a classification service (`POST
//! {server_url}/classify` with `{"model", "input"}`, bearer key); the
//! answer's probabilities, in the reference's label order, give the score
//! (`success`) and the categorized features in `metadata`.
//!
//! The reference downloads the chat template of `tokenizer_name` from a
//! model hub at run time; this implementation renders the template of the
//! reference's default tokenizer (`Qwen/Qwen3-4B-Instruct-2507`, ChatML
//! with a `<tools>` block) itself, offline, and refuses other tokenizer
//! names. A 500 answer is retried twice (1 s, then 2 s later), as the
//! reference.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{CriticConfigError, CriticResult, Evaluation, bad};

/// The reference's default service.
pub const DEFAULT_SERVER_URL: &str = "https://llm-proxy.app.all-hands.dev/vllm";
/// The tokenizer whose chat template is rendered.
pub const DEFAULT_TOKENIZER: &str = "Qwen/Qwen3-4B-Instruct-2507";

const SENTIMENT: [&str; 3] = [
    "sentiment_positive",
    "sentiment_neutral",
    "sentiment_negative",
];
const AGENT_ISSUES: [&str; 13] = [
    "misunderstood_intention",
    "did_not_follow_instruction",
    "insufficient_analysis",
    "insufficient_clarification",
    "improper_tool_use_or_setup",
    "loop_behavior",
    "insufficient_testing",
    "insufficient_debugging",
    "incomplete_implementation",
    "file_management_errors",
    "scope_creep",
    "risky_actions_or_permission",
    "other_agent_issue",
];
const INFRA: [&str; 2] = [
    "infrastructure_external_issue",
    "infrastructure_agent_caused_issue",
];
const USER_FOLLOWUP: [&str; 8] = [
    "clarification_or_restatement",
    "correction",
    "direction_change",
    "vcs_update_requests",
    "progress_or_scope_concern",
    "frustration_or_complaint",
    "removal_or_reversion_request",
    "other_user_issue",
];

/// The critic's settings.
#[derive(Clone)]
pub struct ApiCritic {
    /// Base URL of the classification service.
    pub server_url: String,
    /// Bearer key.
    pub api_key: String,
    /// `model` sent to the service.
    pub model_name: String,
    /// Whether tool schemas go into the rendered conversation.
    pub pass_tools_definitions: bool,
    /// Request timeout.
    pub timeout: Duration,
    /// Whether the first probability is `success`.
    pub has_success_label: bool,
    /// Agent-issue probability that triggers refinement.
    pub issue_threshold: f64,
}

impl std::fmt::Debug for ApiCritic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiCritic")
            .field("server_url", &self.server_url)
            .field("model_name", &self.model_name)
            .finish_non_exhaustive()
    }
}

fn string(v: &Value, field: &str) -> Result<Option<String>, CriticConfigError> {
    match v.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad(field, "must be a string")),
    }
}

fn boolean(v: &Value, field: &str, default: bool) -> Result<bool, CriticConfigError> {
    match v.get(field) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(bad(field, "must be a boolean")),
    }
}

impl ApiCritic {
    /// From the critic's JSON (`api_key` required).
    pub fn from_json(v: &Value) -> Result<Self, CriticConfigError> {
        let api_key = string(v, "api_key")?
            .filter(|k| !k.trim().is_empty() && k != openhands_wire::secret::REDACTED)
            .ok_or_else(|| bad("api_key", "api_key must be non-empty"))?;
        if let Some(t) = string(v, "tokenizer_name")?
            && t != DEFAULT_TOKENIZER
        {
            return Err(bad(
                "tokenizer_name",
                format!("only '{DEFAULT_TOKENIZER}' is supported (its chat template is built in)"),
            ));
        }
        let timeout = match v.get("timeout_seconds") {
            None | Some(Value::Null) => 300.0,
            Some(x) => x
                .as_f64()
                .filter(|n| n.is_finite() && *n > 0.0)
                .ok_or_else(|| bad("timeout_seconds", "must be a positive number"))?,
        };
        Ok(ApiCritic {
            server_url: string(v, "server_url")?.unwrap_or_else(|| DEFAULT_SERVER_URL.into()),
            api_key,
            model_name: string(v, "model_name")?.unwrap_or_else(|| "critic".into()),
            pass_tools_definitions: boolean(v, "pass_tools_definitions", true)?,
            timeout: Duration::from_secs_f64(timeout),
            has_success_label: boolean(v, "has_success_label", true)?,
            issue_threshold: super::unit_interval(v, "issue_threshold", 0.75)?,
        })
    }

    /// The label of each probability, in the service's order.
    pub fn labels(&self) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = Vec::new();
        if self.has_success_label {
            out.push("success");
        }
        out.extend(SENTIMENT);
        out.extend(AGENT_ISSUES);
        out.extend(INFRA);
        out.extend(USER_FOLLOWUP);
        out
    }

    /// Scores the conversation.
    pub async fn evaluate(&self, input: &Evaluation<'_>) -> Result<CriticResult, CriticError> {
        if input.tools.is_empty() {
            return Err(CriticError::NoTools);
        }
        let tools = if self.pass_tools_definitions {
            input.tools
        } else {
            &[]
        };
        let rendered = render_chatml(input.messages, tools);
        let answer = self.classify(&rendered).await?;
        let probs = self.prob_map(&answer)?;
        let score = probs
            .iter()
            .find(|(l, _)| *l == "success")
            .map(|(_, p)| *p)
            .ok_or(CriticError::NoSuccessLabel)?;
        let mut sorted = probs.clone();
        sorted.sort_by(|a, b| b.1.total_cmp(&a.1));
        let sorted_json: Map<String, Value> = sorted
            .iter()
            .map(|(l, p)| (l.to_string(), json!(p)))
            .collect();
        let message = format!(
            "Success: {score:.2}; {}",
            python_json(&Value::Object(sorted_json))
        );
        let event_ids: Vec<Value> = input
            .events
            .iter()
            .filter(|e| e.is_llm_convertible())
            .map(|e| json!(e.id))
            .collect();
        let mut metadata = Map::new();
        metadata.insert("event_ids".into(), Value::Array(event_ids));
        metadata.insert("categorized_features".into(), categorize(&probs));
        Ok(CriticResult {
            score,
            message: Some(message),
            metadata: Some(metadata),
        })
    }

    async fn classify(&self, input: &str) -> Result<Value, CriticError> {
        let client = openhands_llm::http::shared_client().map_err(CriticError::NoClient)?;
        let url = format!("{}/classify", self.server_url.trim_end_matches('/'));
        let body = json!({"model": self.model_name, "input": input}).to_string();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let resp = client
                .post(&url)
                .timeout(self.timeout)
                .bearer_auth(&self.api_key)
                .header("Content-Type", "application/json")
                .body(body.clone())
                .send()
                .await
                .map_err(|e| {
                    if e.is_timeout() {
                        CriticError::Timeout(self.timeout.as_secs_f64())
                    } else {
                        CriticError::Request(e.without_url())
                    }
                })?;
            let status = resp.status().as_u16();
            if status == 500 && attempt < 3 {
                tokio::time::sleep(Duration::from_secs(1 << (attempt - 1))).await;
                continue;
            }
            if !(200..300).contains(&status) {
                return Err(CriticError::Status(status));
            }
            let bytes = resp
                .bytes()
                .await
                .map_err(|e| CriticError::Read(e.without_url()))?;
            return serde_json::from_slice(&bytes).map_err(CriticError::NotJson);
        }
    }

    fn prob_map(&self, answer: &Value) -> Result<Vec<(&'static str, f64)>, CriticError> {
        let item = answer
            .get("data")
            .and_then(Value::as_array)
            .and_then(|d| d.first())
            .ok_or(CriticError::EmptyData)?;
        let probs: Vec<f64> = item
            .get("probs")
            .and_then(Value::as_array)
            .map(|p| p.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        if probs.is_empty() {
            return Err(CriticError::EmptyProbs);
        }
        if let Some(n) = item.get("num_classes").and_then(Value::as_u64)
            && n as usize != probs.len()
        {
            return Err(CriticError::ClassCount {
                num_classes: n,
                probs: probs.len(),
            });
        }
        let labels = self.labels();
        if probs.len() != labels.len() {
            return Err(CriticError::LabelSpace {
                probs: probs.len(),
                labels: labels.len(),
            });
        }
        Ok(labels.into_iter().zip(probs).collect())
    }

    /// Agent issues at or above `issue_threshold` in a result's metadata.
    pub fn likely_issues(&self, result: &CriticResult) -> Vec<Value> {
        result
            .metadata
            .as_ref()
            .and_then(|m| m.get("categorized_features"))
            .and_then(|c| c.get("agent_behavioral_issues"))
            .and_then(Value::as_array)
            .map(|issues| {
                issues
                    .iter()
                    .filter(|i| {
                        i.get("probability").and_then(Value::as_f64).unwrap_or(0.0)
                            >= self.issue_threshold
                    })
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Why a critic gave no score.
#[derive(Debug, thiserror::Error)]
pub enum CriticError {
    /// The API critic needs the agent's tool definitions.
    #[error("APIBasedCritic requires tool definitions in the system prompt")]
    NoTools,
    /// No HTTP client could be built.
    #[error("no HTTP client: {0}")]
    NoClient(#[source] openhands_llm::LlmError),
    /// The service did not answer in time (seconds).
    #[error("the critic service timed out after {0} s")]
    Timeout(f64),
    /// The request failed (the URL left out).
    #[error("the critic service request failed: {0}")]
    Request(#[source] reqwest::Error),
    /// The service answered with an error status.
    #[error("the critic service answered HTTP {0}")]
    Status(u16),
    /// The answer's body could not be read (the URL left out).
    #[error("reading the critic's answer failed: {0}")]
    Read(#[source] reqwest::Error),
    /// The answer is not JSON.
    #[error("the critic's answer is not JSON")]
    NotJson(#[source] serde_json::Error),
    /// The answer has no `data` item.
    #[error("empty response.data from server")]
    EmptyData,
    /// The answer's item has no probabilities.
    #[error("server returned empty 'probs'")]
    EmptyProbs,
    /// `num_classes` disagrees with the probabilities.
    #[error("num_classes ({num_classes}) does not match len(probs) ({probs})")]
    ClassCount {
        /// What the answer says.
        num_classes: u64,
        /// How many probabilities it has.
        probs: usize,
    },
    /// The server's label space is not ours.
    #[error(
        "len(probs) ({probs}) != len(all_labels) ({labels}). Ensure server label space matches client label space."
    )]
    LabelSpace {
        /// How many probabilities the answer has.
        probs: usize,
        /// How many labels we know.
        labels: usize,
    },
    /// No `success` label among the probabilities.
    #[error("APIBasedCritic requires 'success' label in the response.")]
    NoSuccessLabel,
}

/// The categorized features of a probability map (the reference's
/// taxonomy: sentiment softmax, features of at least 0.2 by category,
/// most likely first).
pub fn categorize(probs: &[(&str, f64)]) -> Value {
    let category = |name: &str| -> Option<&'static str> {
        if AGENT_ISSUES.contains(&name) {
            Some("agent_behavioral_issues")
        } else if USER_FOLLOWUP.contains(&name) || name == "follow_up_timing" {
            Some("user_followup_patterns")
        } else if INFRA.contains(&name) {
            Some("infrastructure_issues")
        } else if matches!(name, "user_goal_summary" | "overall_sentiment") {
            Some("general_context")
        } else {
            None
        }
    };
    let sentiments: Vec<(&str, f64)> = probs
        .iter()
        .filter_map(|(n, p)| n.strip_prefix("sentiment_").map(|s| (s, *p)))
        .collect();
    let sentiment = if sentiments.is_empty() {
        Value::Null
    } else {
        let exp: Vec<f64> = sentiments.iter().map(|(_, p)| p.exp()).collect();
        let sum: f64 = exp.iter().sum();
        let all: Map<String, Value> = sentiments
            .iter()
            .zip(&exp)
            .map(|((n, _), e)| (n.to_string(), json!(e / sum)))
            .collect();
        let (best, p) = sentiments
            .iter()
            .zip(&exp)
            .map(|((n, _), e)| (*n, e / sum))
            .fold(("", f64::MIN), |a, b| if b.1 > a.1 { b } else { a });
        let mut name = best.to_string();
        if let Some(first) = name.get(..1) {
            name = format!("{}{}", first.to_uppercase(), &name[1..]);
        }
        json!({"predicted": name, "probability": p, "all": all})
    };
    let mut groups: [(&str, Vec<Value>); 4] = [
        ("agent_behavioral_issues", Vec::new()),
        ("user_followup_patterns", Vec::new()),
        ("infrastructure_issues", Vec::new()),
        ("other", Vec::new()),
    ];
    for (name, p) in probs {
        if name.starts_with("sentiment_") || *name == "success" || *p < 0.2 {
            continue;
        }
        let target = match category(name) {
            Some("general_context") => continue,
            Some(c) => c,
            None => "other",
        };
        let display: Vec<String> = name
            .split('_')
            .map(|w| {
                let mut c = w.chars();
                c.next()
                    .map(|f| f.to_uppercase().collect::<String>() + &c.as_str().to_lowercase())
                    .unwrap_or_default()
            })
            .collect();
        if let Some((_, list)) = groups.iter_mut().find(|(k, _)| *k == target) {
            list.push(json!({"name": name, "display_name": display.join(" "), "probability": p}));
        }
    }
    let mut out = Map::new();
    out.insert("sentiment".into(), sentiment);
    for (key, mut list) in groups {
        list.sort_by(|a, b| {
            let pa = a["probability"].as_f64().unwrap_or(0.0);
            let pb = b["probability"].as_f64().unwrap_or(0.0);
            pb.total_cmp(&pa)
        });
        out.insert(key.into(), Value::Array(list));
    }
    Value::Object(out)
}

fn feature_list(features: &[Value]) -> String {
    if features.is_empty() {
        return "None detected".into();
    }
    features
        .iter()
        .map(|f| {
            let name = f
                .get("display_name")
                .or_else(|| f.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("Unknown");
            let p = f.get("probability").and_then(Value::as_f64).unwrap_or(0.0);
            format!("{name} ({:.0}%)", p * 100.0)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The API critic's follow-up prompt: the score and the categorized
/// features, then the request to review and complete the task.
pub fn followup_prompt(result: &CriticResult, iteration: u64) -> String {
    let mut lines = vec![
        format!(
            "The task appears incomplete (iteration {iteration}, predicted success likelihood: {:.1}%).",
            result.score * 100.0
        ),
        String::new(),
    ];
    if let Some(c) = result
        .metadata
        .as_ref()
        .and_then(|m| m.get("categorized_features"))
    {
        let list = |k: &str| {
            c.get(k)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let (agent, user, infra, other) = (
            list("agent_behavioral_issues"),
            list("user_followup_patterns"),
            list("infrastructure_issues"),
            list("other"),
        );
        if !agent.is_empty() {
            lines.push(format!("Potential agent issues: {}", feature_list(&agent)));
        }
        if !user.is_empty() {
            lines.push(format!(
                "Predicted user follow-up needs: {}",
                feature_list(&user)
            ));
        }
        if !infra.is_empty() {
            lines.push(format!("Infrastructure issues: {}", feature_list(&infra)));
        }
        if !other.is_empty() {
            lines.push(format!("Other observations: {}", feature_list(&other)));
        }
        if !(agent.is_empty() && user.is_empty() && infra.is_empty() && other.is_empty()) {
            lines.push(String::new());
        }
    }
    lines.push("Please review what you've done and verify each requirement is met.".into());
    lines.push("List what's working and what needs fixing, then complete the task.".into());
    lines.join("\n")
}

/// JSON as Python's `json.dumps` writes it (`", "` and `": "`
/// separators, non-ASCII kept).
pub fn python_json(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), python_json(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(python_json).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

/// The conversation in the Qwen3-Instruct ChatML template (no generation
/// prompt): a system block carrying the tools (when any), then one block
/// per message; consecutive tool results share one `user` block of
/// `<tool_response>` parts.
pub fn render_chatml(messages: &[(String, String)], tools: &[Value]) -> String {
    let mut out = String::new();
    let first_system = messages.first().filter(|(r, _)| r == "system");
    if !tools.is_empty() {
        out.push_str("<|im_start|>system\n");
        if let Some((_, text)) = first_system {
            out.push_str(text);
            out.push_str("\n\n");
        }
        out.push_str(
            "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
You are provided with function signatures within <tools></tools> XML tags:\n<tools>",
        );
        for t in tools {
            out.push('\n');
            out.push_str(&python_json(t));
        }
        out.push_str(
            "\n</tools>\n\nFor each function call, return a json object with function name and \
arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \
\"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n",
        );
    } else if let Some((_, text)) = first_system {
        out.push_str(&format!("<|im_start|>system\n{text}<|im_end|>\n"));
    }
    for (i, (role, text)) in messages.iter().enumerate() {
        match role.as_str() {
            "system" if i == 0 => {}
            "user" | "system" | "assistant" => {
                out.push_str(&format!("<|im_start|>{role}\n{text}<|im_end|>\n"));
            }
            "tool" => {
                if i == 0 || messages[i - 1].0 != "tool" {
                    out.push_str("<|im_start|>user");
                }
                out.push_str("\n<tool_response>\n");
                out.push_str(text);
                out.push_str("\n</tool_response>");
                if i + 1 == messages.len() || messages[i + 1].0 != "tool" {
                    out.push_str("<|im_end|>\n");
                }
            }
            _ => {}
        }
    }
    out
}

//! Where a conversation runs its hooks: SessionStart on first use,
//! UserPromptSubmit when a user message arrives, PreToolUse when actions
//! are emitted (a block is recorded in `blocked_actions` and answered with
//! a `UserRejectObservation` instead of running), PostToolUse after each
//! observation, Stop when the agent finishes, SessionEnd on close. Every
//! hook run is recorded as a `HookExecutionEvent`.

use crate::conversation::error::ConversationError;
use crate::conversation::local::LocalConversation;
use crate::hooks::run::{HookRun, blocking_reason, execution_event};
use crate::hooks::{HookEventType, HookInput, HookRunner};
use openhands_wire::content::TextContent;
use openhands_wire::event::{ActionEvent, Event, EventBody, MessageEvent, SourceType};
use openhands_wire::message::{Message, Role};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Prefix of the message telling the agent why it may not stop yet.
pub const STOP_FEEDBACK_PREFIX: &str = "[Stop hook feedback]";

/// Where a hook run belongs.
#[derive(Default)]
struct Links<'a> {
    tool: Option<&'a str>,
    action_id: Option<&'a str>,
    message_id: Option<&'a str>,
    input: Option<Map<String, Value>>,
}

fn events_for(t: HookEventType, runs: &[HookRun], links: &Links<'_>) -> Vec<Event> {
    runs.iter()
        .map(|r| {
            Event::with_source(
                SourceType::Hook,
                EventBody::HookExecution(execution_event(
                    t,
                    r,
                    links.tool,
                    links.action_id,
                    links.message_id,
                    links.input.clone(),
                )),
            )
        })
        .collect()
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// What the UserPromptSubmit hooks decided about a message.
#[derive(Debug, Default)]
pub(crate) struct PromptVerdict {
    /// Context to append to the turn.
    pub context: Option<String>,
    /// Why the message is blocked.
    pub blocked: Option<String>,
    /// The hook events to record before the message.
    pub events: Vec<Event>,
}

impl LocalConversation {
    pub(crate) fn hook_runner(&self) -> Option<Arc<HookRunner>> {
        self.inner.ext.hook_runner()
    }

    /// Runs the SessionStart hooks once per conversation object (after the
    /// system prompt is in the log); their additional context becomes an
    /// environment message. Blocking.
    pub(crate) fn session_start_hooks(&self) -> Result<(), ConversationError> {
        let Some(runner) = self.hook_runner() else {
            return Ok(());
        };
        if !self.inner.ext.start_session() {
            return Ok(());
        }
        if !runner.has(HookEventType::SessionStart) {
            return Ok(());
        }
        let r = runner.clone();
        let runs = crate::hooks::block_on(async move {
            r.run(HookEventType::SessionStart, &HookInput::default(), false)
                .await
        })
        .unwrap_or_default();
        let mut events = events_for(HookEventType::SessionStart, &runs, &Links::default());
        let context: Vec<String> = runs
            .iter()
            .filter_map(|r| r.result.additional_context.clone())
            .filter(|c| !c.is_empty())
            .collect();
        if !context.is_empty() {
            events.push(environment_message(context.join("\n")));
        }
        if !events.is_empty() {
            self.commit(false, move |_| events)?;
        }
        Ok(())
    }

    /// Runs the UserPromptSubmit hooks for the message `message_id` (only
    /// for messages `from_user`). Blocking.
    pub(crate) fn user_prompt_hooks(
        &self,
        message_id: &str,
        text: &str,
        from_user: bool,
    ) -> PromptVerdict {
        let Some(runner) = self
            .hook_runner()
            .filter(|r| from_user && r.has(HookEventType::UserPromptSubmit))
        else {
            return PromptVerdict::default();
        };
        let input = HookInput {
            message: Some(text.to_string()),
            ..HookInput::default()
        };
        let runs = crate::hooks::block_on(async move {
            runner
                .run(HookEventType::UserPromptSubmit, &input, true)
                .await
        })
        .unwrap_or_default();
        let links = Links {
            message_id: Some(message_id),
            input: Some(object(json!({"message": text}))),
            ..Links::default()
        };
        let context: Vec<String> = runs
            .iter()
            .filter_map(|r| r.result.additional_context.clone())
            .filter(|c| !c.is_empty())
            .collect();
        PromptVerdict {
            context: (!context.is_empty()).then(|| context.join("\n")),
            blocked: blocking_reason(&runs),
            events: events_for(HookEventType::UserPromptSubmit, &runs, &links),
        }
    }

    /// Runs the PreToolUse hooks of freshly emitted actions; blocked ones
    /// are recorded in `blocked_actions` (answered when they would run).
    pub(crate) async fn pre_tool_hooks(
        &self,
        actions: &[(String, ActionEvent)],
    ) -> Result<(), ConversationError> {
        let Some(runner) = self
            .hook_runner()
            .filter(|r| r.has(HookEventType::PreToolUse))
        else {
            return Ok(());
        };
        for (id, a) in actions {
            let tool_input = a.action.clone().unwrap_or(Value::Null);
            let input = HookInput {
                tool_name: Some(a.tool_name.clone()),
                tool_input: Some(tool_input.clone()),
                ..HookInput::default()
            };
            let runs = runner.run(HookEventType::PreToolUse, &input, true).await;
            if runs.is_empty() {
                continue;
            }
            let links = Links {
                tool: Some(&a.tool_name),
                action_id: Some(id),
                input: Some(object(
                    json!({"tool_name": a.tool_name, "tool_input": tool_input}),
                )),
                ..Links::default()
            };
            let events = events_for(HookEventType::PreToolUse, &runs, &links);
            let blocked = blocking_reason(&runs);
            let id = id.clone();
            self.commit_async(blocked.is_some(), move |c| {
                if let Some(reason) = blocked {
                    tracing::warn!(action = %id, %reason, "hook blocked an action");
                    c.state_mut()
                        .blocked_actions
                        .insert(id, Value::String(reason));
                }
                events
            })
            .await?;
        }
        Ok(())
    }

    /// Takes the hook block recorded for `action_id`, if any.
    pub(crate) async fn take_blocked_action(
        &self,
        action_id: &str,
    ) -> Result<Option<String>, ConversationError> {
        let blocked = self
            .inner
            .log
            .read(|c| c.state.blocked_actions.contains_key(action_id));
        if !blocked {
            return Ok(None);
        }
        let id = action_id.to_string();
        let (tx, rx) = std::sync::mpsc::channel();
        self.commit_async(true, move |c| {
            let reason = c.state_mut().blocked_actions.remove(&id);
            let _ = tx.send(reason.map(|r| match r {
                Value::String(s) => s,
                other => other.to_string(),
            }));
            Vec::new()
        })
        .await?;
        Ok(rx.try_recv().ok().flatten())
    }

    /// Runs the PostToolUse hooks for an observation.
    pub(crate) async fn post_tool_hooks(
        &self,
        action_id: &str,
        action: &ActionEvent,
        observation: &Value,
    ) -> Result<(), ConversationError> {
        let Some(runner) = self
            .hook_runner()
            .filter(|r| r.has(HookEventType::PostToolUse))
        else {
            return Ok(());
        };
        let tool_input = action.action.clone().unwrap_or(Value::Null);
        let input = HookInput {
            tool_name: Some(action.tool_name.clone()),
            tool_input: Some(tool_input.clone()),
            tool_response: Some(observation.clone()),
            ..HookInput::default()
        };
        let runs = runner.run(HookEventType::PostToolUse, &input, false).await;
        if runs.is_empty() {
            return Ok(());
        }
        let links = Links {
            tool: Some(&action.tool_name),
            action_id: Some(action_id),
            input: Some(object(json!({
                "tool_name": action.tool_name,
                "tool_input": tool_input,
                "tool_response": observation,
            }))),
            ..Links::default()
        };
        let events = events_for(HookEventType::PostToolUse, &runs, &links);
        self.commit_async(false, move |_| events).await?;
        Ok(())
    }

    /// When the agent finished: runs the Stop hooks. `true` when it may
    /// stop; otherwise the feedback is sent to the agent and the status is
    /// back to `running`.
    pub(crate) async fn stop_hooks(&self) -> Result<bool, ConversationError> {
        let Some(runner) = self.hook_runner().filter(|r| r.has(HookEventType::Stop)) else {
            return Ok(true);
        };
        let mut metadata = Map::new();
        metadata.insert("reason".into(), json!("agent_finished"));
        let input = HookInput {
            metadata,
            ..HookInput::default()
        };
        let runs = runner.run(HookEventType::Stop, &input, true).await;
        let links = Links {
            input: Some(object(json!({"reason": "agent_finished"}))),
            ..Links::default()
        };
        let mut events = events_for(HookEventType::Stop, &runs, &links);
        let Some(reason) = blocking_reason(&runs) else {
            if !events.is_empty() {
                self.commit_async(false, move |_| events).await?;
            }
            return Ok(true);
        };
        let context: Vec<String> = runs
            .iter()
            .filter_map(|r| r.result.additional_context.clone())
            .filter(|c| !c.is_empty())
            .collect();
        let feedback = if context.is_empty() {
            reason
        } else {
            context.join("\n")
        };
        events.push(environment_message(format!(
            "{STOP_FEEDBACK_PREFIX} {feedback}"
        )));
        self.commit_async(true, move |c| {
            events.extend(c.set_status(openhands_wire::state::ExecutionStatus::Running));
            events
        })
        .await?;
        Ok(false)
    }

    /// Runs the SessionEnd hooks (once, when the session had started).
    pub(crate) async fn session_end_hooks(&self) -> Result<(), ConversationError> {
        let Some(runner) = self
            .hook_runner()
            .filter(|r| r.has(HookEventType::SessionEnd))
        else {
            return Ok(());
        };
        if !self.inner.ext.end_session() {
            return Ok(());
        }
        let runs = runner
            .run(HookEventType::SessionEnd, &HookInput::default(), false)
            .await;
        let events = events_for(HookEventType::SessionEnd, &runs, &Links::default());
        if !events.is_empty() {
            self.commit_async(false, move |_| events).await?;
        }
        Ok(())
    }

    /// If the last user message was blocked by a hook: forgets the block,
    /// finishes without calling the model and returns `true`.
    pub(crate) async fn finish_if_message_blocked(&self) -> Result<bool, ConversationError> {
        let blocked = self.inner.log.read(|c| {
            c.state
                .last_user_message_id
                .as_ref()
                .is_some_and(|id| c.state.blocked_messages.contains_key(id))
        });
        if !blocked {
            return Ok(false);
        }
        self.commit_async(true, |c| {
            if let Some(id) = c.state().last_user_message_id.clone() {
                c.state_mut().blocked_messages.remove(&id);
            }
            let mut out: Vec<Event> = Vec::new();
            out.extend(c.set_status(openhands_wire::state::ExecutionStatus::Finished));
            out
        })
        .await?;
        Ok(true)
    }
}

/// A user-role message from the environment (hook context, stop feedback).
fn environment_message(text: String) -> Event {
    Event::with_source(
        SourceType::Environment,
        EventBody::Message(MessageEvent {
            llm_message: Message {
                role: Role::User,
                ..Message::user(text)
            },
            llm_response_id: None,
            activated_skills: Vec::new(),
            extended_content: Vec::<TextContent>::new(),
            sender: None,
            critic_result: None,
        }),
    )
}

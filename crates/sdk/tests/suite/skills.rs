//! Skills end to end: a repository on disk, the agent context's switches,
//! and the exact requests the model receives.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use openhands_sdk::{LocalConversation, skills::context::SkillSources};
use openhands_testkit::{Script, Turn};
use openhands_wire::event::EventBody;
use openhands_wire::message::Role;
use serde_json::json;
use std::fs;

fn repo() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    fs::write(
        p.join("AGENTS.md"),
        "Always run `make lint` before committing.\n",
    )
    .unwrap();
    fs::create_dir_all(p.join(".agents/skills/pdf-tools/scripts")).unwrap();
    fs::write(
        p.join(".agents/skills/pdf-tools/SKILL.md"),
        "---\nname: pdf-tools\ndescription: Extract text from PDF files.\n---\nRun scripts/extract.sh FILE.\nTool: !`ls scripts/ 2>/dev/null || echo extract.sh-missing` (`!`not run``)\n",
    )
    .unwrap();
    fs::write(
        p.join(".agents/skills/pdf-tools/scripts/extract.sh"),
        "pdftotext \"$1\" -\n",
    )
    .unwrap();
    fs::write(
        p.join(".agents/skills/encryption.md"),
        "---\ntriggers:\n- encrypt\n- decrypt\n---\nUse the rot13 helper in tools/enc.sh.\n",
    )
    .unwrap();
    fs::write(
        p.join(".agents/skills/broken.md"),
        "---\ntriggers: [unterminated\n---\nnever loaded\n",
    )
    .unwrap();
    d
}

fn system_text(req: &openhands_llm::LlmRequest) -> String {
    req.messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.text())
        .collect::<Vec<_>>()
        .join("\n")
}

fn conversation_in(
    workspace: &std::path::Path,
    turns: Vec<Turn>,
    context: serde_json::Value,
) -> (
    LocalConversation,
    std::sync::Arc<openhands_testkit::ScriptedLlm>,
    tempfile::TempDir,
) {
    let root = tempfile::tempdir().unwrap();
    let (agent, backend) = agent(Script::from_turns(turns));
    let mut spec = agent.spec().clone();
    spec.agent_context = Some(context);
    let agent = openhands_sdk::Agent::with_llm(spec, agent.llm().clone(), registry());
    let mut options = persisted(root.path());
    options.extensions.skill_sources = SkillSources::default();
    let c = LocalConversation::new(agent, workspace, options).unwrap();
    (c, backend, root)
}

#[tokio::test]
async fn project_skills_reach_the_system_prompt_and_triggers_activate_once() {
    let repo = repo();
    let (c, backend, _root) = conversation_in(
        repo.path(),
        vec![Turn::text("ok"), Turn::text("ok2"), Turn::text("ok3")],
        json!({"load_project_skills": true}),
    );
    c.send_message("hello").unwrap();
    c.run().await.unwrap();
    let reqs = backend.requests();
    let system = system_text(&reqs[0]);
    assert!(
        system.contains(
            "[BEGIN context from [agents]]\nAlways run `make lint` before committing.\n\n[END Context]"
        ),
        "{system}"
    );
    assert!(system.contains("<REPO_CONTEXT>"));
    assert!(system.contains(
        "<name>pdf-tools</name>\n    <description>Extract text from PDF files.</description>"
    ));
    assert!(system.contains("<name>encryption</name>"));
    assert!(!system.contains("never loaded"));
    // an invocable AgentSkills skill brings the invoke_skill tool
    assert!(reqs[0].tools.iter().any(|t| t.name == "invoke_skill"));
    // the resolved skills are recorded in the state's agent
    let state = c.state_json();
    let names: Vec<&str> = state["agent"]["agent_context"]["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["agents", "pdf-tools", "encryption"]);

    c.send_message("Please ENCRYPT my notes").unwrap();
    c.run().await.unwrap();
    let reqs = backend.requests();
    let user = reqs[1].messages.last().unwrap();
    let text = user.text();
    assert!(text.contains("Please ENCRYPT my notes"));
    assert!(
        text.contains("<EXTRA_INFO>") && text.contains("\"encrypt\""),
        "{text}"
    );
    assert!(text.contains("Use the rot13 helper in tools/enc.sh."));
    let msg = c
        .events()
        .into_iter()
        .rev()
        .find_map(|e| match e.body {
            EventBody::Message(m) if m.llm_message.role == Role::User => Some(m),
            _ => None,
        })
        .unwrap();
    assert_eq!(msg.activated_skills, ["encryption"]);
    assert_eq!(msg.extended_content.len(), 1);
    assert_eq!(c.state().activated_knowledge_skills, ["encryption"]);

    // activated once per conversation
    c.send_message("decrypt it again").unwrap();
    c.run().await.unwrap();
    let reqs = backend.requests();
    assert!(
        !reqs[2]
            .messages
            .last()
            .unwrap()
            .text()
            .contains("EXTRA_INFO")
    );
    assert_eq!(c.state().activated_knowledge_skills, ["encryption"]);
}

#[tokio::test]
async fn without_the_switch_the_repository_is_not_read() {
    let repo = repo();
    let (c, backend, _root) = conversation_in(repo.path(), vec![Turn::text("ok")], json!({}));
    c.send_message("encrypt").unwrap();
    c.run().await.unwrap();
    let reqs = backend.requests();
    assert!(!system_text(&reqs[0]).contains("make lint"));
    assert!(!reqs[0].tools.iter().any(|t| t.name == "invoke_skill"));
    assert!(c.state().activated_knowledge_skills.is_empty());
}

#[tokio::test]
async fn the_model_invokes_a_skill_and_sees_its_content() {
    let repo = repo();
    let (c, backend, _root) = conversation_in(
        repo.path(),
        vec![
            Turn::tool_call("invoke_skill", json!({"name": "pdf-tools"})),
            Turn::text("done"),
        ],
        json!({"load_project_skills": true}),
    );
    c.send_message("read the pdf").unwrap();
    c.run().await.unwrap();
    let reqs = backend.requests();
    let tool_result = reqs[1].messages.last().unwrap().text();
    assert!(
        tool_result.contains("Run scripts/extract.sh FILE."),
        "{tool_result}"
    );
    assert!(
        tool_result.contains(".agents/skills/pdf-tools"),
        "{tool_result}"
    );
    // inline commands run in the workspace; code spans do not
    assert!(
        tool_result.contains("Tool: extract.sh-missing (`!`not run``)"),
        "{tool_result}"
    );
    let obs = c
        .events()
        .into_iter()
        .find_map(|e| match e.body {
            EventBody::Observation(o) => Some(o),
            _ => None,
        })
        .unwrap();
    assert_eq!(obs.observation["kind"], "InvokeSkillObservation");
    assert_eq!(obs.observation["skill_name"], "pdf-tools");
    assert_eq!(c.state().invoked_skills, ["pdf-tools"]);
}

#[tokio::test]
async fn user_and_public_skills_come_from_configured_places() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    fs::create_dir_all(home.path().join(".openhands/skills")).unwrap();
    fs::write(
        home.path().join(".openhands/skills/house-style.md"),
        "Tabs, never spaces.",
    )
    .unwrap();
    let public = tempfile::tempdir().unwrap();
    fs::create_dir_all(public.path().join("skills/github")).unwrap();
    fs::write(
        public.path().join("skills/github/SKILL.md"),
        "---\nname: github\ndescription: Work with GitHub.\ntriggers: [github]\n---\nUse gh.",
    )
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    let (agent, backend) = agent(Script::from_turns(vec![Turn::text("ok")]));
    let mut spec = agent.spec().clone();
    spec.agent_context = Some(json!({"load_user_skills": true, "load_public_skills": true}));
    let agent = openhands_sdk::Agent::with_llm(spec, agent.llm().clone(), registry());
    let mut options = persisted(root.path());
    options.extensions.skill_sources = SkillSources {
        home: Some(home.path().into()),
        public_skills_dir: Some(public.path().into()),
        openhands_dir: None,
        ..Default::default()
    };
    let c = LocalConversation::new(agent, work.path(), options).unwrap();
    c.send_message("open a github issue").unwrap();
    c.run().await.unwrap();
    let reqs = backend.requests();
    let system = system_text(&reqs[0]);
    assert!(
        system.contains("[BEGIN context from [house-style]]\nTabs, never spaces.\n[END Context]"),
        "{system}"
    );
    assert!(system.contains("<name>github</name>"));
    assert!(reqs[0].messages.last().unwrap().text().contains("Use gh."));

    // without a local copy nor a place to keep a clone, load_public_skills is refused
    let (agent, _b) = agent_turns(vec![Turn::text("ok")]);
    let mut spec = agent.spec().clone();
    spec.agent_context = Some(json!({"load_public_skills": true}));
    let agent = openhands_sdk::Agent::with_llm(spec, agent.llm().clone(), registry());
    let mut options = persisted(root.path());
    options.extensions.skill_sources = SkillSources::default();
    let c = LocalConversation::new(agent, work.path(), options).unwrap();
    let err = c.send_message("hi").unwrap_err().to_string();
    assert!(err.contains("load_public_skills"), "{err}");
}

#[tokio::test]
async fn persistent_memory_is_opt_in_and_reaches_the_prompt() {
    let work = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    fs::create_dir_all(home.path().join(".openhands/memory")).unwrap();
    fs::write(
        home.path().join(".openhands/memory/MEMORY.md"),
        "- user prefers uv",
    )
    .unwrap();
    fs::create_dir_all(work.path().join(".openhands/memory")).unwrap();
    fs::write(
        work.path().join(".openhands/memory/MEMORY.md"),
        "- tests need PGHOST",
    )
    .unwrap();
    let run = |ctx: serde_json::Value| {
        let root = tempfile::tempdir().unwrap();
        let (agent, backend) = agent(Script::from_turns(vec![Turn::text("ok")]));
        let mut spec = agent.spec().clone();
        spec.agent_context = Some(ctx);
        let agent = openhands_sdk::Agent::with_llm(spec, agent.llm().clone(), registry());
        let mut options = persisted(root.path());
        options.extensions.skill_sources = SkillSources {
            home: Some(home.path().into()),
            public_skills_dir: None,
            openhands_dir: None,
            ..Default::default()
        };
        let c = LocalConversation::new(agent, work.path(), options).unwrap();
        (c, backend, root)
    };
    let (c, backend, _r) = run(json!({"load_memory": true}));
    c.send_message("hi").unwrap();
    c.run().await.unwrap();
    let system = system_text(&backend.requests()[0]);
    assert!(
        system.contains("<MEMORY>\n"),
        "the maintenance guidance is in the prompt"
    );
    assert!(
        system.contains(
            "# User memory (~/.openhands/memory/MEMORY.md)\n- user prefers uv\n\n\
         # Project memory (.openhands/memory/MEMORY.md)\n- tests need PGHOST\n</MEMORY_CONTEXT>"
        ),
        "{system}"
    );
    let (c, backend, _r) = run(json!({}));
    c.send_message("hi").unwrap();
    c.run().await.unwrap();
    let system = system_text(&backend.requests()[0]);
    assert!(!system.contains("<MEMORY>") && !system.contains("PGHOST"));
}

#[tokio::test]
async fn a_task_skill_is_invoked_by_its_slash_name_with_its_inputs() {
    let work = tempfile::tempdir().unwrap();
    fs::create_dir_all(work.path().join(".openhands/skills")).unwrap();
    fs::write(
        work.path().join(".openhands/skills/bug_fix.md"),
        "---\nname: bug_fix\ninputs:\n  - name: BUG\n    description: what goes wrong\n---\nReproduce ${BUG}, then fix it.\n",
    )
    .unwrap();
    let (c, backend, _root) = conversation_in(
        work.path(),
        vec![Turn::text("on it")],
        json!({"load_project_skills": true}),
    );
    c.send_message("/bug_fix the login page crashes").unwrap();
    c.run().await.unwrap();
    let text = backend.requests()[0].messages.last().unwrap().text();
    assert!(text.contains("\"/bug_fix\""), "{text}");
    assert!(text.contains("Reproduce ${BUG}, then fix it."));
    assert!(text.contains("If any of these inputs is missing, ask the user"));
    assert_eq!(c.state().activated_knowledge_skills, ["bug_fix"]);
    let state = c.state_json();
    let skill = &state["agent"]["agent_context"]["skills"][0];
    assert_eq!(
        skill["trigger"],
        json!({"type": "task", "triggers": ["/bug_fix"]})
    );
    assert_eq!(
        skill["inputs"],
        json!([{"name": "BUG", "description": "what goes wrong"}])
    );
}

/// Without a local copy, `load_public_skills` clones the public repository
/// (here a bare repository made in the test) into the OpenHands directory's
/// cache and reads its skills; a later conversation finds the clone when
/// the remote is gone, and without any copy the error names the remote.
#[tokio::test]
async fn public_skills_are_fetched_with_git_and_the_cache_serves_offline() {
    use crate::plugin_support::git;
    let scratch = tempfile::tempdir().unwrap();
    let upstream = scratch.path().join("extensions");
    fs::create_dir_all(upstream.join("skills/github")).unwrap();
    fs::write(
        upstream.join("skills/github/SKILL.md"),
        "---\nname: github\ndescription: Work with GitHub.\ntriggers: [github]\n---\nUse gh.",
    )
    .unwrap();
    git(&upstream, &["init", "--quiet"]);
    git(&upstream, &["add", "."]);
    git(&upstream, &["commit", "--quiet", "-m", "skills"]);
    let bare = scratch.path().join("extensions.git");
    git(
        scratch.path(),
        &[
            "clone",
            "--quiet",
            "--bare",
            upstream.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let sources = SkillSources {
        home: Some(home.path().into()),
        public_skills_repo: Some(bare.to_string_lossy().into_owned()),
        public_skills_ref: Some("main".into()),
        ..Default::default()
    };
    let run = |sources: SkillSources| {
        let work = work.path().to_path_buf();
        async move {
            let root = tempfile::tempdir().unwrap();
            let (agent, backend) = agent(Script::from_turns(vec![Turn::text("ok")]));
            let mut spec = agent.spec().clone();
            spec.agent_context = Some(json!({"load_public_skills": true}));
            let agent = openhands_sdk::Agent::with_llm(spec, agent.llm().clone(), registry());
            let mut options = persisted(root.path());
            options.extensions.skill_sources = sources;
            let c = LocalConversation::new(agent, &work, options).unwrap();
            match c.send_message("open a github issue") {
                Ok(_) => {
                    c.run().await.unwrap();
                    Ok(system_text(&backend.requests()[0]))
                }
                Err(e) => Err(e.to_string()),
            }
        }
    };
    let system = run(sources.clone()).await.unwrap();
    assert!(system.contains("<name>github</name>"), "{system}");
    let clone = home.path().join(".openhands/cache/skills/public-skills");
    assert!(clone.join("skills/github/SKILL.md").is_file());

    // The remote is gone: a later conversation reads the clone (refreshed
    // moments ago; the offline fallback after the refresh interval is the
    // unit tests' part).
    fs::rename(&bare, scratch.path().join("gone.git")).unwrap();
    let system = run(sources.clone()).await.unwrap();
    assert!(system.contains("<name>github</name>"), "{system}");

    // No copy anywhere: the error says what could not be fetched.
    let other_home = tempfile::tempdir().unwrap();
    let err = run(SkillSources {
        home: Some(other_home.path().into()),
        ..sources
    })
    .await
    .unwrap_err();
    assert!(
        err.contains("extensions.git") && err.contains("no copy is cached"),
        "{err}"
    );
}

//! The GitHub workflow templates of `crates/openhands/examples/workflows`:
//! each template's `Run agent` step runs with bash as GitHub would run it,
//! against the scripted LLM, with a fake `gh` on `PATH` (recording its
//! calls) and, for the TODO workflow, a local bare repository as `origin`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_testkit::{MockLlmHandle, MockLlmServer, Script, Turn};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The templates' folder.
fn templates() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../openhands/examples/workflows")
}

/// The `run: |` script of the step named `name` in a workflow or action
/// file (the templates' own layout: `- name:` then `run: |` and a block
/// indented deeper than `run:`).
fn step_script(file: &str, name: &str) -> String {
    let text = std::fs::read_to_string(templates().join(file)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim() == format!("- name: {name}"))
        .unwrap_or_else(|| panic!("{file} has no step {name:?}"));
    let run = (start..lines.len())
        .find(|&i| lines[i].trim() == "run: |")
        .unwrap_or_else(|| panic!("step {name:?} of {file} has no `run: |` block"));
    let indent = |l: &str| l.len() - l.trim_start().len();
    let key_indent = indent(lines[run]);
    let body: Vec<&str> = lines[run + 1..]
        .iter()
        .take_while(|l| l.trim().is_empty() || indent(l) > key_indent)
        .copied()
        .collect();
    let strip = body
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| indent(l))
        .min()
        .unwrap();
    let script: Vec<&str> = body.iter().map(|l| l.get(strip..).unwrap_or("")).collect();
    assert!(
        !script.iter().any(|l| l.contains("${{")),
        "{file}: expressions belong in env:, not in run scripts"
    );
    script.join("\n") + "\n"
}

/// A fake `gh`: logs each call (and any `--body-file` content) to
/// `$GH_LOG`, answers `pr list` and `pr diff`.
const FAKE_GH: &str = r#"#!/usr/bin/env bash
echo "gh $*" >> "$GH_LOG"
prev=""
for a in "$@"; do
  if [ "$prev" = "--body-file" ]; then echo "body: $(cat "$a")" >> "$GH_LOG"; fi
  prev="$a"
done
case "$1 $2" in
  "pr list") echo '[{"number": 7, "author": {"login": "bob"}, "reviewRequests": []}]' ;;
  "pr diff") printf 'diff --git a/app.py b/app.py\n+def greet(name):\n+    return "Hello, " + name\n' ;;
esac
"#;

/// Scratch space of one workflow run.
struct Runner {
    _dir: tempfile::TempDir,
    root: PathBuf,
    work: PathBuf,
    llm: MockLlmHandle,
    _rt: tokio::runtime::Runtime,
}

impl Runner {
    fn new(turns: Vec<Turn>) -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let script = Script::from_turns(turns).with_toolless_reply(Turn::text("A title"));
        let llm = rt.block_on(MockLlmServer::start(script, 0)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let work = root.join("repo");
        for d in ["repo", "bin", "temp", "home"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let gh = root.join("bin/gh");
        std::fs::write(&gh, FAKE_GH).unwrap();
        std::fs::set_permissions(&gh, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        Self {
            _dir: dir,
            root,
            work,
            llm,
            _rt: rt,
        }
    }

    /// Runs `script` with bash in the repository, as the step would run.
    fn run(&self, script: &str, env: &[(&str, &str)]) -> Output {
        let openhands = PathBuf::from(env!("CARGO_BIN_EXE_openhands"));
        let path = format!(
            "{}:{}:{}",
            self.root.join("bin").display(),
            openhands.parent().unwrap().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Command::new("bash");
        cmd.arg("-e")
            .arg("-c")
            .arg(script)
            .current_dir(&self.work)
            .env("PATH", path)
            .env("HOME", self.root.join("home"))
            .env("RUNNER_TEMP", self.root.join("temp"))
            .env("GH_LOG", self.root.join("gh.log"))
            .env("GH_TOKEN", "ghs_fake")
            .env("LLM_MODEL", "openai/mock-model")
            .env("LLM_API_KEY", "mock-key")
            .env("LLM_BASE_URL", self.llm.base_url())
            .env(
                "OPENHANDS_CONVERSATIONS_DIR",
                self.root.join("conversations"),
            )
            .env("GIT_CONFIG_GLOBAL", self.root.join("home/.gitconfig"))
            .env_remove("OH_PERSISTENCE_DIR")
            .env_remove("LOG_LEVEL");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "step failed: {}\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn gh_log(&self) -> String {
        std::fs::read_to_string(self.root.join("gh.log")).unwrap_or_default()
    }

    /// Every prompt text the model received.
    fn prompts(&self) -> String {
        self.llm
            .completion_requests()
            .iter()
            .map(|r| r.body.to_string())
            .collect()
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn assign_reviews_agent_uses_gh_with_the_prompt() {
    let runner = Runner::new(vec![
        Turn::tool_call(
            "terminal",
            json!({"command": "gh pr list --json number,author,reviewRequests"}),
        ),
        Turn::tool_call(
            "terminal",
            json!({"command": "gh pr edit 7 --add-reviewer alice && gh pr comment 7 --body '[Automatic Post]: I have assigned alice as a reviewer based on git blame information.'"}),
        ),
        Turn::tool_call("finish", json!({"message": "Assigned alice to #7."})),
    ]);
    let script = step_script("assign-reviews.yml", "Run agent");
    runner.run(
        &script,
        &[
            ("PROMPT_LOCATION", ""),
            ("PROMPT_STRING", "Organize the open pull requests with gh."),
        ],
    );
    let log = runner.gh_log();
    assert!(log.contains("gh pr list --json"), "{log}");
    assert!(log.contains("gh pr edit 7 --add-reviewer alice"), "{log}");
    assert!(
        log.contains("gh pr comment 7 --body [Automatic Post]"),
        "{log}"
    );
    assert_eq!(
        std::fs::read_to_string(runner.work.join("output/last-message.md"))
            .unwrap()
            .trim(),
        "Assigned alice to #7."
    );
    let events = std::fs::read_to_string(runner.work.join("output/events.jsonl")).unwrap();
    assert!(events.lines().count() >= 6, "{events}");
    assert!(events.contains("\"kind\":\"ActionEvent\""), "{events}");
    assert!(
        runner
            .prompts()
            .contains("Organize the open pull requests with gh.")
    );
}

#[test]
fn assign_reviews_reads_the_prompt_from_a_file() {
    let runner = Runner::new(vec![Turn::tool_call(
        "finish",
        json!({"message": "Nothing to do."}),
    )]);
    let prompt = runner.root.join("prompt-file.txt");
    std::fs::write(&prompt, "Only look at issues labelled needs-info.").unwrap();
    let script = step_script("assign-reviews.yml", "Run agent");
    runner.run(
        &script,
        &[
            ("PROMPT_LOCATION", prompt.to_str().unwrap()),
            ("PROMPT_STRING", ""),
        ],
    );
    assert!(
        runner
            .prompts()
            .contains("Only look at issues labelled needs-info.")
    );
}

#[test]
fn pr_review_action_posts_the_agents_review() {
    let review = "The change adds greet(); it has no test. Verdict: approve with nits.";
    let runner = Runner::new(vec![
        Turn::tool_call("terminal", json!({"command": "cat \"$PR_DIFF_FILE\""})),
        Turn::tool_call("finish", json!({"message": review})),
    ]);
    let script = step_script("pr-review/action.yml", "Run agent");
    runner.run(
        &script,
        &[
            ("LLM_MODELS", "openai/mock-a, openai/mock-b"),
            ("LLM_BASE_URL", &runner.llm.base_url()),
            ("PR_NUMBER", "42"),
            ("PR_TITLE", "Add greet"),
        ],
    );
    let log = runner.gh_log();
    assert!(log.contains("gh pr diff 42"), "{log}");
    assert!(
        log.contains("gh pr review 42 --comment --body-file"),
        "{log}"
    );
    assert!(log.contains(&format!("body: {review}")), "{log}");
    let prompts = runner.prompts();
    assert!(
        prompts.contains("Review pull request #42 (Add greet)"),
        "{prompts}"
    );
    // The diff reached the model through the terminal.
    assert!(
        prompts.contains("return \\\"Hello, \\\" + name"),
        "{prompts}"
    );
    // One of the configured models was picked.
    assert!(
        prompts.contains("\"model\":\"mock-a\"") || prompts.contains("\"model\":\"mock-b\""),
        "{prompts}"
    );
    // The action's inputs are the reference's.
    let action = std::fs::read_to_string(templates().join("pr-review/action.yml")).unwrap();
    for input in [
        "llm-model:",
        "llm-base-url:",
        "review-style:",
        "extensions-version:",
        "extensions-repo:",
        "llm-api-key:",
        "github-token:",
    ] {
        assert!(
            action.contains(&format!("\n  {input}")),
            "input {input} missing"
        );
    }
}

#[test]
fn todo_workflow_opens_a_pull_request_per_todo() {
    let runner = Runner::new(vec![
        Turn::tool_call(
            "terminal",
            json!({"command": "printf 'def greet(name):\\n    return \"Hello, \" + name\\n' > app.py"}),
        ),
        Turn::tool_call("finish", json!({"message": "Added greet()."})),
    ]);
    let origin = runner.root.join("origin.git");
    git(
        &runner.root,
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            origin.to_str().unwrap(),
        ],
    );
    git(&runner.work, &["init", "-q", "-b", "main"]);
    std::fs::write(
        runner.work.join("app.py"),
        "# TODO(openhands): add a greet function\n",
    )
    .unwrap();
    git(&runner.work, &["add", "."]);
    git(&runner.work, &["commit", "-q", "-m", "start"]);
    git(
        &runner.work,
        &["remote", "add", "origin", origin.to_str().unwrap()],
    );
    git(&runner.work, &["push", "-q", "origin", "main"]);

    let script = step_script("todo-management.yml", "Run agent");
    let out = runner.run(
        &script,
        &[("MAX_TODOS", "3"), ("TODO_IDENTIFIER", "TODO(openhands)")],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("found 1 TODO(s)"), "{stdout}");

    let branches = git(&origin, &["branch", "--list", "openhands/todo-*"]);
    let branch = branches.trim().trim_start_matches("* ").to_string();
    assert!(branch.starts_with("openhands/todo-"), "{branches}");
    let file = git(&origin, &["show", &format!("{branch}:app.py")]);
    assert!(
        file.contains("def greet(name):") && !file.contains("TODO"),
        "{file}"
    );
    let log = runner.gh_log();
    assert!(
        log.contains(&format!(
            "gh pr create --base main --head {branch} --title Implement TODO: add a greet function"
        )),
        "{log}"
    );
    assert!(log.contains("body: Added greet()."), "{log}");
    // A second run skips the TODO whose branch exists.
    runner.run(
        &script,
        &[("MAX_TODOS", "3"), ("TODO_IDENTIFIER", "TODO(openhands)")],
    );
    assert_eq!(runner.gh_log().matches("gh pr create").count(), 1);
}

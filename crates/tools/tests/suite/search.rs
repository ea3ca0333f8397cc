//! `grep` and `glob`: matching, filters, ignore files, ordering, truncation.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_sdk::tool::{Tool, ToolCallContext, ToolEnv};
use openhands_tools::{GlobTool, GrepTool};
use serde_json::{Value, json};
use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

async fn call(tool: &dyn Tool, args: Value) -> Value {
    let Value::Object(map) = args else {
        panic!("arguments must be an object")
    };
    let action = tool.parse_action(map).expect("valid arguments");
    tool.execute(action, &ToolCallContext::default())
        .await
        .expect("execute")
}

fn text(obs: &Value) -> String {
    obs["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn write(root: &Path, rel: &str, body: &str, age_secs: u64) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, body).unwrap();
    let t = SystemTime::now() - Duration::from_secs(age_secs);
    fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

fn list(obs: &Value, key: &str) -> Vec<String> {
    obs[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

/// A canonical temp dir (so paths compare equal to canonicalized results).
fn tree() -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(d.path()).unwrap();
    (d, root)
}

#[tokio::test]
async fn grep_finds_files_newest_first_case_insensitive() {
    let (_d, root) = tree();
    write(&root, "old.rs", "fn Main() {}\n", 300);
    write(&root, "src/new.rs", "fn main() {}\n", 10);
    write(&root, "src/mid.py", "def main(): pass\n", 100);
    write(&root, "src/none.rs", "nothing here\n", 5);
    let tool = GrepTool::new(&ToolEnv::new(&root));
    let obs = call(&tool, json!({"pattern":"fn\\s+main|def main"})).await;
    assert_eq!(obs["is_error"], false, "{}", text(&obs));
    assert_eq!(
        list(&obs, "matches"),
        vec![
            root.join("src/new.rs").display().to_string(),
            root.join("src/mid.py").display().to_string(),
            root.join("old.rs").display().to_string(),
        ]
    );
    assert_eq!(obs["pattern"], "fn\\s+main|def main");
    assert_eq!(obs["search_path"], root.display().to_string());
    assert_eq!(obs["truncated"], false);
    assert!(obs.get("include_pattern").is_none());
    assert!(text(&obs).contains("3 file(s)"));
    assert_eq!(obs["kind"], "GrepObservation");
}

#[tokio::test]
async fn grep_include_filters_by_name() {
    let (_d, root) = tree();
    write(&root, "a.py", "needle\n", 1);
    write(&root, "deep/b.py", "needle\n", 2);
    write(&root, "c.rs", "needle\n", 3);
    write(&root, "d.tsx", "needle\n", 4);
    let tool = GrepTool::new(&ToolEnv::new(&root));
    let obs = call(&tool, json!({"pattern":"needle","include":"*.py"})).await;
    assert_eq!(list(&obs, "matches").len(), 2);
    assert_eq!(obs["include_pattern"], "*.py");
    let obs = call(&tool, json!({"pattern":"needle","include":"*.{rs,tsx}"})).await;
    let m = list(&obs, "matches");
    assert_eq!(m.len(), 2);
    assert!(m.iter().all(|p| p.ends_with(".rs") || p.ends_with(".tsx")));
}

#[tokio::test]
async fn grep_respects_gitignore_hidden_and_binary() {
    let (_d, root) = tree();
    write(&root, ".gitignore", "build/\n*.log\n", 1);
    write(&root, "build/out.txt", "needle\n", 1);
    write(&root, "run.log", "needle\n", 1);
    write(&root, ".hidden/x.txt", "needle\n", 1);
    write(&root, ".env", "needle\n", 1);
    write(&root, "keep.txt", "needle\n", 1);
    fs::write(root.join("blob.bin"), b"needle\0\x01\x02").unwrap();
    let tool = GrepTool::new(&ToolEnv::new(&root));
    let obs = call(&tool, json!({"pattern":"needle"})).await;
    assert_eq!(
        list(&obs, "matches"),
        vec![root.join("keep.txt").display().to_string()]
    );
}

#[tokio::test]
async fn grep_truncates_at_100() {
    let (_d, root) = tree();
    for i in 0..130 {
        write(&root, &format!("f{i:03}.txt"), "hit\n", 1000 - i);
    }
    let tool = GrepTool::new(&ToolEnv::new(&root));
    let obs = call(&tool, json!({"pattern":"hit"})).await;
    let m = list(&obs, "matches");
    assert_eq!(m.len(), 100);
    assert_eq!(obs["truncated"], true);
    // Newest (largest i) first.
    assert_eq!(m[0], root.join("f129.txt").display().to_string());
    assert!(text(&obs).contains("130"));
}

#[tokio::test]
async fn grep_relative_path_and_errors() {
    let (_d, root) = tree();
    write(&root, "sub/a.txt", "x\n", 1);
    write(&root, "other/b.txt", "x\n", 1);
    let tool = GrepTool::new(&ToolEnv::new(&root));
    let obs = call(&tool, json!({"pattern":"x","path":"sub"})).await;
    assert_eq!(
        list(&obs, "matches"),
        vec![root.join("sub/a.txt").display().to_string()]
    );
    assert_eq!(obs["search_path"], root.join("sub").display().to_string());

    let obs = call(&tool, json!({"pattern":"x","path":"missing"})).await;
    assert_eq!(obs["is_error"], true);
    assert!(text(&obs).contains("does not exist"));

    let obs = call(&tool, json!({"pattern":"(unclosed"})).await;
    assert_eq!(obs["is_error"], true);
    assert!(
        text(&obs).contains("Invalid regular expression"),
        "{}",
        text(&obs)
    );

    let obs = call(&tool, json!({"pattern":"zzz"})).await;
    assert_eq!(obs["is_error"], false);
    assert!(text(&obs).starts_with("No file"));
    assert_eq!(obs["matches"], json!([]));
}

#[tokio::test]
async fn grep_single_file_path() {
    let (_d, root) = tree();
    write(&root, "a.txt", "alpha\n", 1);
    let tool = GrepTool::new(&ToolEnv::new(&root));
    let obs = call(&tool, json!({"pattern":"ALPHA","path":root.join("a.txt")})).await;
    assert_eq!(
        list(&obs, "matches"),
        vec![root.join("a.txt").display().to_string()]
    );
}

#[tokio::test]
async fn grep_cancelled_search_stops() {
    let (_d, root) = tree();
    for i in 0..300 {
        write(&root, &format!("d{}/f{i}.txt", i % 7), "hit\n", 1);
    }
    let tool = GrepTool::new(&ToolEnv::new(&root));
    let ctx = ToolCallContext::default();
    ctx.cancel.cancel();
    let Value::Object(m) = json!({"pattern":"hit"}) else {
        unreachable!()
    };
    let action = tool.parse_action(m).unwrap();
    let obs = tool.execute(action, &ctx).await.unwrap();
    assert_eq!(obs["truncated"], true);
    assert!(list(&obs, "matches").len() < 300);
    assert!(text(&obs).contains("incomplete"));
}

#[tokio::test]
async fn glob_patterns() {
    let (_d, root) = tree();
    write(&root, "a.rs", "", 50);
    write(&root, "src/b.rs", "", 10);
    write(&root, "src/x/c.rs", "", 30);
    write(&root, "src/d.py", "", 1);
    write(&root, "README.md", "", 1);
    write(&root, "target/e.rs", "", 1);
    write(&root, ".gitignore", "target/\n", 1);
    let tool = GlobTool::new(&ToolEnv::new(&root));
    let rel = |o: &Value| -> Vec<String> {
        list(o, "files")
            .into_iter()
            .map(|p| {
                p.strip_prefix(&format!("{}/", root.display()))
                    .unwrap()
                    .to_string()
            })
            .collect()
    };

    let obs = call(&tool, json!({"pattern":"**/*.rs"})).await;
    assert_eq!(rel(&obs), vec!["src/b.rs", "src/x/c.rs", "a.rs"]);
    assert_eq!(obs["search_path"], root.display().to_string());
    assert_eq!(obs["pattern"], "**/*.rs");
    assert_eq!(obs["truncated"], false);
    assert_eq!(obs["kind"], "GlobObservation");

    let obs = call(&tool, json!({"pattern":"*.rs"})).await;
    assert_eq!(rel(&obs).len(), 3);
    let obs = call(&tool, json!({"pattern":"src/*.rs"})).await;
    assert_eq!(rel(&obs), vec!["src/b.rs"]);
    let obs = call(&tool, json!({"pattern":"src/**/*.{rs,py}"})).await;
    assert_eq!(rel(&obs), vec!["src/d.py", "src/b.rs", "src/x/c.rs"]);
    let obs = call(&tool, json!({"pattern":"*.rs","path":"src"})).await;
    assert_eq!(obs["search_path"], root.join("src").display().to_string());
    assert_eq!(list(&obs, "files").len(), 2);
    let abs = format!("{}/src/**/*.rs", root.display());
    let obs = call(&tool, json!({"pattern":abs})).await;
    assert_eq!(rel(&obs), vec!["src/b.rs", "src/x/c.rs"]);
    assert_eq!(obs["pattern"], abs);
    let obs = call(&tool, json!({"pattern":"*.none"})).await;
    assert_eq!(obs["files"], json!([]));
    assert!(text(&obs).starts_with("No file"));
}

#[tokio::test]
async fn glob_errors_and_truncation() {
    let (_d, root) = tree();
    for i in 0..105 {
        write(&root, &format!("f{i}.txt"), "", 1000 - i);
    }
    let tool = GlobTool::new(&ToolEnv::new(&root));
    let obs = call(&tool, json!({"pattern":"*.txt"})).await;
    assert_eq!(list(&obs, "files").len(), 100);
    assert_eq!(obs["truncated"], true);
    assert_eq!(
        list(&obs, "files")[0],
        root.join("f104.txt").display().to_string()
    );

    let obs = call(&tool, json!({"pattern":"*.txt","path":"nope"})).await;
    assert_eq!(obs["is_error"], true);
    assert!(text(&obs).contains("not a directory"));
    let obs = call(&tool, json!({"pattern":"[z"})).await;
    assert_eq!(obs["is_error"], true);
    assert!(text(&obs).contains("invalid glob"), "{}", text(&obs));
}

#[test]
fn definitions_are_read_only() {
    let d = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(d.path());
    for (tool, name, kind) in [
        (
            Box::new(GrepTool::new(&env)) as Box<dyn Tool>,
            "grep",
            "GrepTool",
        ),
        (Box::new(GlobTool::new(&env)), "glob", "GlobTool"),
    ] {
        let def = serde_json::to_value(tool.definition()).unwrap();
        assert_eq!(def["kind"], kind);
        assert_eq!(def["title"], name);
        assert_eq!(def["annotations"]["readOnlyHint"], true);
        assert_eq!(def["annotations"]["destructiveHint"], false);
        assert_eq!(def["annotations"]["openWorldHint"], false);
    }
}

#[tokio::test]
async fn sandboxed_searches_stay_in_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    write(&ws, "in.txt", "needle inside", 0);
    write(dir.path(), "private/secret.txt", "needle outside", 0);
    std::os::unix::fs::symlink(dir.path().join("private"), ws.join("escape")).unwrap();
    let mut env = ToolEnv::new(&ws);
    env.exec.sandbox = Some(
        openhands_workspace::exec::Sandbox::new(Default::default(), &ws).expect("bwrap works here"),
    );
    let outside = dir.path().join("private").display().to_string();
    for tool in [
        Box::new(GrepTool::new(&env)) as Box<dyn Tool>,
        Box::new(GlobTool::new(&env)),
    ] {
        let args = |path: &str| {
            if tool.name() == "grep" {
                json!({"pattern": "needle", "path": path})
            } else {
                json!({"pattern": "*.txt", "path": path})
            }
        };
        let inside = call(tool.as_ref(), args(".")).await;
        assert_ne!(inside["is_error"], json!(true), "{inside}");
        assert!(text(&inside).contains("in.txt"), "{inside}");
        for path in [outside.as_str(), "../private", "escape"] {
            let refused = call(tool.as_ref(), args(path)).await;
            assert_eq!(
                refused["is_error"],
                json!(true),
                "{} {path}: {refused}",
                tool.name()
            );
            assert!(text(&refused).contains("sandboxed"), "{refused}");
        }
    }
    // Unsandboxed, the same search is allowed (as in the reference).
    let plain = GrepTool::new(&ToolEnv::new(&ws));
    let ok = call(&plain, json!({"pattern": "needle", "path": outside})).await;
    assert!(text(&ok).contains("secret.txt"), "{ok}");
}

//! `apply_patch` through the `Tool` interface.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_sdk::tool::{Tool, ToolCallContext, ToolEnv};
use openhands_tools::ApplyPatchTool;
use serde_json::{Value, json};
use std::fs;
use std::path::Path;

async fn apply(tool: &ApplyPatchTool, patch: &str) -> Value {
    let Value::Object(map) = json!({ "patch": patch }) else {
        unreachable!()
    };
    let action = tool.parse_action(map).expect("valid arguments");
    assert_eq!(action["kind"], "ApplyPatchAction");
    tool.execute(action, &ToolCallContext::default())
        .await
        .expect("execute")
}

fn setup() -> (tempfile::TempDir, ApplyPatchTool) {
    let dir = tempfile::tempdir().unwrap();
    let tool = ApplyPatchTool::new(&ToolEnv::new(dir.path()));
    (dir, tool)
}

fn read(dir: &Path, rel: &str) -> String {
    fs::read_to_string(dir.join(rel)).unwrap()
}

fn patch(lines: &[&str]) -> String {
    let mut s = lines.join("\n");
    s.push('\n');
    s
}

#[tokio::test]
async fn add_file() {
    let (dir, tool) = setup();
    let obs = apply(
        &tool,
        &patch(&[
            "*** Begin Patch",
            "*** Add File: pkg/hello.py",
            "+print('hi')",
            "+",
            "+x = 1",
            "*** End Patch",
        ]),
    )
    .await;
    assert_eq!(obs["is_error"], false, "{}", obs["message"]);
    assert_eq!(read(dir.path(), "pkg/hello.py"), "print('hi')\n\nx = 1\n");
    assert_eq!(obs["fuzz"], 0);
    assert_eq!(obs["kind"], "ApplyPatchObservation");
    assert_eq!(
        obs["commit"],
        json!({"changes":{"pkg/hello.py":{"type":"add","new_content":"print('hi')\n\nx = 1\n"}}})
    );
    assert!(obs["message"].as_str().unwrap().contains("A pkg/hello.py"));
    assert_eq!(obs["content"][0]["text"], obs["message"]);
}

#[tokio::test]
async fn add_refuses_existing_file() {
    let (dir, tool) = setup();
    fs::write(dir.path().join("a.txt"), "keep\n").unwrap();
    let obs = apply(
        &tool,
        &patch(&[
            "*** Begin Patch",
            "*** Add File: a.txt",
            "+new",
            "*** End Patch",
        ]),
    )
    .await;
    assert_eq!(obs["is_error"], true);
    assert!(obs["message"].as_str().unwrap().contains("already exists"));
    assert_eq!(read(dir.path(), "a.txt"), "keep\n");
}

#[tokio::test]
async fn delete_file() {
    let (dir, tool) = setup();
    fs::write(dir.path().join("gone.txt"), "bye\n").unwrap();
    let obs = apply(
        &tool,
        &patch(&[
            "*** Begin Patch",
            "*** Delete File: gone.txt",
            "*** End Patch",
        ]),
    )
    .await;
    assert_eq!(obs["is_error"], false, "{}", obs["message"]);
    assert!(!dir.path().join("gone.txt").exists());
    assert_eq!(
        obs["commit"]["changes"]["gone.txt"],
        json!({"type":"delete","old_content":"bye\n"})
    );
    let obs = apply(
        &tool,
        &patch(&[
            "*** Begin Patch",
            "*** Delete File: gone.txt",
            "*** End Patch",
        ]),
    )
    .await;
    assert_eq!(obs["is_error"], true);
    assert!(obs["message"].as_str().unwrap().contains("no such file"));
}

#[tokio::test]
async fn update_with_several_sections() {
    let (dir, tool) = setup();
    let src = "class A:\n    def f(self):\n        return 1\n\nclass B:\n    def f(self):\n        return 1\n\ndef tail():\n    pass\n";
    fs::write(dir.path().join("m.py"), src).unwrap();
    let obs = apply(
        &tool,
        &patch(&[
            "*** Begin Patch",
            "*** Update File: m.py",
            "@@ class B:",
            "     def f(self):",
            "-        return 1",
            "+        return 2",
            "@@ def tail():",
            "-    pass",
            "+    return 'end'",
            "*** End of File",
            "*** End Patch",
        ]),
    )
    .await;
    assert_eq!(obs["is_error"], false, "{}", obs["message"]);
    assert_eq!(
        read(dir.path(), "m.py"),
        "class A:\n    def f(self):\n        return 1\n\nclass B:\n    def f(self):\n        return 2\n\ndef tail():\n    return 'end'\n"
    );
    let change = &obs["commit"]["changes"]["m.py"];
    assert_eq!(change["type"], "update");
    assert_eq!(change["old_content"], src);
    assert!(
        obs["message"].as_str().unwrap().contains("M m.py (+2 -2)"),
        "{}",
        obs["message"]
    );
}

#[tokio::test]
async fn update_and_move() {
    let (dir, tool) = setup();
    fs::write(dir.path().join("old.rs"), "fn a() {}\nfn b() {}\n").unwrap();
    let obs = apply(
        &tool,
        &patch(&[
            "*** Begin Patch",
            "*** Update File: old.rs",
            "*** Move to: src/new.rs",
            "@@",
            " fn a() {}",
            "-fn b() {}",
            "+fn c() {}",
            "*** End Patch",
        ]),
    )
    .await;
    assert_eq!(obs["is_error"], false, "{}", obs["message"]);
    assert!(!dir.path().join("old.rs").exists());
    assert_eq!(read(dir.path(), "src/new.rs"), "fn a() {}\nfn c() {}\n");
    assert_eq!(
        obs["commit"]["changes"]["old.rs"]["move_path"],
        "src/new.rs"
    );
}

#[tokio::test]
async fn move_onto_existing_file_is_refused() {
    let (dir, tool) = setup();
    fs::write(dir.path().join("a"), "1\n").unwrap();
    fs::write(dir.path().join("b"), "2\n").unwrap();
    let obs = apply(
        &tool,
        &patch(&[
            "*** Begin Patch",
            "*** Update File: a",
            "*** Move to: b",
            "-1",
            "+3",
            "*** End Patch",
        ]),
    )
    .await;
    assert_eq!(obs["is_error"], true);
    assert_eq!(read(dir.path(), "a"), "1\n");
    assert_eq!(read(dir.path(), "b"), "2\n");
}

#[tokio::test]
async fn whitespace_tolerance_is_counted_as_fuzz() {
    let (dir, tool) = setup();
    fs::write(dir.path().join("w.txt"), "alpha   \n\tbeta\ngamma\n").unwrap();
    let obs = apply(
        &tool,
        &patch(&[
            "*** Begin Patch",
            "*** Update File: w.txt",
            "@@",
            " alpha",
            "-beta",
            "+BETA",
            " gamma",
            "*** End Patch",
        ]),
    )
    .await;
    assert_eq!(obs["is_error"], false, "{}", obs["message"]);
    assert_eq!(obs["fuzz"], 1);
    assert_eq!(read(dir.path(), "w.txt"), "alpha\nBETA\ngamma\n");
    assert!(obs["message"].as_str().unwrap().contains("whitespace"));
}

#[tokio::test]
async fn failure_in_one_file_changes_nothing() {
    let (dir, tool) = setup();
    fs::write(dir.path().join("ok.txt"), "one\ntwo\n").unwrap();
    fs::write(dir.path().join("bad.txt"), "red\ngreen\n").unwrap();
    fs::write(dir.path().join("doomed.txt"), "still here\n").unwrap();
    let obs = apply(
        &tool,
        &patch(&[
            "*** Begin Patch",
            "*** Add File: created.txt",
            "+new",
            "*** Update File: ok.txt",
            "-two",
            "+TWO",
            "*** Delete File: doomed.txt",
            "*** Update File: bad.txt",
            "@@",
            " red",
            "-blue",
            "+BLUE",
            "*** End Patch",
        ]),
    )
    .await;
    assert_eq!(obs["is_error"], true);
    let msg = obs["message"].as_str().unwrap();
    assert!(msg.contains("bad.txt"), "{msg}");
    assert!(msg.contains("-blue") || msg.contains("blue"), "{msg}");
    assert!(msg.contains("Nothing was changed"), "{msg}");
    assert!(obs.get("commit").is_none());
    assert_eq!(read(dir.path(), "ok.txt"), "one\ntwo\n");
    assert_eq!(read(dir.path(), "bad.txt"), "red\ngreen\n");
    assert_eq!(read(dir.path(), "doomed.txt"), "still here\n");
    assert!(!dir.path().join("created.txt").exists());
    // No temporary files were left behind.
    let names: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
}

#[tokio::test]
async fn failed_write_rolls_back_earlier_files() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, tool) = setup();
    fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    fs::create_dir(dir.path().join("locked")).unwrap();
    fs::write(dir.path().join("locked/z.txt"), "z\n").unwrap();
    fs::set_permissions(dir.path().join("locked"), fs::Permissions::from_mode(0o555)).unwrap();
    if fs::write(dir.path().join("locked/probe"), "").is_ok() {
        // Running with privileges that ignore permissions; nothing to test.
        fs::remove_file(dir.path().join("locked/probe")).unwrap();
        fs::set_permissions(dir.path().join("locked"), fs::Permissions::from_mode(0o755)).unwrap();
        return;
    }
    let obs = apply(
        &tool,
        &patch(&[
            "*** Begin Patch",
            "*** Update File: a.txt",
            "-a",
            "+A",
            "*** Update File: locked/z.txt",
            "-z",
            "+Z",
            "*** End Patch",
        ]),
    )
    .await;
    fs::set_permissions(dir.path().join("locked"), fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(obs["is_error"], true);
    assert_eq!(read(dir.path(), "a.txt"), "a\n");
    assert_eq!(read(dir.path(), "locked/z.txt"), "z\n");
}

#[tokio::test]
async fn paths_outside_workspace_are_refused() {
    let (dir, tool) = setup();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("x.txt"), "x\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
    for p in [
        "../escape.txt".to_string(),
        outside.path().join("x.txt").display().to_string(),
        "link/x.txt".to_string(),
    ] {
        let obs = apply(
            &tool,
            &patch(&[
                "*** Begin Patch",
                &format!("*** Delete File: {p}"),
                "*** End Patch",
            ]),
        )
        .await;
        assert_eq!(obs["is_error"], true, "{p}");
        assert!(
            obs["message"]
                .as_str()
                .unwrap()
                .contains("outside the workspace"),
            "{}",
            obs["message"]
        );
    }
    assert!(outside.path().join("x.txt").exists());
    // An absolute path inside the workspace is fine.
    let inside = dir.path().join("in.txt").display().to_string();
    let obs = apply(
        &tool,
        &patch(&[
            "*** Begin Patch",
            &format!("*** Add File: {inside}"),
            "+ok",
            "*** End Patch",
        ]),
    )
    .await;
    assert_eq!(obs["is_error"], false, "{}", obs["message"]);
    assert_eq!(read(dir.path(), "in.txt"), "ok\n");
}

#[tokio::test]
async fn malformed_patch_reports_line() {
    let (_dir, tool) = setup();
    let obs = apply(&tool, "*** Update File: a\n*** End Patch").await;
    assert_eq!(obs["is_error"], true);
    assert!(obs["message"].as_str().unwrap().contains("*** Begin Patch"));
    let obs = apply(
        &tool,
        &patch(&[
            "*** Begin Patch",
            "*** Update File: a",
            "@@",
            "oops",
            "*** End Patch",
        ]),
    )
    .await;
    assert_eq!(obs["is_error"], true);
    assert!(
        obs["message"].as_str().unwrap().contains("line 4"),
        "{}",
        obs["message"]
    );
}

#[tokio::test]
async fn missing_file_for_update_suggests_add() {
    let (_dir, tool) = setup();
    let obs = apply(
        &tool,
        &patch(&[
            "*** Begin Patch",
            "*** Update File: nope.txt",
            "-a",
            "+b",
            "*** End Patch",
        ]),
    )
    .await;
    assert_eq!(obs["is_error"], true);
    assert!(
        obs["message"]
            .as_str()
            .unwrap()
            .contains("*** Add File: nope.txt")
    );
}

#[tokio::test]
async fn crlf_file_keeps_line_endings_and_mode() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, tool) = setup();
    let p = dir.path().join("run.sh");
    fs::write(&p, "echo a\r\necho b\r\n").unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    let obs = apply(
        &tool,
        &patch(&[
            "*** Begin Patch",
            "*** Update File: run.sh",
            " echo a",
            "-echo b",
            "+echo c",
            "*** End Patch",
        ]),
    )
    .await;
    assert_eq!(obs["is_error"], false, "{}", obs["message"]);
    assert_eq!(fs::read_to_string(&p).unwrap(), "echo a\r\necho c\r\n");
    assert_eq!(
        fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o755
    );
}

#[test]
fn definition_matches_reference_annotations() {
    let (_dir, tool) = setup();
    let def = serde_json::to_value(tool.definition()).unwrap();
    assert_eq!(
        def["annotations"],
        json!({"title":"apply_patch","readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":false})
    );
    assert_eq!(def["kind"], "ApplyPatchTool");
    assert_eq!(def["action_type"], "ApplyPatchAction");
    assert_eq!(def["observation_type"], "ApplyPatchObservation");
}

//! `file_editor` through the `Tool` interface: every command and error path.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_sdk::tool::{Tool, ToolCallContext, ToolEnv};
use openhands_tools::file_editor::{Editor, FileEditorTool};
use serde_json::{Value, json};
use std::fs;
use std::path::Path;

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

fn setup() -> (tempfile::TempDir, FileEditorTool) {
    let dir = tempfile::tempdir().unwrap();
    let tool = FileEditorTool::new(&ToolEnv::new(dir.path()));
    (dir, tool)
}

fn p(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

#[tokio::test]
async fn create_writes_file_and_reports_like_reference() {
    let (dir, tool) = setup();
    let path = p(dir.path(), "sub/f.txt");
    let obs = call(
        &tool,
        json!({"command":"create","path":path,"file_text":"line1\n"}),
    )
    .await;
    assert_eq!(obs["kind"], "FileEditorObservation");
    assert_eq!(obs["is_error"], false);
    assert_eq!(obs["command"], "create");
    assert_eq!(obs["path"], path);
    assert_eq!(obs["prev_exist"], false);
    assert_eq!(obs["new_content"], "line1\n");
    assert!(obs.get("old_content").is_none());
    assert_eq!(fs::read_to_string(&path).unwrap(), "line1\n");
    // Field order as in the reference example.
    let keys: Vec<&String> = obs.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "content",
            "is_error",
            "command",
            "path",
            "prev_exist",
            "new_content",
            "kind"
        ]
    );
}

#[tokio::test]
async fn create_refuses_to_overwrite() {
    let (dir, tool) = setup();
    let path = p(dir.path(), "f.txt");
    fs::write(&path, "keep").unwrap();
    let obs = call(
        &tool,
        json!({"command":"create","path":path,"file_text":"new"}),
    )
    .await;
    assert_eq!(obs["is_error"], true);
    assert!(text(&obs).contains("already exists"), "{}", text(&obs));
    assert_eq!(fs::read_to_string(&path).unwrap(), "keep");
}

#[tokio::test]
async fn create_requires_file_text() {
    let (dir, tool) = setup();
    let obs = call(&tool, json!({"command":"create","path":p(dir.path(),"x")})).await;
    assert_eq!(obs["is_error"], true);
    assert!(text(&obs).contains("file_text"));
}

#[tokio::test]
async fn action_json_omits_absent_fields() {
    let (_dir, tool) = setup();
    let Value::Object(args) =
        json!({"command":"create","path":"/tmp/peer/f.txt","file_text":"line1\n"})
    else {
        unreachable!()
    };
    let action = tool.parse_action(args).unwrap();
    assert_eq!(
        action,
        json!({"command":"create","path":"/tmp/peer/f.txt","file_text":"line1\n","kind":"FileEditorAction"})
    );
}

#[tokio::test]
async fn parse_rejects_unknown_and_bad_arguments() {
    let (_dir, tool) = setup();
    for bad in [
        json!({"command":"view","path":"/x","bogus":1}),
        json!({"command":"delete","path":"/x"}),
        json!({"path":"/x"}),
        json!({"command":"insert","path":"/x","insert_line":"two"}),
    ] {
        let Value::Object(m) = bad else {
            unreachable!()
        };
        assert!(tool.parse_action(m).is_err());
    }
    // Quoted numbers are accepted.
    let Value::Object(m) =
        json!({"command":"view","path":"/x","view_range":"[1, 5]","insert_line":"3"})
    else {
        unreachable!()
    };
    let a = tool.parse_action(m).unwrap();
    assert_eq!(a["view_range"], json!([1, 5]));
    assert_eq!(a["insert_line"], 3);
}

#[tokio::test]
async fn view_file_numbers_lines() {
    let (dir, tool) = setup();
    let path = p(dir.path(), "a.py");
    fs::write(&path, "one\ntwo\nthree\n").unwrap();
    let obs = call(&tool, json!({"command":"view","path":path})).await;
    assert_eq!(obs["is_error"], false);
    let t = text(&obs);
    assert!(
        t.contains("     1\tone\n     2\ttwo\n     3\tthree\n"),
        "{t}"
    );
}

#[tokio::test]
async fn view_range_selects_and_validates() {
    let (dir, tool) = setup();
    let path = p(dir.path(), "a.txt");
    let body: String = (1..=10).map(|i| format!("l{i}\n")).collect();
    fs::write(&path, body).unwrap();

    let t = text(
        &call(
            &tool,
            json!({"command":"view","path":path,"view_range":[3,4]}),
        )
        .await,
    );
    assert!(t.contains("     3\tl3\n     4\tl4\n"), "{t}");
    // (The text also names the file, whose random temporary directory
    // may itself contain "l5".)
    assert!(!t.contains("\tl5\n"), "{t}");

    let t = text(
        &call(
            &tool,
            json!({"command":"view","path":path,"view_range":[9,-1]}),
        )
        .await,
    );
    assert!(t.contains("     9\tl9\n    10\tl10\n"), "{t}");

    // End past the file is clamped with a note.
    let obs = call(
        &tool,
        json!({"command":"view","path":path,"view_range":[9,50]}),
    )
    .await;
    assert_eq!(obs["is_error"], false);
    assert!(text(&obs).starts_with("NOTE:"));

    for bad in [
        json!([0, 3]),
        json!([11, -1]),
        json!([5, 2]),
        json!([1, 2, 3]),
    ] {
        let obs = call(
            &tool,
            json!({"command":"view","path":path,"view_range":bad}),
        )
        .await;
        assert_eq!(obs["is_error"], true, "{bad}");
        assert!(text(&obs).contains("view_range"));
    }
}

#[tokio::test]
async fn view_directory_lists_two_levels_without_hidden() {
    let (dir, tool) = setup();
    fs::create_dir_all(dir.path().join("src/inner/deep")).unwrap();
    fs::write(dir.path().join("src/inner/deep/z.rs"), "").unwrap();
    fs::write(dir.path().join("src/main.rs"), "").unwrap();
    fs::write(dir.path().join(".secret"), "").unwrap();
    let obs = call(&tool, json!({"command":"view","path":dir.path()})).await;
    let t = text(&obs);
    assert!(
        t.contains(&format!("{}/src/\n", dir.path().display())),
        "{t}"
    );
    assert!(t.contains(&format!("{}/src/main.rs", dir.path().display())));
    assert!(t.contains(&format!("{}/src/inner/", dir.path().display())));
    assert!(!t.contains("z.rs"));
    assert!(!t.contains(".secret\n"));
    assert!(t.contains("1 hidden entry"));
    // A range makes no sense for a directory.
    let obs = call(
        &tool,
        json!({"command":"view","path":dir.path(),"view_range":[1,2]}),
    )
    .await;
    assert_eq!(obs["is_error"], true);
}

#[tokio::test]
async fn view_missing_path_is_an_error() {
    let (dir, tool) = setup();
    let obs = call(
        &tool,
        json!({"command":"view","path":p(dir.path(),"nope.txt")}),
    )
    .await;
    assert_eq!(obs["is_error"], true);
    assert!(text(&obs).contains("does not exist"));
}

#[tokio::test]
async fn relative_path_suggests_absolute() {
    let (dir, tool) = setup();
    let obs = call(&tool, json!({"command":"view","path":"src/lib.rs"})).await;
    assert_eq!(obs["is_error"], true);
    let expected = format!("{}/src/lib.rs", dir.path().display());
    assert!(text(&obs).contains(&expected), "{}", text(&obs));
}

#[tokio::test]
async fn binary_file_is_refused() {
    let (dir, tool) = setup();
    let path = p(dir.path(), "blob.bin");
    fs::write(&path, [0x7f, b'E', b'L', b'F', 0, 0, 1]).unwrap();
    for args in [
        json!({"command":"view","path":path}),
        json!({"command":"str_replace","path":path,"old_str":"E","new_str":"X"}),
    ] {
        let obs = call(&tool, args).await;
        assert_eq!(obs["is_error"], true);
        assert!(text(&obs).contains("binary"), "{}", text(&obs));
    }
    // Not UTF-8 either.
    let latin = p(dir.path(), "latin1.txt");
    fs::write(&latin, [b'c', b'a', b'f', 0xe9, b'\n']).unwrap();
    let obs = call(&tool, json!({"command":"view","path":latin})).await;
    assert_eq!(obs["is_error"], true);
    assert!(text(&obs).contains("UTF-8"));
}

#[tokio::test]
async fn large_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let tool = FileEditorTool::with_editor(Editor::new(dir.path()).with_max_file_size(1024));
    let path = p(dir.path(), "big.txt");
    fs::write(&path, "x".repeat(2048)).unwrap();
    let obs = call(&tool, json!({"command":"view","path":path})).await;
    assert_eq!(obs["is_error"], true);
    assert!(text(&obs).contains("too large"), "{}", text(&obs));
}

#[tokio::test]
async fn default_limit_is_ten_megabytes() {
    let (dir, tool) = setup();
    let path = p(dir.path(), "big.log");
    let f = fs::File::create(&path).unwrap();
    f.set_len(10 * 1024 * 1024 + 1).unwrap();
    let obs = call(&tool, json!({"command":"view","path":path})).await;
    assert_eq!(obs["is_error"], true);
    assert!(text(&obs).contains("too large"));
}

#[tokio::test]
async fn str_replace_unique_match_edits_and_shows_snippet() {
    let (dir, tool) = setup();
    let path = p(dir.path(), "m.rs");
    let body: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    fs::write(&path, &body).unwrap();
    let obs = call(
        &tool,
        json!({"command":"str_replace","path":path,"old_str":"line 10\n","new_str":"ten\nTEN\n"}),
    )
    .await;
    assert_eq!(obs["is_error"], false, "{}", text(&obs));
    let t = text(&obs);
    assert!(t.contains("    10\tten\n    11\tTEN\n"), "{t}");
    assert!(t.contains("     6\tline 6\n"), "{t}");
    assert!(!t.contains("\tline 5\n"), "{t}");
    assert!(t.contains("    15\tline 14\n"), "{t}");
    assert_eq!(obs["old_content"], body);
    let new = fs::read_to_string(&path).unwrap();
    assert_eq!(obs["new_content"], new);
    assert!(new.contains("line 9\nten\nTEN\nline 11\n"));
}

#[tokio::test]
async fn str_replace_without_match_changes_nothing() {
    let (dir, tool) = setup();
    let path = p(dir.path(), "m.py");
    fs::write(&path, "def f():\n    return 1\n").unwrap();
    let obs = call(
        &tool,
        json!({"command":"str_replace","path":path,"old_str":"return 2","new_str":"return 3"}),
    )
    .await;
    assert_eq!(obs["is_error"], true);
    assert!(text(&obs).contains("does not occur"));
    // Indentation mismatch: the hint names the line.
    let obs = call(
        &tool,
        json!({"command":"str_replace","path":path,"old_str":"def f():\n  return 1","new_str":"x"}),
    )
    .await;
    assert_eq!(obs["is_error"], true);
    assert!(text(&obs).contains("line(s) 1"), "{}", text(&obs));
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "def f():\n    return 1\n"
    );
}

#[tokio::test]
async fn str_replace_with_several_matches_names_lines() {
    let (dir, tool) = setup();
    let path = p(dir.path(), "m.txt");
    fs::write(&path, "x = 1\ny = 2\nx = 1\nz\nx = 1\n").unwrap();
    let obs = call(
        &tool,
        json!({"command":"str_replace","path":path,"old_str":"x = 1","new_str":"x = 9"}),
    )
    .await;
    assert_eq!(obs["is_error"], true);
    let t = text(&obs);
    assert!(t.contains("3 times"), "{t}");
    assert!(t.contains("1, 3, 5"), "{t}");
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "x = 1\ny = 2\nx = 1\nz\nx = 1\n"
    );
}

#[tokio::test]
async fn str_replace_identical_or_empty_is_refused() {
    let (dir, tool) = setup();
    let path = p(dir.path(), "m.txt");
    fs::write(&path, "abc\n").unwrap();
    for (old, new) in [("abc", "abc"), ("", "x")] {
        let obs = call(
            &tool,
            json!({"command":"str_replace","path":path,"old_str":old,"new_str":new}),
        )
        .await;
        assert_eq!(obs["is_error"], true);
    }
    // Omitted new_str deletes the text.
    let obs = call(
        &tool,
        json!({"command":"str_replace","path":path,"old_str":"b"}),
    )
    .await;
    assert_eq!(obs["is_error"], false);
    assert_eq!(fs::read_to_string(&path).unwrap(), "ac\n");
}

#[tokio::test]
async fn str_replace_keeps_crlf_files_consistent() {
    let (dir, tool) = setup();
    let path = p(dir.path(), "w.txt");
    fs::write(&path, "a\r\nb\r\nc\r\n").unwrap();
    let obs = call(
        &tool,
        json!({"command":"str_replace","path":path,"old_str":"a\nb","new_str":"A\nB"}),
    )
    .await;
    assert_eq!(obs["is_error"], false, "{}", text(&obs));
    assert_eq!(fs::read_to_string(&path).unwrap(), "A\r\nB\r\nc\r\n");
}

#[tokio::test]
async fn str_replace_on_directory_is_refused() {
    let (dir, tool) = setup();
    let obs = call(
        &tool,
        json!({"command":"str_replace","path":dir.path(),"old_str":"a","new_str":"b"}),
    )
    .await;
    assert_eq!(obs["is_error"], true);
    assert!(text(&obs).contains("directory"));
}

#[tokio::test]
async fn insert_at_top_middle_end_and_out_of_range() {
    let (dir, tool) = setup();
    let path = p(dir.path(), "i.txt");
    fs::write(&path, "a\nb\n").unwrap();
    let obs = call(
        &tool,
        json!({"command":"insert","path":path,"insert_line":0,"new_str":"top"}),
    )
    .await;
    assert_eq!(obs["is_error"], false, "{}", text(&obs));
    assert_eq!(fs::read_to_string(&path).unwrap(), "top\na\nb\n");
    call(
        &tool,
        json!({"command":"insert","path":path,"insert_line":2,"new_str":"mid1\nmid2\n"}),
    )
    .await;
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "top\na\nmid1\nmid2\nb\n"
    );
    let obs = call(
        &tool,
        json!({"command":"insert","path":path,"insert_line":5,"new_str":"end"}),
    )
    .await;
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "top\na\nmid1\nmid2\nb\nend\n"
    );
    assert!(text(&obs).contains("     6\tend"), "{}", text(&obs));
    assert_eq!(obs["old_content"], "top\na\nmid1\nmid2\nb\n");

    for bad in [7, -1] {
        let obs = call(
            &tool,
            json!({"command":"insert","path":path,"insert_line":bad,"new_str":"x"}),
        )
        .await;
        assert_eq!(obs["is_error"], true);
        assert!(text(&obs).contains("between 0"), "{}", text(&obs));
    }
    let obs = call(&tool, json!({"command":"insert","path":path,"new_str":"x"})).await;
    assert_eq!(obs["is_error"], true);
    assert!(text(&obs).contains("insert_line"));
    let obs = call(
        &tool,
        json!({"command":"insert","path":path,"insert_line":1}),
    )
    .await;
    assert_eq!(obs["is_error"], true);
    assert!(text(&obs).contains("new_str"));
}

#[tokio::test]
async fn insert_after_last_line_without_newline() {
    let (dir, tool) = setup();
    let path = p(dir.path(), "n.txt");
    fs::write(&path, "a\nb").unwrap();
    call(
        &tool,
        json!({"command":"insert","path":path,"insert_line":2,"new_str":"c"}),
    )
    .await;
    assert_eq!(fs::read_to_string(&path).unwrap(), "a\nb\nc");
}

#[tokio::test]
async fn undo_reverts_edits_in_order() {
    let (dir, tool) = setup();
    let path = p(dir.path(), "u.txt");
    fs::write(&path, "v1\n").unwrap();
    call(
        &tool,
        json!({"command":"str_replace","path":path,"old_str":"v1","new_str":"v2"}),
    )
    .await;
    call(
        &tool,
        json!({"command":"insert","path":path,"insert_line":1,"new_str":"extra"}),
    )
    .await;
    assert_eq!(fs::read_to_string(&path).unwrap(), "v2\nextra\n");

    let obs = call(&tool, json!({"command":"undo_edit","path":path})).await;
    assert_eq!(obs["is_error"], false);
    assert_eq!(obs["old_content"], "v2\nextra\n");
    assert_eq!(obs["new_content"], "v2\n");
    assert!(text(&obs).contains("-extra"), "{}", text(&obs));
    assert_eq!(fs::read_to_string(&path).unwrap(), "v2\n");

    call(&tool, json!({"command":"undo_edit","path":path})).await;
    assert_eq!(fs::read_to_string(&path).unwrap(), "v1\n");

    let obs = call(&tool, json!({"command":"undo_edit","path":path})).await;
    assert_eq!(obs["is_error"], true);
    assert!(text(&obs).contains("no earlier version"));
}

#[tokio::test]
async fn undo_history_is_per_instance_and_per_file() {
    let (dir, tool) = setup();
    let a = p(dir.path(), "a.txt");
    let b = p(dir.path(), "b.txt");
    fs::write(&a, "a\n").unwrap();
    fs::write(&b, "b\n").unwrap();
    call(
        &tool,
        json!({"command":"str_replace","path":a,"old_str":"a","new_str":"A"}),
    )
    .await;
    let obs = call(&tool, json!({"command":"undo_edit","path":b})).await;
    assert_eq!(obs["is_error"], true);
    let other = FileEditorTool::new(&ToolEnv::new(dir.path()));
    let obs = call(&other, json!({"command":"undo_edit","path":a})).await;
    assert_eq!(obs["is_error"], true);
    assert_eq!(fs::read_to_string(&a).unwrap(), "A\n");
}

#[tokio::test]
async fn edits_through_symlink_keep_the_link() {
    let (dir, tool) = setup();
    let target = p(dir.path(), "real.txt");
    let link = p(dir.path(), "link.txt");
    fs::write(&target, "hello\n").unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    call(
        &tool,
        json!({"command":"str_replace","path":link,"old_str":"hello","new_str":"bye"}),
    )
    .await;
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read_to_string(&target).unwrap(), "bye\n");
}

#[tokio::test]
async fn view_image_returns_image_content() {
    let (dir, tool) = setup();
    let path = p(dir.path(), "pic.png");
    fs::write(&path, [0x89, b'P', b'N', b'G', 0, 1, 2]).unwrap();
    let obs = call(&tool, json!({"command":"view","path":path})).await;
    assert_eq!(obs["is_error"], false);
    assert_eq!(obs["content"][1]["type"], "image");
    let url = obs["content"][1]["image_urls"][0].as_str().unwrap();
    assert!(url.starts_with("data:image/png;base64,"));
}

#[tokio::test]
async fn long_view_is_clipped() {
    let (dir, tool) = setup();
    let path = p(dir.path(), "long.txt");
    let body: String = (0..5000)
        .map(|i| format!("this is line number {i}\n"))
        .collect();
    fs::write(&path, body).unwrap();
    let obs = call(&tool, json!({"command":"view","path":path})).await;
    let t = text(&obs);
    assert!(t.contains("<response clipped>"));
    assert!(t.len() < 20_000);
}

#[test]
fn definition_matches_reference_annotations() {
    let (_dir, tool) = setup();
    let def = serde_json::to_value(tool.definition()).unwrap();
    assert_eq!(
        def["annotations"],
        json!({"title":"file_editor","readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":false})
    );
    assert_eq!(def["kind"], "FileEditorTool");
    assert_eq!(def["action_type"], "FileEditorAction");
    assert_eq!(def["observation_type"], "FileEditorObservation");
    assert_eq!(def["title"], "file_editor");
}

#[tokio::test]
async fn a_sandboxed_conversations_editor_stays_in_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let mut env = ToolEnv::new(&ws);
    env.exec.sandbox = Some(
        openhands_workspace::exec::Sandbox::new(Default::default(), &ws).expect("bwrap works here"),
    );
    let tool = FileEditorTool::new(&env);
    let ws = fs::canonicalize(&ws).unwrap();
    let inside = call(
        &tool,
        json!({"command": "create", "path": p(&ws, "in.txt"), "file_text": "in\n"}),
    )
    .await;
    assert_ne!(inside["is_error"], json!(true), "{inside}");
    assert_eq!(fs::read_to_string(ws.join("in.txt")).unwrap(), "in\n");
    let outside = dir.path().join("out.txt");
    let refused = call(
        &tool,
        json!({"command": "create", "path": outside.display().to_string(), "file_text": "x"}),
    )
    .await;
    assert_eq!(refused["is_error"], json!(true), "{refused}");
    assert!(text(&refused).contains("sandboxed"), "{refused}");
    assert!(!outside.exists());
    // `..` and symlinks out of the workspace are resolved first.
    std::os::unix::fs::symlink(dir.path(), ws.join("up")).unwrap();
    let via_link = call(
        &tool,
        json!({"command": "view", "path": p(&ws, "up/out.txt")}),
    )
    .await;
    assert_eq!(via_link["is_error"], json!(true), "{via_link}");
    // Unsandboxed, the same path is allowed.
    let plain = FileEditorTool::new(&ToolEnv::new(&ws));
    let ok = call(
        &plain,
        json!({"command": "create", "path": outside.display().to_string(), "file_text": "x"}),
    )
    .await;
    assert_ne!(ok["is_error"], json!(true), "{ok}");
}

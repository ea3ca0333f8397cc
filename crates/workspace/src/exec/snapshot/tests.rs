#![allow(
    clippy::disallowed_methods,
    reason = "tests start programs, stage files and read the environment directly"
)]

use super::*;
use crate::exec::env::EnvPolicy;
use std::collections::BTreeMap;
use std::time::Duration;

/// A temporary HOME and a request whose environment points at it (the
/// test process's own environment is never changed).
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new(bashrc: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".bashrc"), bashrc).unwrap();
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn write_rc(&self, bashrc: &str) {
        // A new file (new inode), as editors that save atomically do.
        let tmp = self.path().join(".bashrc.new");
        std::fs::write(&tmp, bashrc).unwrap();
        std::fs::rename(&tmp, self.path().join(".bashrc")).unwrap();
    }

    fn request(&self, timeout: Duration) -> SnapshotRequest {
        let base: BTreeMap<String, String> = [
            (
                "PATH".to_string(),
                std::env::var("PATH").unwrap_or_default(),
            ),
            (
                "HOME".to_string(),
                self.path().to_string_lossy().into_owned(),
            ),
            ("KEEP_ME".to_string(), "session value".to_string()),
            ("PYENV_REHASH_TIMEOUT".to_string(), "2".to_string()),
        ]
        .into_iter()
        .collect();
        SnapshotRequest {
            shell: PathBuf::from("bash"),
            env: EnvPolicy::new().child_env_from(base),
            protected: ["KEEP_ME".to_string()].into_iter().collect(),
            timeout,
        }
    }
}

/// Sources `snapshot` in a fresh bash without rc files (with the request's
/// environment) and runs `script`; returns its standard output.
fn run_with(snapshot: &ShellSnapshot, req: &SnapshotRequest, script: &str) -> String {
    let mut cmd = std::process::Command::new("bash");
    req.env.apply(&mut cmd);
    let out = cmd
        .args(["--norc", "--noprofile", "-c"])
        .arg(format!(
            ". {}\n{script}",
            script::shell_quote(&snapshot.path().to_string_lossy())
        ))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const RC: &str = r#"
greet() { echo "hello $1"; }
alias say='echo said'
export FROM_RC="rc value"
export KEEP_ME="overwritten by rc"
export OH_SECRET_KEY="rc credential"
NOT_EXPORTED=plain
echo "noise from the rc file"
"#;

#[test]
fn the_rc_files_functions_aliases_and_variables_are_captured() {
    let home = Home::new(RC);
    let cache = ShellSnapshots::new();
    let req = home.request(Duration::from_secs(20));
    let snap = cache.get(&req).expect("capture failed");
    let text = std::fs::read_to_string(snap.path()).unwrap();
    assert!(!text.contains("noise"), "{text}");
    assert!(
        !text.contains("OH_SECRET_KEY"),
        "withheld name restored:\n{text}"
    );
    assert!(
        !text.contains("KEEP_ME"),
        "protected name restored:\n{text}"
    );
    let out = run_with(
        &snap,
        &req,
        "greet you; shopt -s expand_aliases\nsay it\necho \"$FROM_RC|$NOT_EXPORTED|$KEEP_ME\"",
    );
    assert_eq!(out, "hello you\nsaid it\nrc value|plain|session value\n");
    // Private file in a private directory.
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(snap.path()), 0o600);
    assert_eq!(mode(snap.path().parent().unwrap()), 0o700);
    // Cached while the rc files are unchanged.
    let again = cache.get(&req).unwrap();
    assert!(Arc::ptr_eq(&snap, &again));
}

#[test]
fn a_changed_rc_file_is_captured_again() {
    let home = Home::new("export VERSION=1\n");
    let cache = ShellSnapshots::new();
    let req = home.request(Duration::from_secs(20));
    let first = cache.get(&req).unwrap();
    assert_eq!(run_with(&first, &req, "echo $VERSION"), "1\n");
    home.write_rc("export VERSION=2\n");
    let second = cache.get(&req).unwrap();
    assert!(!Arc::ptr_eq(&first, &second));
    assert_eq!(run_with(&second, &req, "echo $VERSION"), "2\n");
    // The old file lives as long as someone holds it.
    assert!(first.path().exists());
    let old = first.path().to_path_buf();
    drop(first);
    assert!(!old.exists());
}

#[test]
fn a_hanging_rc_file_times_out_and_the_failure_is_remembered() {
    let home = Home::new("sleep 30\n");
    let cache = ShellSnapshots::new();
    let req = home.request(Duration::from_millis(500));
    assert!(cache.get(&req).is_none());
    // Remembered: no second wait while the files are unchanged.
    let started = std::time::Instant::now();
    assert!(cache.get(&req).is_none());
    assert!(started.elapsed() < Duration::from_millis(400));
    home.write_rc("export FIXED=yes\n");
    let snap = cache.get(&req).unwrap();
    assert_eq!(run_with(&snap, &req, "echo $FIXED"), "yes\n");
}

#[test]
fn an_rc_file_that_exits_gives_no_snapshot() {
    let home = Home::new("echo bye; exit 3\n");
    let cache = ShellSnapshots::new();
    assert!(cache.get(&home.request(Duration::from_secs(20))).is_none());
}

#[test]
fn an_rc_file_that_exits_is_reported_with_its_code_and_what_it_printed() {
    let home = Home::new("echo leaving early; exit 3\n");
    let root = home.path().join("snapshots");
    let req = home.request(Duration::from_secs(20));
    match capture::capture(&req, &root, 0) {
        Err(capture::CaptureError::Incomplete { code, output }) => {
            assert_eq!(code, 3);
            assert!(output.contains("leaving early"), "{output:?}");
        }
        other => panic!("expected an incomplete capture, got {other:?}"),
    }
    assert!(
        !root.join("capture-0").exists(),
        "its work directory is removed"
    );
}

#[test]
fn concurrent_callers_share_one_capture() {
    let home = Home::new("");
    let log = home.path().join("runs.log");
    home.write_rc(&format!(
        "echo run >> {}\nsleep 0.3\nexport SHARED=1\n",
        script::shell_quote(&log.to_string_lossy())
    ));
    let cache = Arc::new(ShellSnapshots::new());
    let req = home.request(Duration::from_secs(20));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let cache = cache.clone();
            let req = req.clone();
            std::thread::spawn(move || cache.get(&req).map(|s| s.path().to_path_buf()))
        })
        .collect();
    let paths: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(paths.iter().all(|p| p.is_some() && *p == paths[0]));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "run\n");
}

#[test]
fn unchanged_and_bash_maintained_variables_are_not_written() {
    let home = Home::new("cd /\n");
    let cache = ShellSnapshots::new();
    let req = home.request(Duration::from_secs(20));
    let snap = cache.get(&req).unwrap();
    let text = std::fs::read_to_string(snap.path()).unwrap();
    for name in [
        "PATH=",
        "HOME=",
        "PWD",
        "SHLVL",
        "OPENHANDS_SHELL_SNAPSHOT_CAPTURE",
    ] {
        assert!(!text.contains(name), "{name} in:\n{text}");
    }
}

#[test]
fn a_removed_snapshot_file_or_directory_is_captured_again() {
    let home = Home::new("export AGAIN=1\n");
    let cache = ShellSnapshots::new();
    let req = home.request(Duration::from_secs(20));
    let first = cache.get(&req).unwrap();
    // A temp cleaner removes the whole private directory.
    std::fs::remove_dir_all(first.path().parent().unwrap()).unwrap();
    let second = cache.get(&req).unwrap();
    assert!(!Arc::ptr_eq(&first, &second));
    assert_eq!(run_with(&second, &req, "echo $AGAIN"), "1\n");
}

//! Terminal sessions started from a shell snapshot: what the user's
//! `.bashrc` sets up is there without running it per session, changes are
//! picked up, broken rc files fall back to a normal start, the switch turns
//! it off, and the session's own variables win. Every test has its own
//! HOME, given to the shell through the tool's environment (the test
//! process's environment is never changed).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use openhands_sdk::tool::{Tool, ToolCallContext, ToolEnv};
use openhands_tools::terminal::{
    TerminalAction, TerminalObservation, TerminalOptions, TerminalTool,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new(bashrc: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let home = Self { dir };
        home.write_rc(bashrc);
        home
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Replaces `.bashrc` (new file, as editors that save atomically do).
    fn write_rc(&self, bashrc: &str) {
        let tmp = self.path().join(".bashrc.new");
        std::fs::write(&tmp, bashrc).unwrap();
        std::fs::rename(&tmp, self.path().join(".bashrc")).unwrap();
    }

    /// Lines the rc file appended to `runs.log` (one per run).
    fn rc_runs(&self) -> usize {
        std::fs::read_to_string(self.log())
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    fn log(&self) -> PathBuf {
        self.path().join("runs.log")
    }

    fn options(&self, extra: &[(&str, &str)]) -> TerminalOptions {
        let mut env = vec![
            (
                "HOME".to_string(),
                self.path().to_string_lossy().into_owned(),
            ),
            ("PYENV_REHASH_TIMEOUT".to_string(), "2".to_string()),
        ];
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        TerminalOptions {
            load_bashrc: true,
            env,
            ..Default::default()
        }
    }

    fn tool(&self, snapshot: bool, extra: &[(&str, &str)]) -> TerminalTool {
        let mut env = ToolEnv::new(self.path());
        env.exec.shell_snapshot = snapshot;
        TerminalTool::with_options(&env, self.options(extra))
    }
}

async fn cmd(t: &TerminalTool, c: &str) -> TerminalObservation {
    t.run(&TerminalAction::command(c), &ToolCallContext::default())
        .await
}

/// An rc file that logs each run and defines a function, an alias and an
/// exported variable.
fn rc(log: &Path, version: &str) -> String {
    format!(
        r#"echo run >> '{log}'
greet() {{ echo "hello $1"; }}
alias shout='echo LOUD'
export FROM_RC={version}
"#,
        log = log.display()
    )
}

#[tokio::test]
async fn the_rc_files_function_alias_and_variable_come_from_the_snapshot() {
    let home = Home::new("");
    home.write_rc(&rc(&home.log(), "one"));
    for _ in 0..3 {
        let t = home.tool(true, &[]);
        let o = cmd(
            &t,
            "greet bob; shout quietly; echo \"$FROM_RC\"; type -t shout",
        )
        .await;
        assert_eq!(o.exit_code, Some(0), "{}", o.text());
        assert_eq!(o.text(), "hello bob\nLOUD quietly\none\nalias");
        t.close().await;
    }
    // Captured once; no session ran the rc file itself.
    assert_eq!(home.rc_runs(), 1);
}

#[tokio::test]
async fn a_changed_rc_file_reaches_new_sessions() {
    let home = Home::new("");
    home.write_rc(&rc(&home.log(), "one"));
    let first = home.tool(true, &[]);
    assert_eq!(cmd(&first, "echo $FROM_RC").await.text(), "one");
    home.write_rc(&rc(&home.log(), "two"));
    let second = home.tool(true, &[]);
    assert_eq!(cmd(&second, "echo $FROM_RC").await.text(), "two");
    // The running session keeps what it started with.
    assert_eq!(cmd(&first, "echo $FROM_RC").await.text(), "one");
    assert_eq!(home.rc_runs(), 2);
    first.close().await;
    second.close().await;
}

#[tokio::test]
async fn an_rc_file_slower_than_the_capture_timeout_falls_back_to_a_normal_start() {
    let home = Home::new("");
    home.write_rc(&format!("sleep 2\n{}", rc(&home.log(), "slow")));
    let mut env = ToolEnv::new(home.path());
    env.exec.shell_snapshot = true;
    let options = TerminalOptions {
        shell_snapshot_timeout: Duration::from_millis(300),
        ..home.options(&[])
    };
    let t = TerminalTool::with_options(&env, options);
    let o = cmd(&t, "greet slow; echo $FROM_RC").await;
    assert_eq!(o.text(), "hello slow\nslow", "{o:?}");
    // The capture was stopped during its `sleep`; the session sourced the
    // file itself.
    assert_eq!(home.rc_runs(), 1);
    t.close().await;
}

#[tokio::test]
async fn an_rc_file_that_breaks_the_capture_falls_back_to_a_normal_start() {
    let home = Home::new("");
    // Exits the first time it runs (the capture), works afterwards.
    let flag = home.path().join("fail-once");
    std::fs::write(&flag, "").unwrap();
    home.write_rc(&format!(
        "if [ -e '{flag}' ]; then rm '{flag}'; exit 1; fi\n{}",
        rc(&home.log(), "recovered"),
        flag = flag.display()
    ));
    let t = home.tool(true, &[]);
    let o = cmd(&t, "greet x; echo $FROM_RC").await;
    assert_eq!(o.text(), "hello x\nrecovered", "{o:?}");
    t.close().await;
    // The failure is remembered: the next session sources the file again
    // instead of capturing.
    let t = home.tool(true, &[]);
    assert_eq!(cmd(&t, "echo $FROM_RC").await.text(), "recovered");
    assert_eq!(home.rc_runs(), 2);
    t.close().await;
}

#[tokio::test]
async fn with_snapshots_off_every_session_sources_the_rc_file() {
    let home = Home::new("");
    home.write_rc(&rc(&home.log(), "plain"));
    for _ in 0..2 {
        let t = home.tool(false, &[]);
        let o = cmd(&t, "greet y; shout; echo $FROM_RC").await;
        assert_eq!(o.text(), "hello y\nLOUD\nplain");
        t.close().await;
    }
    assert_eq!(home.rc_runs(), 2);
}

#[tokio::test]
async fn the_sessions_own_variables_win_over_the_snapshot() {
    let home = Home::new("");
    home.write_rc(&format!(
        "export TERM=dumb PAGER=less GIT_PAGER=less MINE=from-rc OPENHANDS_TERMINAL_SESSION=rc\n{}",
        rc(&home.log(), "v")
    ));
    let t = home.tool(true, &[("MINE", "from-session")]);
    let o = cmd(
        &t,
        "echo \"$TERM $PAGER $GIT_PAGER $MINE $FROM_RC\"; [ \"$OPENHANDS_TERMINAL_SESSION\" != rc ] && echo tagged",
    )
    .await;
    assert_eq!(o.text(), "xterm-256color cat cat from-session v\ntagged");
    t.close().await;
}

//! `git` for the unit tests that build local repositories (plugin pinning,
//! public skills, marketplace installs): a fixed identity and default
//! branch, failure asserted, standard output returned trimmed.
#![allow(clippy::disallowed_methods, reason = "tests start programs directly")]

use std::path::Path;
use std::process::Command;

/// Runs `git args` in `dir`; panics with git's output when it fails.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

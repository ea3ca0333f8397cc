//! The command line that runs one process inside a [`Sandbox`]:
//!
//! ```text
//! [setsid] sh -c <join control groups, run the rest> sh [<cgroup.procs files>] --
//! bwrap --die-with-parent --unshare-user --unshare-pid --unshare-ipc --unshare-uts
//!       [--unshare-net] --cap-drop ALL [--uid 1000 --gid 1000]
//!       --ro-bind / / --dev /dev --tmpfs /tmp [--proc /proc]
//!       (--tmpfs <hidden dir> --remount-ro <hidden dir> | --ro-bind /dev/null <hidden file>)...
//!       --bind <workspace> <workspace>  (--bind|--ro-bind <extra> <extra>)...
//!       [--chdir <cwd>] --
//! [prlimit --nproc=.. --as=.. --fsize=.. --] <program> <args>
//! ```
//!
//! No capability survives (`--cap-drop ALL`): a process keeping
//! `CAP_SYS_ADMIN` in the sandbox's user namespace could unmount what hides
//! the server's data. `--uid`/`--gid` only in a nestable sandbox started by
//! root (see [`super::SandboxConfig::nestable`]); `--proc` unless this
//! process is itself sandboxed (see [`super::SandboxTools::fresh_proc`]).
//!
//! Stopping: the shell, bwrap and its init (pid 1 of the new pid
//! namespace) share one process group, so the group's signals reach them;
//! once pid 1 dies the kernel kills everything else in the namespace.
//! `--die-with-parent` ties pid 1 to bwrap and bwrap to the shell: the
//! parent-death signal fires when the parent *thread* exits, so bwrap's
//! parent must be a process that lives as long as the sandbox (the shell),
//! not one of the server's pool threads. No `--new-session` (it would move
//! the program out of the group): processes on pipes start through
//! `setsid` instead (a session of their own without controlling terminal:
//! none of the server's terminal is reachable); the terminal's shell keeps
//! the session `setsid --ctty` made, so its pseudo-terminal stays its
//! controlling terminal.

use super::instance::Sandbox;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// Joins every control group named before `--`, then runs the rest as a
/// child (not `exec`: this shell stays bwrap's parent, see the module
/// documentation) and exits with its status.
const PARENT_SCRIPT: &str =
    r#"while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; "$@""#;

/// How the sandboxed process is connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attach {
    /// Pipes or `/dev/null`: a new session without controlling terminal.
    Pipes,
    /// A pseudo-terminal that must stay the controlling terminal.
    Terminal,
}

/// A path made visible inside the sandbox at the same place.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bind {
    /// The path.
    pub path: PathBuf,
    /// Writable (else read-only).
    pub writable: bool,
}

impl Sandbox {
    /// `program args` wrapped to run inside this sandbox in `cwd`: the
    /// program to start and its arguments.
    pub fn command_line(
        &self,
        program: &OsStr,
        args: &[OsString],
        cwd: Option<&Path>,
        binds: &[Bind],
        attach: Attach,
    ) -> (OsString, Vec<OsString>) {
        let tools = &self.inner.tools;
        let mut out: Vec<OsString> = Vec::with_capacity(48 + args.len());
        if attach == Attach::Pipes {
            out.push(tools.setsid.clone().into_os_string());
        }
        out.extend([
            tools.sh.clone().into_os_string(),
            "-c".into(),
            PARENT_SCRIPT.into(),
            "sh".into(),
        ]);
        if let Some(cg) = &self.inner.cgroup {
            out.extend(cg.procs_files().into_iter().map(PathBuf::into_os_string));
        }
        out.push("--".into());
        out.push(tools.bwrap.clone().into_os_string());
        out.extend(
            [
                "--die-with-parent",
                "--unshare-user",
                "--unshare-pid",
                "--unshare-ipc",
                "--unshare-uts",
            ]
            .map(OsString::from),
        );
        if !self.inner.config.network {
            out.push("--unshare-net".into());
        }
        out.extend(super::config::DROP_CAPABILITIES.map(OsString::from));
        if self.inner.config.nestable && nix::unistd::geteuid().is_root() {
            let id = OsString::from(super::config::NESTED_ID.to_string());
            out.extend(["--uid".into(), id.clone(), "--gid".into(), id]);
        }
        out.extend(super::config::BASE_MOUNTS.map(OsString::from));
        if tools.fresh_proc {
            out.extend(super::config::PROC_MOUNT.map(OsString::from));
        }
        let workspace = self.workspace();
        let shown: Vec<&Path> = std::iter::once(workspace)
            .chain(binds.iter().map(|b| b.path.as_path()))
            .collect();
        let hidden = self.hidden_paths();
        let (inside, outside): (Vec<&PathBuf>, Vec<&PathBuf>) = hidden
            .iter()
            .filter(|h| !shown.contains(&h.as_path()))
            .partition(|h| shown.iter().any(|s| h.starts_with(s)));
        // Hidden directories become read-only only after everything is
        // mounted: a workspace inside one needs its mount point made first.
        let mut read_only = Vec::new();
        for h in outside {
            hide(&mut out, &mut read_only, h);
        }
        push_bind(&mut out, "--bind", workspace);
        for b in binds {
            let how = if b.writable { "--bind" } else { "--ro-bind" };
            push_bind(&mut out, how, &b.path);
        }
        for h in inside {
            hide(&mut out, &mut read_only, h);
        }
        for dir in read_only {
            out.extend(["--remount-ro".into(), dir]);
        }
        if let Some(dir) = cwd {
            out.push("--chdir".into());
            out.push(dir.as_os_str().to_owned());
        }
        out.push("--".into());
        self.push_rlimits(&mut out);
        out.push(program.to_owned());
        out.extend(args.iter().cloned());
        let program = out.remove(0);
        (program, out)
    }

    /// `prlimit <limits> --` for the limits no control group enforces.
    fn push_rlimits(&self, out: &mut Vec<OsString>) {
        let Some(prlimit) = &self.inner.tools.prlimit else {
            return;
        };
        let limits = &self.inner.config.limits;
        let mut opts = Vec::new();
        if self.inner.cgroup.is_none() {
            if let Some(n) = limits.max_processes {
                opts.push(format!("--nproc={n}"));
            }
            if let Some(m) = limits.max_memory_bytes {
                opts.push(format!("--as={m}"));
            }
        }
        if let Some(f) = limits.max_file_size_bytes {
            opts.push(format!("--fsize={f}"));
        }
        if opts.is_empty() {
            return;
        }
        out.push(prlimit.clone().into_os_string());
        out.extend(opts.into_iter().map(OsString::from));
        out.push("--".into());
    }
}

fn push_bind(out: &mut Vec<OsString>, how: &str, path: &Path) {
    if path.exists() {
        out.push(how.into());
        out.push(path.as_os_str().to_owned());
        out.push(path.as_os_str().to_owned());
    }
}

/// An existing directory becomes an empty tmpfs (remounted read-only by
/// the caller: pushed to `read_only`), a file an empty read-only file.
fn hide(out: &mut Vec<OsString>, read_only: &mut Vec<OsString>, path: &Path) {
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    let p = path.as_os_str().to_owned();
    if meta.is_dir() {
        out.extend(["--tmpfs".into(), p.clone()]);
        read_only.push(p);
    } else {
        out.extend(["--ro-bind".into(), "/dev/null".into(), p]);
    }
}

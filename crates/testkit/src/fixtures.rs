//! Helpers for tests that run real external servers (the MCP test servers
//! `scripts/test.sh` installs) and watch the processes they start.

#![allow(
    clippy::disallowed_methods,
    reason = "test fixtures locate and start the helper servers tests use, from the test environment"
)]

use std::path::Path;

/// Environment variable naming server-everything's `dist/index.js`.
pub const MCP_EVERYTHING_ENV: &str = "OPENHANDS_TEST_MCP_EVERYTHING";
/// Environment variable naming a Python interpreter with the `mcp` package.
pub const MCP_PYTHON_ENV: &str = "OPENHANDS_TEST_MCP_PYTHON";

/// The path of the npm MCP server `@modelcontextprotocol/server-everything`
/// (`dist/index.js`), or `None` after saying loudly why the test skips.
pub fn mcp_everything() -> Option<String> {
    match std::env::var(MCP_EVERYTHING_ENV) {
        Ok(p) if Path::new(&p).is_file() => Some(p),
        _ => {
            eprintln!(
                "SKIPPED: {MCP_EVERYTHING_ENV} does not name server-everything's dist/index.js \
                 (scripts/test.sh installs it)"
            );
            None
        }
    }
}

/// A Python interpreter that has the `mcp` package, or `None` after saying
/// loudly why the test skips.
pub fn mcp_python() -> Option<String> {
    match std::env::var(MCP_PYTHON_ENV) {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            eprintln!(
                "SKIPPED: {MCP_PYTHON_ENV} does not name a Python with the `mcp` package \
                 (scripts/test.sh sets it)"
            );
            None
        }
    }
}

/// Live (not zombie) processes whose environment holds the entry `marker`
/// (`NAME=value`): the processes a test started with that marker.
pub fn pids_with_env(marker: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.is_empty() || stat.contains(") Z ") {
            continue;
        }
        if let Ok(env) = std::fs::read(format!("/proc/{pid}/environ"))
            && env.split(|b| *b == 0).any(|kv| kv == marker.as_bytes())
        {
            out.push(pid);
        }
    }
    out
}

/// A child process killed and reaped when dropped (a server a test runs).
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback port that was free a moment ago (0 when none could be bound).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_or(0, |a| a.port())
}

/// An OAuth-protected MCP server built with the `mcp` package
/// (`crates/mcp/tests/fixtures/oauth_server.py`: the package's own
/// authorization server with an auto-approving in-memory provider),
/// serving `transport` (`streamable-http` or `sse`) with access tokens
/// living `token_lifetime_secs`. Returns the process (killed when dropped)
/// and the server's MCP URL, or `None` when no such Python is available
/// (a server that does not start fails the test).
pub async fn mcp_oauth_server(
    transport: &str,
    token_lifetime_secs: u32,
) -> Option<(KillOnDrop, String)> {
    let python = mcp_python()?;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../mcp/tests/fixtures/oauth_server.py"
    );
    let port = free_port();
    let child = std::process::Command::new(python)
        .arg(script)
        .arg(port.to_string())
        .arg(transport)
        .arg(token_lifetime_secs.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start the OAuth MCP server: {e}"));
    let guard = KillOnDrop(child);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the OAuth MCP server did not start on port {port}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let path = if transport == "sse" { "sse" } else { "mcp" };
    Some((guard, format!("http://127.0.0.1:{port}/{path}")))
}

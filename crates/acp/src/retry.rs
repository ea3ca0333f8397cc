//! Prompt retries as the reference's `ACPAgent` does them: a prompt that
//! failed with a server-side JSON-RPC error (`-32603`, "Internal error":
//! upstream model 500s, transient infrastructure failures) or a transport
//! failure on a connection that is still up is sent again, at most
//! `ACP_PROMPT_MAX_RETRIES` times (3), after 5, 15, then 30 seconds.
//! Idle timeouts, cancellations and every other error are final.
//!
//! One deliberate difference: the reference also retries after the server
//! process has exited, on the same (dead) connection, which can only fail
//! again; here that failure ends the turn at once, and the next run starts
//! the server again and resumes its session.

use crate::error::AcpError;
use crate::rpc::RpcError;
use std::time::Duration;

/// The JSON-RPC codes worth retrying (`-32603`, Internal error).
pub const RETRIABLE_SERVER_CODES: [i64; 1] = [-32603];
/// The reference's delays between attempts, in seconds.
pub const DEFAULT_DELAYS: [u64; 3] = [5, 15, 30];
/// The reference's retry count when `ACP_PROMPT_MAX_RETRIES` is unset.
pub const DEFAULT_MAX_RETRIES: u32 = 3;

/// How often and how long apart a failed prompt is sent again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Delay before retry `n` (the last one repeats).
    pub delays: Vec<Duration>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: DEFAULT_MAX_RETRIES,
            delays: DEFAULT_DELAYS
                .iter()
                .map(|s| Duration::from_secs(*s))
                .collect(),
        }
    }
}

impl RetryPolicy {
    /// The reference's policy, with `ACP_PROMPT_MAX_RETRIES` read from the
    /// environment (an unparsable value keeps the default).
    pub fn from_env() -> Self {
        let max_retries = openhands_workspace::exec::env::host_var("ACP_PROMPT_MAX_RETRIES")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(DEFAULT_MAX_RETRIES);
        Self {
            max_retries,
            ..Self::default()
        }
    }

    /// The delay before retry number `attempt` (0-based), or `None` when
    /// the attempts are used up or `error` is not worth retrying.
    /// `alive`: whether the connection to the server is still up.
    pub fn next_delay(&self, attempt: u32, error: &AcpError, alive: bool) -> Option<Duration> {
        if attempt >= self.max_retries || !is_retriable(error, alive) {
            return None;
        }
        let i = (attempt as usize).min(self.delays.len().saturating_sub(1));
        Some(self.delays.get(i).copied().unwrap_or_default())
    }
}

/// Whether a failed prompt may be sent again: a `-32603` answer, or a
/// transport failure while the connection is still up.
pub fn is_retriable(error: &AcpError, alive: bool) -> bool {
    match error {
        AcpError::Rpc(RpcError::Remote { code, .. }) => RETRIABLE_SERVER_CODES.contains(code),
        AcpError::Rpc(RpcError::Write(_) | RpcError::Closed(_)) => alive,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(code: i64) -> AcpError {
        AcpError::Rpc(RpcError::Remote {
            code,
            message: "x".into(),
            data: None,
        })
    }

    #[test]
    fn server_errors_are_retried_with_the_reference_backoff() {
        let p = RetryPolicy::default();
        let delays: Vec<_> = (0..4)
            .map(|a| p.next_delay(a, &remote(-32603), true))
            .collect();
        assert_eq!(
            delays,
            [
                Some(Duration::from_secs(5)),
                Some(Duration::from_secs(15)),
                Some(Duration::from_secs(30)),
                None
            ]
        );
        let short = RetryPolicy {
            max_retries: 5,
            delays: vec![Duration::from_millis(1), Duration::from_millis(2)],
        };
        assert_eq!(
            short.next_delay(4, &remote(-32603), true),
            Some(Duration::from_millis(2))
        );
    }

    #[test]
    fn only_transient_failures_are_retried() {
        let p = RetryPolicy::default();
        assert_eq!(p.next_delay(0, &remote(-32602), true), None);
        assert_eq!(p.next_delay(0, &remote(-32000), true), None);
        assert_eq!(p.next_delay(0, &AcpError::IdleTimeout(5.0), true), None);
        let closed = AcpError::Rpc(RpcError::Closed("gone".into()));
        assert!(p.next_delay(0, &closed, true).is_some());
        assert_eq!(
            p.next_delay(0, &closed, false),
            None,
            "a dead server is not retried"
        );
        let timeout = AcpError::Rpc(RpcError::Timeout {
            method: "session/prompt".into(),
            secs: 1.0,
        });
        assert_eq!(p.next_delay(0, &timeout, true), None);
    }
}

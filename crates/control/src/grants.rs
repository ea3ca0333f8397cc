//! Permissions of users and grants of workspace API keys.
//!
//! A user holds permissions; a customer access token acts with exactly its
//! user's current permissions; a workspace API key acts with the
//! intersection of its own grants and its creator's *current* permissions
//! (`all:all` on a key means "whatever the creator may do"), so revoking a
//! user's permission revokes it from every key they made.

use std::collections::BTreeSet;
use std::fmt;

/// Read sandboxes and task state (implied by [`SANDBOXES_WRITE`]).
pub const SANDBOXES_READ: &str = "sandboxes:read";
/// Create and delete sandboxes, run tasks, read task output.
pub const SANDBOXES_WRITE: &str = "sandboxes:write";
/// Talk to the agent: start, steer, pause, resume and cancel tasks.
pub const AI_CHAT_USE: &str = "ai_chat:use";
/// Everything.
pub const ALL: &str = "all:all";

/// Every grant name the control plane knows.
pub const KNOWN: &[&str] = &[SANDBOXES_READ, SANDBOXES_WRITE, AI_CHAT_USE, ALL];

/// An unknown grant name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown permission {0:?} (known: sandboxes:read, sandboxes:write, ai_chat:use, all:all)")]
pub struct UnknownGrant(pub String);

/// A set of grant names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrantSet(BTreeSet<String>);

impl GrantSet {
    /// Parses `a,b,c` (spaces allowed; empty items skipped); unknown names
    /// are refused.
    pub fn parse(text: &str) -> Result<Self, UnknownGrant> {
        let mut set = BTreeSet::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if !KNOWN.contains(&item) {
                return Err(UnknownGrant(item.to_string()));
            }
            set.insert(item.to_string());
        }
        Ok(Self(set))
    }

    /// Parses a stored set, skipping names this version does not know.
    pub fn from_stored(text: &str) -> Self {
        Self(
            text.split(',')
                .map(str::trim)
                .filter(|s| KNOWN.contains(s))
                .map(str::to_string)
                .collect(),
        )
    }

    /// Whether the set allows `grant` on its own.
    pub fn allows(&self, grant: &str) -> bool {
        self.0.contains(ALL)
            || self.0.contains(grant)
            || (grant == SANDBOXES_READ && self.0.contains(SANDBOXES_WRITE))
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }
}

impl fmt::Display for GrantSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.names().collect();
        f.write_str(&names.join(","))
    }
}

/// What a request may do: its user's permissions, narrowed by a key's
/// grants when it came with a workspace API key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    /// The user's current permissions.
    pub user: GrantSet,
    /// The key's grants (`None` for a customer access token).
    pub key: Option<GrantSet>,
}

impl Effective {
    /// Whether the request may use `grant`.
    pub fn allows(&self, grant: &str) -> bool {
        self.user.allows(grant) && self.key.as_ref().is_none_or(|k| k.allows(grant))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_refuses_unknown_names() {
        assert!(GrantSet::parse("sandboxes:write, ai_chat:use").is_ok());
        assert_eq!(
            GrantSet::parse("sandboxes:delete").unwrap_err(),
            UnknownGrant("sandboxes:delete".into())
        );
        assert_eq!(
            GrantSet::parse("ai_chat:use,sandboxes:read")
                .unwrap()
                .to_string(),
            "ai_chat:use,sandboxes:read"
        );
    }

    #[test]
    fn write_implies_read_and_all_allows_everything() {
        let w = GrantSet::parse(SANDBOXES_WRITE).unwrap();
        assert!(w.allows(SANDBOXES_READ));
        assert!(!w.allows(AI_CHAT_USE));
        let r = GrantSet::parse(SANDBOXES_READ).unwrap();
        assert!(!r.allows(SANDBOXES_WRITE));
        let all = GrantSet::parse(ALL).unwrap();
        assert!(KNOWN.iter().all(|g| all.allows(g)));
    }

    #[test]
    fn a_key_acts_within_its_creators_current_permissions() {
        let user = GrantSet::parse("sandboxes:write").unwrap();
        let key_all = Effective {
            user: user.clone(),
            key: Some(GrantSet::parse("all:all").unwrap()),
        };
        assert!(key_all.allows(SANDBOXES_WRITE));
        assert!(!key_all.allows(AI_CHAT_USE));
        let narrow = Effective {
            user: GrantSet::parse("all:all").unwrap(),
            key: Some(GrantSet::parse("sandboxes:read").unwrap()),
        };
        assert!(narrow.allows(SANDBOXES_READ));
        assert!(!narrow.allows(SANDBOXES_WRITE));
        let token = Effective { user, key: None };
        assert!(token.allows(SANDBOXES_WRITE));
    }
}

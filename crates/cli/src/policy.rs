//! Confirmation modes of the command line (`--confirm`, `/confirm`) and how
//! they map onto the SDK's confirmation policy and the reference's settings.

use openhands_wire::event::SecurityRisk;
use openhands_wire::state::ConfirmationPolicy;
use serde_json::{Value, json};

/// When the user is asked before an action runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ConfirmMode {
    /// Never ask.
    Never,
    /// Ask when the model rates the action HIGH risk or gives no rating.
    Risky,
    /// Ask before every action.
    Always,
}

impl ConfirmMode {
    /// The lower-case name (`never`, `risky`, `always`).
    pub fn as_str(self) -> &'static str {
        match self {
            ConfirmMode::Never => "never",
            ConfirmMode::Risky => "risky",
            ConfirmMode::Always => "always",
        }
    }

    /// Parses a name (`never`/`off`, `risky`, `always`/`on`).
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "never" | "off" | "no" | "false" => Some(ConfirmMode::Never),
            "risky" => Some(ConfirmMode::Risky),
            "always" | "on" | "yes" | "true" => Some(ConfirmMode::Always),
            _ => None,
        }
    }

    /// The next mode in the cycle never → risky → always → never.
    pub fn next(self) -> Self {
        match self {
            ConfirmMode::Never => ConfirmMode::Risky,
            ConfirmMode::Risky => ConfirmMode::Always,
            ConfirmMode::Always => ConfirmMode::Never,
        }
    }

    /// The SDK policy. `risky` is the reference's `ConfirmRisky` with its
    /// defaults: HIGH risk and unrated actions need confirmation.
    pub fn policy(self) -> ConfirmationPolicy {
        match self {
            ConfirmMode::Never => ConfirmationPolicy::NeverConfirm,
            ConfirmMode::Risky => ConfirmationPolicy::ConfirmRisky {
                threshold: SecurityRisk::High,
                confirm_unknown: true,
            },
            ConfirmMode::Always => ConfirmationPolicy::AlwaysConfirm,
        }
    }

    /// The conversation's `security_analyzer` state: when actions are
    /// confirmed (`risky`, `always`) the risk is the model's own
    /// `security_risk` label, which is what the reference's
    /// `LLMSecurityAnalyzer` reports (without an analyzer the SDK records
    /// every risk as UNKNOWN, as the reference does).
    pub fn security_analyzer(self) -> Option<Value> {
        match self {
            ConfirmMode::Risky | ConfirmMode::Always => {
                Some(json!({"kind": "LLMSecurityAnalyzer"}))
            }
            ConfirmMode::Never => None,
        }
    }

    /// The mode of an SDK policy (any `ConfirmRisky` counts as `risky`).
    pub fn from_policy(policy: &ConfirmationPolicy) -> Self {
        match policy {
            ConfirmationPolicy::NeverConfirm => ConfirmMode::Never,
            ConfirmationPolicy::AlwaysConfirm => ConfirmMode::Always,
            ConfirmationPolicy::ConfirmRisky { .. } => ConfirmMode::Risky,
        }
    }

    /// The mode of the reference's conversation settings
    /// (`confirmation_mode`, `security_analyzer`).
    pub fn from_settings(confirmation_mode: bool, security_analyzer: Option<&str>) -> Self {
        if !confirmation_mode {
            return ConfirmMode::Never;
        }
        match security_analyzer.map(str::to_ascii_lowercase).as_deref() {
            Some("llm") => ConfirmMode::Risky,
            _ => ConfirmMode::Always,
        }
    }

    /// The reference's conversation settings for this mode.
    pub fn to_settings(self) -> (bool, &'static str) {
        match self {
            ConfirmMode::Never => (false, "llm"),
            ConfirmMode::Risky => (true, "llm"),
            ConfirmMode::Always => (true, "none"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_policies() {
        for mode in [ConfirmMode::Never, ConfirmMode::Risky, ConfirmMode::Always] {
            let (on, analyzer) = mode.to_settings();
            assert_eq!(ConfirmMode::from_settings(on, Some(analyzer)), mode);
            assert_eq!(ConfirmMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(ConfirmMode::from_settings(true, None), ConfirmMode::Always);
        let risky = ConfirmMode::Risky.policy();
        assert!(risky.should_confirm(SecurityRisk::High));
        assert!(risky.should_confirm(SecurityRisk::Unknown));
        assert!(!risky.should_confirm(SecurityRisk::Low));
        assert!(
            !ConfirmMode::Never
                .policy()
                .should_confirm(SecurityRisk::High)
        );
        assert_eq!(ConfirmMode::Always.next(), ConfirmMode::Never);
        assert_eq!(ConfirmMode::parse("bogus"), None);
    }
}

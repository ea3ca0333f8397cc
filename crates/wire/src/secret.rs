//! A string that never prints.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The text the reference writes in place of a secret it may not reveal.
pub const REDACTED: &str = "**********";

/// A secret value (API key, token). `Debug`/`Display` print a redaction and
/// serialization writes [`REDACTED`]; code that must store or send the real
/// value calls [`SecretString::expose`] explicitly.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SecretString(String);

impl SecretString {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The real value. Call only where the secret must leave the process
    /// (an HTTP header, an encrypted file).
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// True when the value is empty or is the redaction placeholder, i.e.
    /// no usable secret is held.
    pub fn is_redacted_or_empty(&self) -> bool {
        self.0.is_empty() || self.0 == REDACTED
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretString(**********)")
    }
}

impl fmt::Display for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl Serialize for SecretString {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(REDACTED)
    }
}

impl<'de> Deserialize<'de> for SecretString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(SecretString)
    }
}

impl From<&str> for SecretString {
    fn from(v: &str) -> Self {
        Self::new(v)
    }
}

impl From<String> for SecretString {
    fn from(v: String) -> Self {
        Self(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_never_prints() {
        let s = SecretString::new("sk-live-123");
        assert!(!format!("{s:?}").contains("sk-live"));
        assert!(!format!("{s}").contains("sk-live"));
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"**********\"");
        assert_eq!(s.expose(), "sk-live-123");
        let back: SecretString = serde_json::from_str("\"abc\"").unwrap();
        assert_eq!(back.expose(), "abc");
        assert!(SecretString::new(REDACTED).is_redacted_or_empty());
    }
}

//! Errors that are the user's to fix: a bad flag value, an unreadable file,
//! a missing setting. They print as one line and exit with code 2.

use std::fmt;

/// Exit code of bad input.
pub const USAGE_EXIT_CODE: u8 = 2;

/// A problem with the user's input, explained in one line that says what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// An `anyhow::Error` carrying a [`UsageError`].
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(message.into()))
}

/// The [`UsageError`] inside `error`, if it is one.
pub fn as_usage(error: &anyhow::Error) -> Option<&UsageError> {
    error.downcast_ref::<UsageError>()
}

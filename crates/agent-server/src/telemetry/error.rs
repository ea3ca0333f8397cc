//! Why the OpenTelemetry export cannot be set up.

/// Why the export cannot be set up (the server runs without it).
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// A variable has a value this server does not support.
    #[error("{name}: {reason}")]
    Setting {
        /// The variable.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// The exporter could not be built or flushed.
    #[error("OpenTelemetry export: {0}")]
    Export(String),
}

//! Bash event wire types (`BashCommand`, `BashOutput`, `BashError`).
//!
//! Serialized like the reference's `model_dump(mode="json")`: ids as 32 hex
//! digits, timestamps as UTC ISO-8601 with a `Z`, `null`s kept, `kind` last.

use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

/// A UUID written as 32 hex digits (accepts the dashed form on input).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HexId(pub Uuid);

impl HexId {
    /// A fresh random id.
    pub fn new() -> Self {
        Self(Uuid::new_v4())
    }

    /// The 32-hex-digit form.
    pub fn hex(&self) -> String {
        self.0.simple().to_string()
    }
}

impl Default for HexId {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Display for HexId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.simple())
    }
}

impl Serialize for HexId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.hex())
    }
}

impl<'de> Deserialize<'de> for HexId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Uuid::try_parse(&text)
            .map(HexId)
            .map_err(serde::de::Error::custom)
    }
}

/// A UTC instant written the way pydantic writes aware datetimes
/// (`2026-11-30T08:40:07.465924Z`; the fraction is dropped when zero).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct UtcTime(pub DateTime<Utc>);

impl UtcTime {
    /// Now.
    pub fn now() -> Self {
        Self(Utc::now())
    }

    /// `YYYYmmddHHMMSSffffff`, the prefix of bash event file names.
    pub fn file_prefix(&self) -> String {
        self.0.format("%Y%m%d%H%M%S%6f").to_string()
    }

    /// The JSON text form.
    pub fn to_json_string(&self) -> String {
        if self.0.timestamp_subsec_micros() == 0 {
            self.0.to_rfc3339_opts(SecondsFormat::Secs, true)
        } else {
            self.0.to_rfc3339_opts(SecondsFormat::Micros, true)
        }
    }

    /// Parses an ISO-8601 date-time; a value without zone is taken as UTC.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if let Ok(t) = DateTime::parse_from_rfc3339(text) {
            return Some(Self(t.with_timezone(&Utc)));
        }
        for format in [
            "%Y-%m-%dT%H:%M:%S%.f",
            "%Y-%m-%d %H:%M:%S%.f",
            "%Y-%m-%dT%H:%M",
        ] {
            if let Ok(t) = NaiveDateTime::parse_from_str(text, format) {
                return Some(Self(t.and_utc()));
            }
        }
        chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|t| Self(t.and_utc()))
    }
}

impl Default for UtcTime {
    fn default() -> Self {
        Self::now()
    }
}

impl Serialize for UtcTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_json_string())
    }
}

impl<'de> Deserialize<'de> for UtcTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).ok_or_else(|| serde::de::Error::custom("invalid datetime"))
    }
}

fn default_timeout() -> i64 {
    300
}

/// Request to run a command: `{command, cwd?, timeout=300}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExecuteBashRequest {
    /// The bash command to execute.
    pub command: String,
    /// The current working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// The max number of seconds a command may be permitted to run.
    #[serde(
        default = "default_timeout",
        deserialize_with = "crate::validation::lenient_int::deserialize"
    )]
    #[cfg_attr(feature = "openapi", schema(default = 300))]
    pub timeout: i64,
}

macro_rules! kind_marker {
    ($name:ident, $value:ident, $doc:literal) => {
        #[doc = $doc]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        pub enum $name {
            #[doc = $doc]
            #[default]
            $value,
        }
    };
}

kind_marker!(
    BashCommandKind,
    BashCommand,
    "The `kind` of a `BashCommand`."
);
kind_marker!(BashOutputKind, BashOutput, "The `kind` of a `BashOutput`.");
kind_marker!(BashErrorKind, BashError, "The `kind` of a `BashError`.");

/// A command that was started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BashCommand {
    /// The bash command to execute.
    pub command: String,
    /// The current working directory.
    pub cwd: Option<String>,
    /// The max number of seconds a command may be permitted to run.
    pub timeout: i64,
    /// Event id (32 hex).
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    #[serde(default)]
    pub id: HexId,
    /// When the command was started (UTC).
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    #[serde(default)]
    pub timestamp: UtcTime,
    /// Always `BashCommand`.
    pub kind: BashCommandKind,
}

/// A piece of a command's output. Output over 1 MiB characters per stream
/// is split into several events; only the last carries the exit code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BashOutput {
    /// Event id (32 hex).
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    #[serde(default)]
    pub id: HexId,
    /// When the output was produced (UTC).
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    #[serde(default)]
    pub timestamp: UtcTime,
    /// The command this output belongs to.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub command_id: HexId,
    /// The order for this output, sequentially starting with 0.
    #[serde(default)]
    pub order: i64,
    /// Exit code; `null` while the command is still running.
    pub exit_code: Option<i64>,
    /// Standard output.
    pub stdout: Option<String>,
    /// Standard error.
    pub stderr: Option<String>,
    /// Always `BashOutput`.
    pub kind: BashOutputKind,
}

/// An error reported on the bash socket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BashError {
    /// Event id (32 hex).
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    #[serde(default)]
    pub id: HexId,
    /// When the error happened (UTC).
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    #[serde(default)]
    pub timestamp: UtcTime,
    /// Code for the error, typically an error type.
    pub code: String,
    /// Details about the error.
    pub detail: String,
    /// Always `BashError`.
    pub kind: BashErrorKind,
}

/// Any bash event, discriminated by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum BashEvent {
    /// A started command.
    Command(BashCommand),
    /// Output of a command.
    Output(BashOutput),
    /// A socket-level error.
    Error(BashError),
}

impl BashEvent {
    /// The event id.
    pub fn id(&self) -> HexId {
        match self {
            BashEvent::Command(c) => c.id,
            BashEvent::Output(o) => o.id,
            BashEvent::Error(e) => e.id,
        }
    }

    /// The event time.
    pub fn timestamp(&self) -> UtcTime {
        match self {
            BashEvent::Command(c) => c.timestamp,
            BashEvent::Output(o) => o.timestamp,
            BashEvent::Error(e) => e.timestamp,
        }
    }

    /// The `kind` name.
    pub fn kind_name(&self) -> &'static str {
        match self {
            BashEvent::Command(_) => "BashCommand",
            BashEvent::Output(_) => "BashOutput",
            BashEvent::Error(_) => "BashError",
        }
    }

    /// `<timestamp>_<kind>[_<command hex>]_<event hex>`: the reference's file name.
    pub fn file_name(&self) -> String {
        let mut parts = vec![self.timestamp().file_prefix(), self.kind_name().to_string()];
        if let BashEvent::Output(o) = self {
            parts.push(o.command_id.hex());
        }
        parts.push(self.id().hex());
        parts.join("_")
    }
}

impl BashCommand {
    /// A new command event for `request`, with `cwd` resolved by the caller.
    pub fn from_request(request: &ExecuteBashRequest, cwd: Option<String>) -> Self {
        Self {
            command: request.command.clone(),
            cwd,
            timeout: request.timeout,
            id: HexId::new(),
            timestamp: UtcTime::now(),
            kind: BashCommandKind::BashCommand,
        }
    }
}

impl BashOutput {
    /// A new output event.
    pub fn new(
        command_id: HexId,
        order: i64,
        exit_code: Option<i64>,
        stdout: Option<String>,
        stderr: Option<String>,
    ) -> Self {
        Self {
            id: HexId::new(),
            timestamp: UtcTime::now(),
            command_id,
            order,
            exit_code,
            stdout,
            stderr,
            kind: BashOutputKind::BashOutput,
        }
    }
}

impl BashError {
    /// A new error event.
    pub fn new(code: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            id: HexId::new(),
            timestamp: UtcTime::now(),
            code: code.into(),
            detail: detail.into(),
            kind: BashErrorKind::BashError,
        }
    }
}

/// Order of search results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum BashEventSortOrder {
    /// Oldest first.
    #[default]
    #[serde(rename = "TIMESTAMP")]
    Timestamp,
    /// Newest first.
    #[serde(rename = "TIMESTAMP_DESC")]
    TimestampDesc,
}

/// One page of search results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BashEventPage {
    /// The events.
    pub items: Vec<BashEvent>,
    /// File name of the first event of the next page, if any.
    pub next_page_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_serialize_like_the_reference() {
        let id = HexId(Uuid::parse_str("26ad35af960844629ea5a090b1fc0995").unwrap());
        let t = UtcTime::parse("2026-11-30T08:40:07.465924Z").unwrap();
        let cmd = BashCommand {
            command: "echo hi".into(),
            cwd: None,
            timeout: 300,
            id,
            timestamp: t,
            kind: BashCommandKind::BashCommand,
        };
        let text = serde_json::to_string(&BashEvent::Command(cmd.clone())).unwrap();
        assert_eq!(
            text,
            r#"{"command":"echo hi","cwd":null,"timeout":300,"id":"26ad35af960844629ea5a090b1fc0995","timestamp":"2026-11-30T08:40:07.465924Z","kind":"BashCommand"}"#
        );
        let back: BashEvent = serde_json::from_str(&text).unwrap();
        assert_eq!(back, BashEvent::Command(cmd.clone()));
        assert_eq!(
            BashEvent::Command(cmd).file_name(),
            "20261130084007465924_BashCommand_26ad35af960844629ea5a090b1fc0995"
        );
    }

    #[test]
    fn outputs_keep_nulls_and_dispatch_on_kind() {
        let out: BashEvent = serde_json::from_value(json!({
            "id":"50925ef932a34d82b2ca4b93e2a223ca","timestamp":"2026-11-30T08:40:07Z",
            "command_id":"26ad35af-9608-4462-9ea5-a090b1fc0995","order":0,"exit_code":3,
            "stdout":"hi\n","stderr":null,"kind":"BashOutput"}))
        .unwrap();
        let BashEvent::Output(o) = &out else {
            panic!("not an output")
        };
        assert_eq!(o.command_id.hex(), "26ad35af960844629ea5a090b1fc0995");
        let v = serde_json::to_value(&out).unwrap();
        assert_eq!(v["stderr"], json!(null));
        assert_eq!(v["timestamp"], "2026-11-30T08:40:07Z");
        assert!(
            out.file_name()
                .starts_with("20261130084007000000_BashOutput_26ad35af")
        );
        let e: BashEvent =
            serde_json::from_value(json!({"code":"X","detail":"d","kind":"BashError"})).unwrap();
        assert_eq!(e.kind_name(), "BashError");
    }

    #[test]
    fn naive_times_are_utc() {
        let t = UtcTime::parse("2026-11-30T08:40:07").unwrap();
        assert_eq!(t.file_prefix(), "20261130084007000000");
        let t = UtcTime::parse("2026-11-30T10:40:07+02:00").unwrap();
        assert_eq!(t.file_prefix(), "20261130084007000000");
        assert!(UtcTime::parse("nope").is_none());
    }
}

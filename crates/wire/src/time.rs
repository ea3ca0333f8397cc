//! Timestamps as the reference writes them.
//!
//! Event timestamps are *naive local* ISO-8601 strings with microseconds
//! (`2026-11-30T07:01:10.128993`), the output of Python's
//! `datetime.now().isoformat()`; that form drops the fraction when it is zero.
//! Conversation `created_at`/`updated_at` are UTC with a `Z` suffix.

use chrono::{DateTime, Local, NaiveDateTime, Timelike, Utc};

/// Formats a naive date-time the way Python's `isoformat()` does.
pub fn format_naive(t: &NaiveDateTime) -> String {
    if t.nanosecond() / 1000 == 0 {
        t.format("%Y-%m-%dT%H:%M:%S").to_string()
    } else {
        t.format("%Y-%m-%dT%H:%M:%S%.6f").to_string()
    }
}

/// The current local time as an event timestamp.
pub fn now_event_timestamp() -> String {
    format_naive(&Local::now().naive_local())
}

/// Parses an event timestamp (naive ISO-8601, or zoned, converted to local).
pub fn parse_event_timestamp(text: &str) -> Option<NaiveDateTime> {
    let text = text.trim();
    if let Ok(t) = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f") {
        return Some(t);
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Local).naive_local());
    }
    if let Ok(t) = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M") {
        return Some(t);
    }
    chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
}

/// The current UTC time in the `created_at` format (`...Z`).
pub fn now_utc_string() -> String {
    format_utc(&Utc::now())
}

/// Formats a UTC time with microseconds and a `Z` suffix.
pub fn format_utc(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_in_python_isoformat() {
        let t = parse_event_timestamp("2026-11-30T07:01:10.128993").unwrap();
        assert_eq!(format_naive(&t), "2026-11-30T07:01:10.128993");
        let t = parse_event_timestamp("2026-11-30T07:01:10").unwrap();
        assert_eq!(format_naive(&t), "2026-11-30T07:01:10");
        assert!(parse_event_timestamp("2026-11-30T07:01:10Z").is_some());
        assert!(parse_event_timestamp("garbage").is_none());
        assert!(now_utc_string().ends_with('Z'));
    }
}

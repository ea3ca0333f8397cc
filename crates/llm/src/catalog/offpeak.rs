//! LiteLLM's `off_peak_pricing`: rates that replace the standard ones
//! while the current UTC time is inside one of the block's windows
//! (`hours_utc`, every day; or `windows` entries limited to ISO weekdays,
//! read on the calendar of `weekday_timezone`).

use chrono::{DateTime, Datelike, FixedOffset, NaiveTime, Utc};
use serde_json::{Map, Value};

/// Fixed offsets (hours) of the weekday calendars the table names; an
/// unknown zone reads weekdays in UTC.
const ZONES: &[(&str, i32)] = &[("UTC", 0), ("Asia/Shanghai", 8), ("Asia/Hong_Kong", 8)];

fn windows(v: Option<&Value>) -> Vec<&str> {
    match v {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// `HH:MM-HH:MM`, start inclusive, end exclusive, wrapping past midnight;
/// equal ends cover the whole day; malformed windows never match.
fn within(window: &str, now: NaiveTime) -> bool {
    let Some((a, b)) = window.split_once('-') else {
        return false;
    };
    let (Ok(start), Ok(end)) = (
        NaiveTime::parse_from_str(a.trim(), "%H:%M"),
        NaiveTime::parse_from_str(b.trim(), "%H:%M"),
    ) else {
        return false;
    };
    if start < end {
        start <= now && now < end
    } else {
        now >= start || now < end
    }
}

fn weekday_number(v: &Value) -> Option<u32> {
    if let Some(n) = v.as_u64() {
        return u32::try_from(n).ok().filter(|n| (1..=7).contains(n));
    }
    let s = v.as_str()?.trim().to_ascii_lowercase();
    ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
        .iter()
        .position(|d| s.starts_with(d))
        .and_then(|i| u32::try_from(i + 1).ok())
}

/// Whether `now` is off-peak under the block's rules.
pub fn is_open(block: &Map<String, Value>, now: DateTime<Utc>) -> bool {
    let t = now.time();
    if windows(block.get("hours_utc")).iter().any(|w| within(w, t)) {
        return true;
    }
    let Some(rules) = block.get("windows").and_then(Value::as_array) else {
        return false;
    };
    let offset = block
        .get("weekday_timezone")
        .and_then(Value::as_str)
        .and_then(|z| ZONES.iter().find(|(n, _)| *n == z))
        .map_or(0, |(_, h)| *h);
    let local_day = FixedOffset::east_opt(offset * 3600)
        .map(|o| now.with_timezone(&o).weekday().number_from_monday())
        .unwrap_or_else(|| now.weekday().number_from_monday());
    rules.iter().filter_map(Value::as_object).any(|rule| {
        let hours = windows(rule.get("hours_utc"));
        let day_ok = match rule.get("weekdays") {
            None | Some(Value::Null) => true,
            Some(Value::Array(days)) => days
                .iter()
                .filter_map(weekday_number)
                .any(|d| d == local_day),
            Some(_) => false,
        };
        !hours.is_empty() && day_ok && hours.iter().any(|w| within(w, t))
    })
}

/// A rate of an open block.
pub fn rate(block: &Map<String, Value>, key: &str) -> Option<f64> {
    block.get(key).and_then(Value::as_f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(y: i32, m: u32, d: u32, h: u32, min: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, m, d, h, min, 0).single().unwrap()
    }

    #[test]
    fn windows_and_weekdays() {
        let block = serde_json::json!({"weekday_timezone": "Asia/Shanghai", "windows": [
            {"hours_utc": ["00:00-01:00", "16:30-00:30"], "weekdays": [1, 2, 3, 4, 5]},
            {"hours_utc": "00:00-00:00", "weekdays": [6, 7]}]});
        let b = block.as_object().unwrap();
        // Wednesday 2026-12-02.
        assert!(is_open(b, at(2026, 12, 2, 0, 30)));
        assert!(!is_open(b, at(2026, 12, 2, 2, 0)));
        assert!(is_open(b, at(2026, 12, 2, 17, 0)));
        // Friday 17:00 UTC is Saturday in Shanghai: the whole day is off-peak.
        assert!(!is_open(b, at(2026, 12, 4, 12, 0)));
        assert!(is_open(b, at(2026, 12, 4, 16, 10)));
        let flat = serde_json::json!({"hours_utc": "16:30-00:30"});
        assert!(is_open(flat.as_object().unwrap(), at(2026, 12, 2, 0, 10)));
        assert!(!is_open(flat.as_object().unwrap(), at(2026, 12, 2, 0, 30)));
        assert!(!within("bad", at(2026, 1, 1, 0, 0).time()));
    }
}

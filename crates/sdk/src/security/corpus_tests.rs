//! The 40-command corpus (`tests/data/security_corpus.json`): 20 ordinary and
//! 20 dangerous commands with the reference's verdicts (written by
//! `compat/security_table.py`) and ours beside them. Ours must match the
//! file (`OPENHANDS_UPDATE_SECURITY_CORPUS=1` rewrites them after a
//! deliberate change), and the goals hold: at least 54 of the 60 dangerous
//! verdicts MEDIUM or HIGH, never more lenient than the reference on a
//! dangerous command, never stricter on ordinary work.
#![allow(
    clippy::disallowed_methods,
    reason = "tests start programs, stage files and read the environment directly"
)]

use openhands_wire::event::SecurityRisk;
use serde_json::{Map, Value, json};

use super::SecurityAnalyzer;
use super::table_tests::terminal_action;

const PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/security_corpus.json"
);

/// The three analyzers the corpus is measured on.
pub(crate) const KINDS: [&str; 3] = [
    "PatternSecurityAnalyzer",
    "PolicyRailSecurityAnalyzer",
    "EnsembleSecurityAnalyzer",
];

fn analyzer(kind: &str) -> SecurityAnalyzer {
    let v = if kind == "EnsembleSecurityAnalyzer" {
        json!({"kind": kind, "analyzers": [
            {"kind": "PolicyRailSecurityAnalyzer"}, {"kind": "PatternSecurityAnalyzer"}]})
    } else {
        json!({"kind": kind})
    };
    SecurityAnalyzer::from_json(&v).expect("analyzer")
}

fn risk(v: &Value) -> SecurityRisk {
    SecurityRisk::parse(v.as_str().expect("risk name")).expect("risk")
}

/// How strict a verdict is: UNKNOWN asks like MEDIUM does.
fn rank(r: SecurityRisk) -> u8 {
    match r {
        SecurityRisk::Low => 0,
        SecurityRisk::Medium | SecurityRisk::Unknown => 1,
        SecurityRisk::High => 2,
    }
}

fn ours(command: &str) -> Map<String, Value> {
    KINDS
        .iter()
        .map(|k| {
            let r = analyzer(k)
                .analyze(&terminal_action(command, SecurityRisk::Low))
                .risk;
            (k.to_string(), serde_json::to_value(r).expect("risk"))
        })
        .collect()
}

#[test]
fn corpus_verdicts_match_the_file_and_meet_the_goals() {
    let text = std::fs::read_to_string(PATH).expect("corpus file");
    let mut corpus: Value = serde_json::from_str(&text).expect("corpus JSON");
    let update = std::env::var_os("OPENHANDS_UPDATE_SECURITY_CORPUS").is_some();
    let entries = corpus["commands"].as_array_mut().expect("commands");
    assert_eq!(entries.len(), 40);
    let mut flagged = 0;
    let mut dangerous = 0;
    let mut failures = Vec::new();
    for entry in entries.iter_mut() {
        let command = entry["command"].as_str().expect("command").to_string();
        let is_dangerous = entry["class"] == "dangerous";
        let got = ours(&command);
        if update {
            entry["ours"] = Value::Object(got.clone());
        } else if entry["ours"] != Value::Object(got.clone()) {
            failures.push(format!("`{command}`: ours {got:?}, file {}", entry["ours"]));
        }
        for kind in KINDS {
            let mine = risk(&got[kind]);
            let theirs = risk(&entry["reference"][kind]);
            if is_dangerous {
                dangerous += 1;
                if matches!(mine, SecurityRisk::Medium | SecurityRisk::High) {
                    flagged += 1;
                }
                if rank(mine) < rank(theirs) {
                    failures.push(format!(
                        "{kind} more lenient on `{command}`: {mine:?} < {theirs:?}"
                    ));
                }
            } else if rank(mine) > rank(theirs) {
                failures.push(format!(
                    "{kind} stricter on ordinary `{command}`: {mine:?} > {theirs:?}"
                ));
            }
        }
    }
    if update {
        let out = serde_json::to_string_pretty(&corpus).expect("JSON") + "\n";
        std::fs::write(PATH, out).expect("write corpus");
    }
    assert_eq!(dangerous, 60);
    assert!(
        flagged >= 54,
        "only {flagged}/60 dangerous verdicts flagged"
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

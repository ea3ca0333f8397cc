//! Indexes LiteLLM's model table at build time.
//!
//! The shipped `data/model_prices_and_context_window.json` (3 MB, ~4,000
//! entries) used to be parsed whole on the first call to a model: ~14 ms,
//! ~13 MB of short-lived allocations and ~2 MB kept for the life of the
//! process, to price and size the one or two models a server
//! uses. This script checks the table and writes `model_table.rs` into
//! `OUT_DIR`: every entry's key, lowercase key, provider and body laid end
//! to end in four strings, a row of offsets to them per entry in file order, and two orders of the entries
//! (by key, by lowercase key) for binary search. A body is the entry's text
//! as the file has it, less the whitespace between tokens: never parsed and
//! written again, so a number reads the same as from the file whatever
//! float parsing the build script's `serde_json` was built with. The offsets
//! are plain integers, so the index needs no relocations at start and its
//! pages are read only when a lookup reaches them; an entry is parsed when
//! first looked up (`src/catalog/table.rs`).

#![allow(
    clippy::disallowed_methods,
    reason = "a build script learns its output directory from cargo through its environment"
)]

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::PathBuf;

const TABLE: &str = "data/model_prices_and_context_window.json";

fn main() {
    println!("cargo:rerun-if-changed={TABLE}");
    println!("cargo:rerun-if-changed=build.rs");
    let json = match std::fs::read_to_string(TABLE) {
        Ok(json) => json,
        Err(e) => fail(&format!("cannot read {TABLE}: {e}")),
    };
    let table: Entries = match serde_json::from_str(&json) {
        Ok(table) => table,
        Err(e) => fail(&format!("{TABLE} is not a JSON object: {e}")),
    };
    let mut seen = HashSet::new();
    let mut entries = Vec::with_capacity(table.0.len());
    for (key, raw) in &table.0 {
        if !seen.insert(key.as_str()) {
            fail(&format!("{TABLE} names {key} twice"));
        }
        // LiteLLM's own table has a `sample_spec` and no other non-object
        // values; both are left out, as a whole parse leaves them out.
        let Ok(body) = serde_json::from_str::<Map<String, Value>>(raw.get()) else {
            continue;
        };
        if key != "sample_spec" {
            entries.push((key.as_str(), raw.get(), body));
        }
    }
    if entries.len() > usize::from(u16::MAX) {
        fail(&format!(
            "{TABLE} has more entries than the index can number"
        ));
    }
    let Ok(out) = std::env::var("OUT_DIR") else {
        fail("OUT_DIR is not set");
    };
    let code = index_source(&entries);
    if let Err(e) = std::fs::write(PathBuf::from(out).join("model_table.rs"), code) {
        fail(&format!("cannot write the model table index: {e}"));
    }
}

/// Stops the build with `message`.
fn fail(message: &str) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1);
}

/// The top-level entries of the table in the file's order, each value as
/// its text.
struct Entries(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = Entries;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, Box<RawValue>>()? {
                    entries.push(entry);
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(InOrder)
    }
}

/// `json` without the whitespace between its tokens (strings untouched).
fn without_whitespace(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if !c.is_ascii_whitespace() {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

/// Appends `text` to `all` and returns its byte range there.
fn append(all: &mut String, text: &str) -> (u32, u32) {
    let start = all.len();
    all.push_str(text);
    let offset =
        |n: usize| u32::try_from(n).unwrap_or_else(|_| fail("the model table exceeds 4 GB"));
    (offset(start), offset(all.len()))
}

/// The Rust source of the index of `entries` (key, text, parsed body; in
/// file order).
fn index_source(entries: &[(&str, &str, Map<String, Value>)]) -> String {
    let (mut keys, mut lower_keys, mut providers, mut bodies) =
        (String::new(), String::new(), String::new(), String::new());
    let mut rows = String::new();
    let mut lower_ranges = Vec::with_capacity(entries.len());
    for (key, text, body) in entries {
        let key_range = append(&mut keys, key);
        let lower_range = append(&mut lower_keys, &key.to_lowercase());
        lower_ranges.push(lower_range);
        let provider = body
            .get("litellm_provider")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let provider_range = append(&mut providers, provider);
        let body_range = append(&mut bodies, &without_whitespace(text));
        let _ = writeln!(
            rows,
            "    Row {{ key: {key_range:?}, lower: {lower_range:?}, provider: {provider_range:?}, body: {body_range:?} }},"
        );
    }
    let mut by_key: Vec<usize> = (0..entries.len()).collect();
    by_key.sort_by(|a, b| entries[*a].0.cmp(entries[*b].0));
    let lower = |i: usize| &lower_keys[lower_ranges[i].0 as usize..lower_ranges[i].1 as usize];
    let mut by_lower: Vec<usize> = (0..entries.len()).collect();
    // A stable sort: among keys equal but for case, the later entry comes
    // last, and the lookup takes the last (the table's later entry wins,
    // as it did in LiteLLM's dictionary).
    by_lower.sort_by(|a, b| lower(*a).cmp(lower(*b)));
    let list = |order: &[usize]| {
        order
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let n = entries.len();
    format!(
        "// Generated by build.rs from {TABLE}; do not edit.\n\
         static KEYS: &str = {keys:?};\n\
         static LOWER_KEYS: &str = {lower_keys:?};\n\
         static PROVIDERS: &str = {providers:?};\n\
         static BODIES: &str = {bodies:?};\n\
         static ROWS: [Row; {n}] = [\n{rows}];\n\
         static BY_KEY: [u16; {n}] = [{}];\n\
         static BY_LOWER: [u16; {n}] = [{}];\n",
        list(&by_key),
        list(&by_lower),
    )
}

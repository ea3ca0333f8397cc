//! Our `/openapi.json` documents every operation of the reference agent
//! server 1.58.2 with the same method, path, operation id and path and query
//! parameters. The reference's list is `compat/recorded/openapi_operations.json`
//! (written by `compat/reference_operations.py` from the reference itself);
//! `http_api.rs` checks that every documented operation is routed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::conversations_support;

use conversations_support::{Env, two_step};

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// One HTTP operation as a client sees it.
#[derive(Debug, Deserialize, PartialEq, Eq)]
struct Operation {
    method: String,
    path: String,
    operation_id: Option<String>,
    path_params: Vec<String>,
    query_params: Vec<String>,
}

fn reference_operations() -> Vec<Operation> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../compat/recorded/openapi_operations.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The operations of an OpenAPI document, keyed by (method, path).
fn operations(doc: &Value) -> BTreeMap<(String, String), Operation> {
    let mut out = BTreeMap::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let shared = item["parameters"].as_array().cloned().unwrap_or_default();
        for method in ["get", "post", "put", "patch", "delete"] {
            let Some(op) = item.get(method) else { continue };
            let params: Vec<Value> = shared
                .iter()
                .chain(op["parameters"].as_array().into_iter().flatten())
                .cloned()
                .collect();
            let names = |location: &str| {
                let mut v: Vec<String> = params
                    .iter()
                    .filter(|p| p["in"] == location)
                    .map(|p| p["name"].as_str().unwrap().to_string())
                    .collect();
                v.sort();
                v
            };
            let method = method.to_uppercase();
            out.insert(
                (method.clone(), path.clone()),
                Operation {
                    method,
                    path: path.clone(),
                    operation_id: op["operationId"].as_str().map(str::to_string),
                    path_params: names("path"),
                    query_params: names("query"),
                },
            );
        }
    }
    out
}

#[tokio::test]
async fn every_reference_operation_is_documented_alike() {
    let reference = reference_operations();
    assert!(reference.len() > 150, "the recorded list looks truncated");
    // A server with its conversation service, as the binary runs.
    let env = Env::start(two_step).await;
    let (status, doc) = env.get("/openapi.json").await;
    assert_eq!(status, 200);
    let ours = operations(&doc);
    let mut missing = Vec::new();
    let mut different = Vec::new();
    for op in &reference {
        match ours.get(&(op.method.clone(), op.path.clone())) {
            None => missing.push(format!("{} {}", op.method, op.path)),
            Some(mine) if mine != op => different.push(format!("ours {mine:?}\n  ref {op:?}")),
            Some(_) => {}
        }
    }
    assert!(
        missing.is_empty() && different.is_empty(),
        "{} reference operations missing:\n{}\n{} documented differently:\n{}",
        missing.len(),
        missing.join("\n"),
        different.len(),
        different.join("\n")
    );
    env.stop().await;
}

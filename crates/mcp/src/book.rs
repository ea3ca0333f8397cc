//! [`ToolBook`]: the tools of a session's servers under their exposed
//! names, replaced per server when it is (re)started or announces
//! `notifications/tools/list_changed`; every change bumps a generation
//! number so users of the list can tell it changed.

use crate::client::McpTool;
use parking_lot::RwLock;
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};

/// The tools of every server, in server order.
#[derive(Debug, Default)]
pub(crate) struct ToolBook {
    prefixed: bool,
    by_server: RwLock<Vec<(String, Vec<McpTool>)>>,
    generation: AtomicU64,
}

impl ToolBook {
    /// An empty book; tool names get a `<server>_` prefix when `prefixed`.
    pub(crate) fn new(prefixed: bool) -> Self {
        Self {
            prefixed,
            ..Self::default()
        }
    }

    /// Every tool, servers in the order they were first listed.
    pub(crate) fn all(&self) -> Vec<McpTool> {
        self.by_server
            .read()
            .iter()
            .flat_map(|(_, tools)| tools.iter().cloned())
            .collect()
    }

    /// The tool exposed as `name`.
    pub(crate) fn find(&self, name: &str) -> Option<McpTool> {
        self.by_server
            .read()
            .iter()
            .flat_map(|(_, tools)| tools.iter())
            .find(|t| t.name == name)
            .cloned()
    }

    /// How many times the list changed after it was first filled.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Replaces the tools of `server` with `listed` (MCP `Tool` JSON); a
    /// change of an already listed server bumps the generation.
    pub(crate) fn replace(&self, server: &str, listed: Vec<Value>) {
        let tools: Vec<McpTool> = listed
            .into_iter()
            .filter_map(|t| exposed_tool(server, self.prefixed, t))
            .collect();
        let mut book = self.by_server.write();
        match book.iter_mut().find(|(s, _)| s == server) {
            Some((_, old)) if *old == tools => {}
            Some((_, old)) => {
                *old = tools;
                self.generation.fetch_add(1, Ordering::SeqCst);
                tracing::info!(%server, "MCP tools changed");
            }
            None => book.push((server.to_string(), tools)),
        }
    }
}

/// The tool `t` (MCP JSON) of `server` under its exposed name.
fn exposed_tool(server: &str, prefixed: bool, mut t: Value) -> Option<McpTool> {
    let remote_name = t.get("name")?.as_str()?.to_string();
    let name = if prefixed {
        format!("{server}_{remote_name}")
    } else {
        remote_name.clone()
    };
    if let Some(o) = t.as_object_mut() {
        o.insert("name".into(), Value::String(name.clone()));
    }
    Some(McpTool {
        description: t
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_string),
        input_schema: t
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"type": "object"})),
        annotations: t.get("annotations").filter(|a| !a.is_null()).cloned(),
        name,
        server: server.to_string(),
        remote_name,
        wire: t,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn changes_after_the_first_listing_bump_the_generation() {
        let b = ToolBook::new(true);
        b.replace(
            "a",
            vec![json!({"name": "x", "inputSchema": {"type": "object"}})],
        );
        b.replace("b", vec![json!({"name": "y"})]);
        assert_eq!(b.generation(), 0);
        let names: Vec<String> = b.all().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["a_x", "b_y"]);
        assert_eq!(b.find("b_y").unwrap().remote_name, "y");
        b.replace("b", vec![json!({"name": "y"})]);
        assert_eq!(b.generation(), 0);
        b.replace("b", vec![json!({"name": "y"}), json!({"name": "z"})]);
        assert_eq!(b.generation(), 1);
        assert_eq!(b.all().len(), 3);
        assert!(b.find("b_z").is_some());
    }
}

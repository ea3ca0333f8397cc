//! `GET /api/tools/` (registered tool names) and `GET /api/tools/catalog`
//! (the tools a client may offer when configuring an agent).

use crate::http::state::SharedState;
use axum::Json;
use axum::extract::State;
use openhands_protocol::tools::{ToolCatalogEntry, ToolCatalogResponse};

/// The catalog entry of a tool known only by name: the built-in tools get
/// a description and their default-set flag, anything else is internal.
pub fn default_entry(name: &str) -> ToolCatalogEntry {
    let (selectable, default, description) = match name {
        "terminal" => (
            true,
            true,
            "Runs shell commands in a persistent bash session.",
        ),
        "file_editor" => (true, true, "Views, creates and edits text files."),
        "task_tracker" => (
            true,
            true,
            "Keeps a structured to-do list for multi-step work.",
        ),
        "grep" => (
            true,
            false,
            "Searches file contents with regular expressions.",
        ),
        "glob" => (true, false, "Finds files whose paths match a glob pattern."),
        openhands_sdk::switch_llm::NAME => (
            true,
            true,
            "Lets the agent move the conversation to another saved LLM profile.",
        ),
        "browser_tool_set" => (
            true,
            false,
            "Browses the web: opens pages, clicks, types and reads their content.",
        ),
        _ => (false, false, ""),
    };
    ToolCatalogEntry {
        name: name.to_string(),
        user_selectable: selectable,
        usable: true,
        description: description.to_string(),
        in_default_set: default,
    }
}

/// List all available tools.
#[utoipa::path(get, path = "/tools/", tag = "Tools",
    operation_id = "list_available_tools_api_tools__get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = Vec<String>)))]
pub async fn list_available_tools(State(state): State<SharedState>) -> Json<Vec<String>> {
    Json((state.tool_names)())
}

/// The tools this server offers for configuring an agent: clients offer the
/// `user_selectable` ones; `usable` says whether conversations here can run it.
#[utoipa::path(get, path = "/tools/catalog", tag = "Tools",
    operation_id = "get_tool_catalog_api_tools_catalog_get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = ToolCatalogResponse)))]
pub async fn get_tool_catalog(State(state): State<SharedState>) -> Json<ToolCatalogResponse> {
    let mut tools: Vec<ToolCatalogEntry> = match &state.tool_catalog {
        Some(catalog) => catalog(),
        None => (state.tool_names)()
            .iter()
            .map(|n| default_entry(n))
            .collect(),
    };
    // The SDK's `switch_llm` is offered by every server, as the reference's
    // built-in (it is resolved by the agent, not the tool registry).
    if !tools
        .iter()
        .any(|t| t.name == openhands_sdk::switch_llm::NAME)
    {
        tools.push(default_entry(openhands_sdk::switch_llm::NAME));
    }
    Json(ToolCatalogResponse { tools })
}

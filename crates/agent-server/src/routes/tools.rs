//! `GET /api/tools/`: names of the registered tools.

use crate::state::SharedState;
use axum::Json;
use axum::extract::State;

/// List all available tools.
#[utoipa::path(get, path = "/tools/", tag = "Tools",
    operation_id = "list_available_tools_api_tools__get",
    security(("APIKeyHeader" = [])),
    responses((status = 200, description = "Successful Response", body = Vec<String>)))]
pub async fn list_available_tools(State(state): State<SharedState>) -> Json<Vec<String>> {
    Json((state.tool_names)())
}

//! `GET /api/tools/catalog` answers.

use serde::{Deserialize, Serialize};

/// A registered tool as offered to clients configuring an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolCatalogEntry {
    /// Registered name.
    pub name: String,
    /// Whether clients should offer it as a choice.
    pub user_selectable: bool,
    /// Whether conversations on this server can run it.
    pub usable: bool,
    /// One line for a settings screen (empty for internal tools).
    pub description: String,
    /// Whether the default agent has it.
    pub in_default_set: bool,
}

/// `{"tools": [...]}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ToolCatalogResponse {
    /// The entries, in registry order.
    pub tools: Vec<ToolCatalogEntry>,
}

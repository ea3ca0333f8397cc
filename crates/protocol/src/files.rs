//! Answers of the file-browsing routes (`/api/file/home`, `/api/file/search_subdirs`).

use serde::{Deserialize, Serialize};

/// A labelled location.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FileBrowserEntry {
    /// Display name.
    pub label: String,
    /// Absolute path.
    pub path: String,
}

/// The home directory and sidebar lists.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HomeResponse {
    /// The server user's home directory.
    pub home: String,
    /// Top-level directories of the home directory.
    pub favorites: Vec<FileBrowserEntry>,
    /// File system roots.
    pub locations: Vec<FileBrowserEntry>,
}

/// One subdirectory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SubdirectoryEntry {
    /// Its name.
    pub name: String,
    /// Its absolute path.
    pub path: String,
}

/// A page of subdirectories.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SubdirectoryPage {
    /// The subdirectories.
    pub items: Vec<SubdirectoryEntry>,
    /// Name of the first entry of the next page.
    pub next_page_id: Option<String>,
}

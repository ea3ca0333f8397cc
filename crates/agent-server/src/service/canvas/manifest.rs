//! The canvas extension manifest (`canvas-extension.json`) with the
//! reference's validation rules, and the symlink-aware containment check
//! of the files it names (entrypoint, icon).

use openhands_sdk::installed::valid_name;
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use utoipa::ToSchema;

/// The manifest's file name at an extension's package root.
pub const MANIFEST_FILENAME: &str = "canvas-extension.json";

/// Variables a backend may inherit from the server's environment.
pub const SAFE_INHERITED_ENV: [&str; 6] = ["LANG", "LC_ALL", "LC_CTYPE", "PATH", "TMPDIR", "TZ"];

/// A page an extension contributes to the Canvas UI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CanvasExtensionPage {
    /// Unique contribution id within the extension (kebab-case).
    pub id: String,
    /// Title shown in the Canvas navigation.
    pub title: String,
    /// Absolute kebab-case route, e.g. `/dashboard`.
    pub path: String,
}

/// What an extension contributes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CanvasExtensionContributes {
    /// Pages contributed to the Canvas navigation.
    #[serde(default)]
    pub pages: Vec<CanvasExtensionPage>,
}

/// A backend archive for one platform: a package-relative `.tar.gz` or a
/// public HTTPS URL, with its checksum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CanvasExtensionBackendArtifact {
    /// Package-relative `.tar.gz` path (empty for a remote artifact).
    #[serde(default)]
    pub path: String,
    /// Public HTTPS `.tar.gz` URL.
    #[serde(default)]
    pub url: Option<String>,
    /// Lowercase SHA-256 of the archive.
    pub sha256: String,
    /// Leading archive path components to remove (remote artifacts only).
    #[serde(default)]
    pub strip_components: u32,
}

fn default_health_path() -> String {
    "/health".into()
}
fn default_health_timeout() -> f64 {
    30.0
}
fn default_health_interval() -> f64 {
    0.1
}

/// The loopback HTTP readiness probe of a backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CanvasExtensionBackendHealth {
    /// Path probed on `127.0.0.1:{port}`.
    #[serde(default = "default_health_path")]
    pub path: String,
    /// Time the backend has to become ready.
    #[serde(default = "default_health_timeout")]
    pub timeout_seconds: f64,
    /// Time between probes.
    #[serde(default = "default_health_interval")]
    pub interval_seconds: f64,
}

impl Default for CanvasExtensionBackendHealth {
    fn default() -> Self {
        Self {
            path: default_health_path(),
            timeout_seconds: default_health_timeout(),
            interval_seconds: default_health_interval(),
        }
    }
}

/// An optional backend process of a Canvas App.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CanvasExtensionBackend {
    /// Always 1.
    pub schema_version: i64,
    /// Artifacts by platform (`linux-amd64`, `linux-arm64`).
    pub artifacts: BTreeMap<String, CanvasExtensionBackendArtifact>,
    /// Command line; `{port}`, `{data_dir}` and `{artifact_dir}` are
    /// replaced, the executable must lie in `{artifact_dir}`.
    pub argv: Vec<String>,
    /// Readiness probe.
    #[serde(default)]
    pub health: CanvasExtensionBackendHealth,
    /// Server variables passed through (from [`SAFE_INHERITED_ENV`]).
    #[serde(default)]
    pub inherit_environment: Vec<String>,
}

/// `canvas-extension.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CanvasExtensionManifest {
    /// Manifest schema version (1).
    pub schema_version: i64,
    /// Extension name (kebab-case).
    pub name: String,
    /// Human-readable name.
    pub display_name: String,
    /// Version.
    pub version: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Package-relative path of the bundle entry file.
    pub entrypoint: String,
    /// Contributions to the Canvas UI.
    #[serde(default)]
    pub contributes: CanvasExtensionContributes,
    /// Optional backend service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<CanvasExtensionBackend>,
    /// Package-relative path of an SVG icon (anything else is dropped).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "svg_only"
    )]
    pub icon: Option<String>,
}

/// A non-SVG icon is dropped, not an error (as the reference: the manifest
/// is re-validated on every read and must not vanish for a bad icon).
fn svg_only<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = serde_json::Value::deserialize(d)?;
    Ok(match v {
        serde_json::Value::String(s) if s.ends_with(".svg") => Some(s),
        serde_json::Value::Null => None,
        other => {
            tracing::warn!(icon = %other, "ignoring invalid canvas extension icon");
            None
        }
    })
}

fn has_parent_part(p: &str) -> bool {
    p.split('/').any(|part| part == "..")
}

fn page_path_ok(p: &str) -> bool {
    p.strip_prefix('/')
        .is_some_and(|rest| rest.split('/').all(valid_name))
}

fn health_path_ok(p: &str) -> bool {
    p.strip_prefix('/').is_some_and(|rest| {
        rest.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._~!$&'()*+,;=:@%/-".contains(c))
    })
}

fn https_tar_url_ok(u: &str) -> bool {
    let Ok(url) = url::Url::parse(u) else {
        return false;
    };
    url.scheme() == "https"
        && url.host_str().is_some_and(|h| !h.is_empty())
        && url.username().is_empty()
        && url.password().is_none()
        && url.fragment().is_none()
        && url.path().ends_with(".tar.gz")
}

/// Why a canvas extension package is refused (the text is the reason shown).
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The package has no manifest file.
    #[error("no canvas-extension.json")]
    Missing,
    /// The manifest file could not be read.
    #[error("{0}")]
    Read(#[source] std::io::Error),
    /// The manifest is not JSON of the manifest's shape.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// A field breaks one of the manifest's rules (which one, and how).
    #[error("{0}")]
    Invalid(String),
    /// The package directory itself cannot be resolved.
    #[error("extension package root: {0}")]
    Root(#[source] std::io::Error),
    /// A named file resolves (through links) outside the package.
    #[error("{label} {relative:?} resolves outside the extension package root")]
    Outside {
        /// What the file is (`entrypoint`, `icon`, `artifact`).
        label: &'static str,
        /// The path as the manifest gives it.
        relative: String,
    },
    /// A named file is missing or not a regular file.
    #[error("{label} {relative:?} does not resolve to a file in the extension package")]
    NotFile {
        /// What the file is (`entrypoint`, `icon`, `artifact`).
        label: &'static str,
        /// The path as the manifest gives it.
        relative: String,
    },
}

impl CanvasExtensionBackendArtifact {
    fn validate(&self) -> Result<(), ManifestError> {
        let sha_ok = self.sha256.len() == 64
            && self
                .sha256
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
        if !sha_ok {
            return Err(ManifestError::Invalid(
                "artifact sha256 must be 64 lowercase hex digits".into(),
            ));
        }
        if self.strip_components > 16 {
            return Err(ManifestError::Invalid(
                "strip_components must be at most 16".into(),
            ));
        }
        if !self.path.is_empty()
            && (self.path.starts_with('/')
                || has_parent_part(&self.path)
                || !self.path.ends_with(".tar.gz"))
        {
            return Err(ManifestError::Invalid(
                "artifact path must be a relative .tar.gz path".into(),
            ));
        }
        if let Some(u) = &self.url
            && !https_tar_url_ok(u)
        {
            return Err(ManifestError::Invalid(
                "artifact url must be a credential-free HTTPS .tar.gz URL".into(),
            ));
        }
        if self.path.is_empty() == self.url.is_none() {
            return Err(ManifestError::Invalid(
                "artifact must declare exactly one of path or url".into(),
            ));
        }
        if !self.path.is_empty() && self.strip_components > 0 {
            return Err(ManifestError::Invalid(
                "strip_components is supported only for remote artifacts".into(),
            ));
        }
        Ok(())
    }
}

/// The placeholders of `arg` (`{...}` without nested braces).
fn placeholders(arg: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = arg;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find(['{', '}']) {
            Some(i) if after.as_bytes()[i] == b'}' && i > 0 => {
                out.push(&rest[open..open + i + 2]);
                rest = &after[i + 1..];
            }
            Some(i) if after.as_bytes()[i] == b'}' => rest = &after[i + 1..],
            Some(i) => rest = &after[i..],
            None => break,
        }
    }
    out
}

impl CanvasExtensionBackend {
    fn validate(&self) -> Result<(), ManifestError> {
        if self.schema_version != 1 {
            return Err(ManifestError::Invalid(
                "backend schema_version must be 1".into(),
            ));
        }
        if self.artifacts.is_empty() {
            return Err(ManifestError::Invalid(
                "backend must declare at least one artifact".into(),
            ));
        }
        for (platform, artifact) in &self.artifacts {
            if !matches!(platform.as_str(), "linux-amd64" | "linux-arm64") {
                return Err(ManifestError::Invalid(format!(
                    "unsupported backend platform {platform:?}"
                )));
            }
            artifact.validate()?;
        }
        let Some(first) = self.argv.first() else {
            return Err(ManifestError::Invalid(
                "backend argv must not be empty".into(),
            ));
        };
        for arg in &self.argv {
            if arg.is_empty() || arg.contains('\0') {
                return Err(ManifestError::Invalid(
                    "backend argv entries must be non-empty".into(),
                ));
            }
            if placeholders(arg)
                .iter()
                .any(|p| !matches!(*p, "{port}" | "{data_dir}" | "{artifact_dir}"))
            {
                return Err(ManifestError::Invalid(
                    "backend argv contains an unsupported placeholder".into(),
                ));
            }
        }
        let h = &self.health;
        if !health_path_ok(&h.path) {
            return Err(ManifestError::Invalid(
                "backend health path is invalid".into(),
            ));
        }
        if !(h.timeout_seconds > 0.0 && h.timeout_seconds <= 300.0) {
            return Err(ManifestError::Invalid(
                "backend health timeout_seconds must be in (0, 300]".into(),
            ));
        }
        if !(h.interval_seconds > 0.0 && h.interval_seconds <= 10.0) {
            return Err(ManifestError::Invalid(
                "backend health interval_seconds must be in (0, 10]".into(),
            ));
        }
        let unique: BTreeSet<&String> = self.inherit_environment.iter().collect();
        if unique.len() != self.inherit_environment.len() {
            return Err(ManifestError::Invalid(
                "inherit_environment entries must be unique".into(),
            ));
        }
        if self
            .inherit_environment
            .iter()
            .any(|v| !SAFE_INHERITED_ENV.contains(&v.as_str()))
        {
            return Err(ManifestError::Invalid(
                "inherit_environment contains a disallowed variable".into(),
            ));
        }
        if !first.contains("{artifact_dir}") {
            return Err(ManifestError::Invalid(
                "backend argv executable must be inside {artifact_dir}".into(),
            ));
        }
        Ok(())
    }
}

impl CanvasExtensionManifest {
    /// Parses and validates manifest JSON (the reference's field rules;
    /// unknown fields are ignored). The error says what is wrong.
    pub fn parse(text: &str) -> Result<Self, ManifestError> {
        let m: Self = serde_json::from_str(text)?;
        m.validate()?;
        Ok(m)
    }

    fn validate(&self) -> Result<(), ManifestError> {
        if self.schema_version != 1 {
            return Err(ManifestError::Invalid(
                "unsupported canvas extension schema_version".into(),
            ));
        }
        if !valid_name(&self.name) {
            return Err(ManifestError::Invalid(format!(
                "Invalid extension name. Expected kebab-case, got {:?}.",
                self.name
            )));
        }
        if self.entrypoint.is_empty() {
            return Err(ManifestError::Invalid(
                "entrypoint must not be empty".into(),
            ));
        }
        if self.entrypoint.starts_with('/') {
            return Err(ManifestError::Invalid(
                "entrypoint must be relative, not absolute".into(),
            ));
        }
        if has_parent_part(&self.entrypoint) {
            return Err(ManifestError::Invalid(
                "entrypoint cannot contain '..' (parent directory traversal)".into(),
            ));
        }
        let mut ids = BTreeSet::new();
        let mut paths = BTreeSet::new();
        for page in &self.contributes.pages {
            if !valid_name(&page.id) {
                return Err(ManifestError::Invalid(format!(
                    "Invalid contribution id. Expected kebab-case, got {:?}.",
                    page.id
                )));
            }
            if !page_path_ok(&page.path) {
                return Err(ManifestError::Invalid(format!(
                    "Invalid page path. Expected an absolute kebab-case route (e.g. '/dashboard'), got {:?}.",
                    page.path
                )));
            }
            if !ids.insert(page.id.as_str()) {
                return Err(ManifestError::Invalid(format!(
                    "Duplicate page contribution id: {:?}",
                    page.id
                )));
            }
            if !paths.insert(page.path.as_str()) {
                return Err(ManifestError::Invalid(format!(
                    "Duplicate page path: {:?}",
                    page.path
                )));
            }
        }
        if let Some(b) = &self.backend {
            b.validate()?;
        }
        Ok(())
    }

    /// The manifest as the reference's `model_dump_json(exclude_none=True)`
    /// (compact, fields in declaration order, `null`s left out): the input
    /// of a revision without a git commit.
    pub fn canonical_json(&self) -> String {
        fn strip(v: &mut serde_json::Value) {
            match v {
                serde_json::Value::Object(m) => {
                    m.retain(|_, x| !x.is_null());
                    m.values_mut().for_each(strip);
                }
                serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
                _ => {}
            }
        }
        let mut v = serde_json::to_value(self).unwrap_or_default();
        strip(&mut v);
        v.to_string()
    }
}

/// Resolves `relative` under `root` following symlinks; it must stay inside
/// `root` and be a regular file (`label` names it in the error).
pub fn resolve_contained_file(
    label: &'static str,
    relative: &str,
    root: &Path,
) -> Result<PathBuf, ManifestError> {
    let root = root.canonicalize().map_err(ManifestError::Root)?;
    let outside = || ManifestError::Outside {
        label,
        relative: relative.to_string(),
    };
    let not_file = || ManifestError::NotFile {
        label,
        relative: relative.to_string(),
    };
    let candidate = match root.join(relative).canonicalize() {
        Ok(c) => c,
        // A dangling link or a missing file; a link that points outside
        // is reported as such when its target's parent resolves.
        Err(_) => return Err(not_file()),
    };
    if !candidate.starts_with(&root) {
        return Err(outside());
    }
    if !candidate.is_file() {
        return Err(not_file());
    }
    Ok(candidate)
}

/// Reads and validates the manifest of the package at `dir`, entrypoint
/// containment included. `Ok(None)` when there is no manifest file.
pub fn load_from_dir(dir: &Path) -> Result<Option<CanvasExtensionManifest>, ManifestError> {
    let text = match std::fs::read_to_string(dir.join(MANIFEST_FILENAME)) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ManifestError::Read(e)),
    };
    let m = CanvasExtensionManifest::parse(&text)?;
    resolve_contained_file("entrypoint", &m.entrypoint, dir)?;
    Ok(Some(m))
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;

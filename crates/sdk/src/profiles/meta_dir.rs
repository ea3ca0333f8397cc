//! Stored meta-profiles in a directory (`<dir>/<name>.json`), the
//! [`MetaProfileSource`] of the SDK and the CLI; names are checked as
//! LLM profile names are.

use crate::meta_profile::{MetaProfile, MetaProfileLoadError, MetaProfileSource};
use std::path::{Path, PathBuf};

/// Meta-profiles in a directory (`<dir>/<name>.json`), read-only.
#[derive(Debug, Clone)]
pub struct MetaProfileDir {
    dir: PathBuf,
}

impl MetaProfileDir {
    /// The meta-profiles in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// `<home>/.openhands/meta-profiles`, the reference's default.
    pub fn default_dir(home: &Path) -> PathBuf {
        home.join(".openhands").join("meta-profiles")
    }
}

impl MetaProfileSource for MetaProfileDir {
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let file = e.file_name().to_string_lossy().to_string();
                file.strip_suffix(".json")
                    .filter(|n| super::check_name(n).is_ok())
                    .map(str::to_string)
            })
            .collect();
        names.sort();
        names
    }

    fn load(&self, name: &str) -> Result<MetaProfile, MetaProfileLoadError> {
        let clean = name.strip_suffix(".json").unwrap_or(name);
        super::check_name(clean).map_err(|e| MetaProfileLoadError::invalid(name, e))?;
        let bytes = match std::fs::read(self.dir.join(format!("{clean}.json"))) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(MetaProfileLoadError::NotFound {
                    name: name.to_string(),
                    available: self.names(),
                });
            }
            Err(e) => return Err(MetaProfileLoadError::invalid(name, e)),
        };
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| MetaProfileLoadError::invalid(name, e))?;
        MetaProfile::from_json(&value).map_err(|e| MetaProfileLoadError::invalid(name, e))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_directory_lists_loads_and_names_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let store = MetaProfileDir::new(dir.path());
        assert!(store.names().is_empty());
        std::fs::write(
            dir.path().join("route.json"),
            json!({"classifier_model": "c", "classes": [{"description": "ui", "model": "v"}]})
                .to_string(),
        )
        .unwrap();
        std::fs::write(dir.path().join("bad.json"), "{").unwrap();
        assert_eq!(store.names(), ["bad", "route"]);
        assert_eq!(store.load("route").unwrap().classes[0].model, "v");
        assert!(matches!(
            store.load("bad"),
            Err(MetaProfileLoadError::Invalid(..))
        ));
        let e = store.load("nope").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Meta-profile `nope` not found. Available meta-profiles: bad, route"
        );
    }
}

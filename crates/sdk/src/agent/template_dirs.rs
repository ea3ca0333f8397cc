//! Where the agent's prompt files come from: the built-in names, absolute
//! paths, and relative names looked up in the template directories.
//!
//! The reference resolves a relative `system_prompt_filename` or
//! `security_policy_filename` against its package's prompt directory; a
//! compiled binary has none, so relative names are looked up in the
//! directories of `OPENHANDS_PROMPT_DIRS` (a path list, searched in order),
//! then in `~/.openhands/prompts`. A name found nowhere is an error naming
//! the file and the places searched — never a silent fallback to the
//! default prompt.

use std::path::{Path, PathBuf};

/// Environment variable listing extra template directories (separated like
/// `PATH`), searched before `~/.openhands/prompts`.
pub const PROMPT_DIRS_ENV: &str = "OPENHANDS_PROMPT_DIRS";

/// A prompt file that could not be found or read.
#[derive(Debug, thiserror::Error)]
pub enum TemplateFileError {
    /// A relative name found in no template directory.
    #[error("`{field}`: prompt file '{name}' not found (searched {searched})")]
    NotFound {
        /// The agent field naming the file.
        field: &'static str,
        /// The name as configured.
        name: String,
        /// The places searched, for the message.
        searched: String,
    },
    /// The file exists but cannot be read.
    #[error("`{field}`: cannot read prompt file {path}: {source}")]
    Read {
        /// The agent field naming the file.
        field: &'static str,
        /// The resolved path.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
}

impl TemplateFileError {
    /// The agent field naming the file.
    pub fn field(&self) -> &'static str {
        match self {
            Self::NotFound { field, .. } | Self::Read { field, .. } => field,
        }
    }

    /// The file as configured (or resolved).
    pub fn name(&self) -> &str {
        match self {
            Self::NotFound { name, .. } => name,
            Self::Read { path, .. } => path,
        }
    }
}

/// The template directories, in search order: each entry of
/// [`PROMPT_DIRS_ENV`], then `~/.openhands/prompts`.
pub fn template_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = openhands_workspace::exec::env::host_var_os(PROMPT_DIRS_ENV)
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    if let Some(home) =
        openhands_workspace::exec::env::host_var_os("HOME").filter(|h| !h.is_empty())
    {
        dirs.push(Path::new(&home).join(".openhands").join("prompts"));
    }
    dirs
}

/// The file `name` names: an absolute path as is, a relative name in the
/// first of `dirs` holding it (`..` may not leave the directory).
pub fn resolve(
    field: &'static str,
    name: &str,
    dirs: &[PathBuf],
) -> Result<PathBuf, TemplateFileError> {
    let path = Path::new(name);
    if path.is_absolute() {
        return if path.is_file() {
            Ok(path.to_path_buf())
        } else {
            Err(TemplateFileError::NotFound {
                field,
                name: name.to_string(),
                searched: "the absolute path".into(),
            })
        };
    }
    let escapes = path
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir));
    if !escapes {
        for dir in dirs {
            let candidate = dir.join(path);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    let mut searched = String::from("the built-in templates");
    for d in dirs {
        searched.push_str(", ");
        searched.push_str(&d.display().to_string());
    }
    Err(TemplateFileError::NotFound {
        field,
        name: name.to_string(),
        searched,
    })
}

/// Reads the file `name` resolves to.
pub fn read(
    field: &'static str,
    name: &str,
    dirs: &[PathBuf],
) -> Result<String, TemplateFileError> {
    let path = resolve(field, name, dirs)?;
    std::fs::read_to_string(&path).map_err(|source| TemplateFileError::Read {
        field,
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_names_are_found_in_order_and_missing_ones_named() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        std::fs::write(b.path().join("p.j2"), "from b").unwrap();
        let dirs = vec![a.path().to_path_buf(), b.path().to_path_buf()];
        assert_eq!(resolve("f", "p.j2", &dirs).unwrap(), b.path().join("p.j2"));
        std::fs::write(a.path().join("p.j2"), "from a").unwrap();
        assert_eq!(read("f", "p.j2", &dirs).unwrap(), "from a");
        let err = resolve("system_prompt_filename", "nope.j2", &dirs)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("nope.j2") && err.contains("system_prompt_filename"),
            "{err}"
        );
        assert!(err.contains(&a.path().display().to_string()), "{err}");
        // No way out of a template directory.
        std::fs::write(a.path().join("secret"), "x").unwrap();
        let inner = a.path().join("inner");
        std::fs::create_dir(&inner).unwrap();
        assert!(resolve("f", "../secret", &[inner]).is_err());
        // Absolute paths are used as they are.
        let abs = a.path().join("p.j2");
        assert_eq!(resolve("f", abs.to_str().unwrap(), &[]).unwrap(), abs);
        assert!(resolve("f", "/nonexistent/x.j2", &[]).is_err());
    }
}

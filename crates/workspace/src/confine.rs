//! Keeping conversation-scoped requests inside the conversation's workspace.
//!
//! Paths are resolved like Python's `Path.resolve()` (non-strict): symlinks
//! are followed as far as the path exists, `..` is applied after, and the
//! missing remainder is appended as written. A requested path whose resolved
//! form is not the root or below it is refused with the reference's
//! `"<name> must be inside the conversation workspace"`.

use std::path::{Component, Path, PathBuf};

/// Most symlinks followed while resolving one path (like the kernel's limit).
const MAX_LINKS: usize = 40;

/// Resolves `path` (relative to the process working directory) following
/// symlinks where they exist. Blocking: touches the file system.
pub fn resolve_lenient(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let mut links = 0usize;
    resolve_components(&absolute, &mut links)
}

fn resolve_components(path: &Path, links: &mut usize) -> PathBuf {
    let mut resolved = PathBuf::from("/");
    let mut exists = true;
    for component in path.components() {
        match component {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(name) => {
                resolved.push(name);
                if !exists {
                    continue;
                }
                match std::fs::symlink_metadata(&resolved) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        *links += 1;
                        if *links > MAX_LINKS {
                            // A loop: keep the path as written from here on.
                            exists = false;
                            continue;
                        }
                        match std::fs::read_link(&resolved) {
                            Ok(target) => {
                                resolved.pop();
                                let joined = resolved.join(target);
                                resolved = resolve_components(&joined, links);
                            }
                            Err(_) => exists = false,
                        }
                    }
                    Ok(_) => {}
                    Err(_) => exists = false,
                }
            }
        }
    }
    resolved
}

/// Whether `path` resolves to `root` or somewhere below it (`root` must
/// already be resolved). Blocking.
pub fn is_within(root: &Path, path: &Path) -> bool {
    resolve_lenient(path).starts_with(root)
}

/// A workspace a request is confined to (already resolved).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    root: PathBuf,
}

impl Confinement {
    /// Confines to `root`, resolving it first. Blocking.
    pub fn new(root: &Path) -> Self {
        Self {
            root: resolve_lenient(root),
        }
    }

    /// The resolved root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Checks a requested path. It must be absolute and resolve inside the
    /// root; returns the resolved path. Blocking.
    pub fn check(&self, requested: &str, name: &str) -> Result<PathBuf, ConfinementError> {
        let path = Path::new(requested);
        let resolved = resolve_lenient(path);
        if !path.is_absolute() || !resolved.starts_with(&self.root) {
            return Err(outside(name));
        }
        Ok(resolved)
    }

    /// Checks a working directory (may be relative to the server's working
    /// directory, like the reference). Blocking.
    pub fn check_cwd(&self, requested: &str) -> Result<PathBuf, ConfinementError> {
        let resolved = resolve_lenient(Path::new(requested));
        if resolved.starts_with(&self.root) {
            Ok(resolved)
        } else {
            Err(outside("cwd"))
        }
    }
}

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfinementError {
    /// The path (named `name` in the request) resolves outside the root.
    #[error("{name} must be inside the conversation workspace")]
    Outside {
        /// The request field or parameter that held the path.
        name: String,
    },
    /// The blocking resolution could not run.
    #[error("path resolution failed: {0}")]
    Resolve(String),
}

fn outside(name: &str) -> ConfinementError {
    ConfinementError::Outside {
        name: name.to_string(),
    }
}

/// Runs [`Confinement::check`] off the async runtime when a confinement applies;
/// without one the requested path is returned unchanged.
pub async fn check_path(
    confinement: Option<&Confinement>,
    requested: &str,
    name: &str,
) -> Result<PathBuf, ConfinementError> {
    let Some(c) = confinement.cloned() else {
        return Ok(PathBuf::from(requested));
    };
    let requested = requested.to_string();
    let name = name.to_string();
    tokio::task::spawn_blocking(move || c.check(&requested, &name))
        .await
        .map_err(|e| ConfinementError::Resolve(e.to_string()))?
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn dot_dot_and_missing_parts_resolve_lexically() {
        assert_eq!(
            resolve_lenient(Path::new("/nonexistent-x/a/../b/./c")),
            PathBuf::from("/nonexistent-x/b/c")
        );
        assert_eq!(resolve_lenient(Path::new("/../..")), PathBuf::from("/"));
    }

    #[test]
    fn paths_inside_outside_and_through_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        let outside_dir = dir.path().join("secret");
        std::fs::create_dir_all(&outside_dir).unwrap();
        symlink(&outside_dir, root.join("escape")).unwrap();
        symlink(root.join("sub"), root.join("inner")).unwrap();
        symlink(root.join("loop"), root.join("loop")).unwrap();

        let c = Confinement::new(&root);
        let p = |rel: &str| format!("{}/{rel}", root.display());
        assert!(c.check(&p("sub/new.txt"), "path").is_ok());
        assert!(c.check(&p("not/yet/there"), "path").is_ok());
        assert!(c.check(&p("inner/x"), "path").is_ok());
        assert!(c.check(root.to_str().unwrap(), "path").is_ok());
        let e = c.check(&p("../secret/x"), "path").unwrap_err();
        assert_eq!(
            e.to_string(),
            "path must be inside the conversation workspace"
        );
        assert!(c.check(&p("escape/x"), "path").is_err());
        assert!(c.check(&p("escape"), "path").is_err());
        assert!(c.check("relative/path", "path").is_err());
        assert!(
            c.check(&format!("{}-other/x", root.display()), "path")
                .is_err()
        );
        // A symlink loop does not hang and stays inside.
        assert!(c.check(&p("loop/x"), "path").is_ok());
        let e = c.check_cwd("/").unwrap_err();
        assert_eq!(
            e.to_string(),
            "cwd must be inside the conversation workspace"
        );
        assert!(c.check_cwd(&p("sub")).is_ok());
    }

    #[test]
    fn a_symlinked_root_is_resolved_first() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir_all(&real).unwrap();
        let link = dir.path().join("link");
        symlink(&real, &link).unwrap();
        let c = Confinement::new(&link);
        assert_eq!(c.root(), resolve_lenient(&real).as_path());
        assert!(c.check(&format!("{}/f", link.display()), "path").is_ok());
        assert!(c.check(&format!("{}/f", real.display()), "path").is_ok());
    }
}

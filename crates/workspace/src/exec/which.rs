//! Finding a program on a `PATH` (for spawning by absolute path).

use std::ffi::{OsStr, OsString};
use std::path::Path;

/// `program` searched on `path` (colon-separated) when it has no `/`: the
/// first executable regular file found, else `program` unchanged.
pub fn resolve_program(program: &OsStr, path: Option<&str>) -> OsString {
    use std::os::unix::ffi::OsStrExt;
    if program.as_bytes().contains(&b'/') || program.is_empty() {
        return program.to_os_string();
    }
    for dir in path.unwrap_or("").split(':').filter(|d| !d.is_empty()) {
        let candidate = Path::new(dir).join(program);
        if is_executable(&candidate) {
            return candidate.into_os_string();
        }
    }
    program.to_os_string()
}

/// Whether `path` is a regular file someone may execute.
pub(crate) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

//! Finding a program on a `PATH` (for spawning by absolute path).

use std::ffi::{OsStr, OsString};
use std::path::Path;

/// `program` searched on `path` (colon-separated) when it has no `/`: the
/// first executable regular file found, else `program` unchanged.
pub fn resolve_program(program: &OsStr, path: Option<&str>) -> OsString {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    if program.as_bytes().contains(&b'/') || program.is_empty() {
        return program.to_os_string();
    }
    for dir in path.unwrap_or("").split(':').filter(|d| !d.is_empty()) {
        let candidate = Path::new(dir).join(program);
        if std::fs::metadata(&candidate)
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        {
            return candidate.into_os_string();
        }
    }
    program.to_os_string()
}

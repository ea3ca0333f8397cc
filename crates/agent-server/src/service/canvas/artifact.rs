//! Backend artifacts: checksums and the safe extraction of a `.tar.gz`
//! (regular files and directories only, no absolute or `..` paths, no
//! duplicates, read-only result). Blocking.

use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

/// Why an artifact was not extracted (the reference's messages).
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    /// An entry that is not a plain file or directory, escapes the
    /// destination, or repeats another.
    #[error("backend artifact contains an unsafe archive entry")]
    UnsafeEntry,
    /// Not a gzip tar (or truncated).
    #[error("backend artifact is not a valid gzip tar archive")]
    NotAnArchive,
    /// Nothing left once the leading parts are stripped.
    #[error("backend artifact contains no files after stripping")]
    Empty,
    /// The disk failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Lowercase hex SHA-256 of a file.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1024 * 1024];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

/// Extracts `archive` into the empty directory `dest`, dropping
/// `strip_components` leading path parts.
pub fn extract(archive: &Path, dest: &Path, strip_components: usize) -> Result<(), ExtractError> {
    let file = std::fs::File::open(archive)?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut dirs: Vec<PathBuf> = vec![dest.to_path_buf()];
    let mut extracted = 0usize;
    let entries = tar.entries().map_err(|_| ExtractError::NotAnArchive)?;
    for entry in entries {
        let mut entry = entry.map_err(|_| ExtractError::NotAnArchive)?;
        let original = entry
            .path()
            .map_err(|_| ExtractError::UnsafeEntry)?
            .into_owned();
        let mut parts = Vec::new();
        for c in original.components() {
            match c {
                Component::Normal(p) => parts.push(p.to_owned()),
                Component::CurDir => {}
                _ => return Err(ExtractError::UnsafeEntry),
            }
        }
        if parts.len() <= strip_components {
            continue;
        }
        let relative: PathBuf = parts[strip_components..].iter().collect();
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) || !seen.insert(relative.clone()) {
            return Err(ExtractError::UnsafeEntry);
        }
        let target = dest.join(&relative);
        if kind.is_dir() {
            std::fs::create_dir_all(&target)?;
            dirs.push(target);
        } else {
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)?;
                dirs.push(parent.to_path_buf());
            }
            let mode = entry.header().mode().unwrap_or(0o644);
            let mut out = std::fs::File::create(&target)?;
            std::io::copy(&mut entry, &mut out).map_err(|_| ExtractError::NotAnArchive)?;
            drop(out);
            set_mode(&target, mode & 0o555)?;
        }
        extracted += 1;
    }
    if extracted == 0 {
        return Err(ExtractError::Empty);
    }
    dirs.sort();
    dirs.dedup();
    for d in dirs.iter().rev() {
        set_mode(d, 0o555)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(entries: &[(&str, &[u8], u32)]) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        let gz = flate2::write::GzEncoder::new(f.reopen().unwrap(), flate2::Compression::fast());
        let mut b = tar::Builder::new(gz);
        for (name, data, mode) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(*mode);
            h.set_entry_type(tar::EntryType::Regular);
            // `set_path` refuses `..`; write the raw name like a hostile tool.
            let raw = &mut h.as_old_mut().name;
            raw[..name.len()].copy_from_slice(name.as_bytes());
            h.set_cksum();
            b.append(&h, *data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap();
        f
    }

    #[test]
    fn extracts_read_only_and_strips() {
        let a = archive(&[
            ("pkg/bin/run", b"#!/bin/sh\n", 0o755),
            ("pkg/x.txt", b"x", 0o644),
        ]);
        let d = tempfile::tempdir().unwrap();
        let dest = d.path().join("out");
        std::fs::create_dir(&dest).unwrap();
        extract(a.path(), &dest, 1).unwrap();
        let mode = std::fs::metadata(dest.join("bin/run"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o555);
        assert_eq!(std::fs::read(dest.join("x.txt")).unwrap(), b"x");
        let dest2 = d.path().join("out2");
        std::fs::create_dir(&dest2).unwrap();
        assert!(
            extract(a.path(), &dest2, 3)
                .unwrap_err()
                .to_string()
                .contains("no files")
        );
    }

    #[test]
    fn refuses_traversal_duplicates_and_garbage() {
        let d = tempfile::tempdir().unwrap();
        let a = archive(&[("../evil", b"x", 0o644)]);
        assert!(matches!(
            extract(a.path(), d.path(), 0),
            Err(ExtractError::UnsafeEntry)
        ));
        let a = archive(&[("a", b"x", 0o644), ("./a", b"y", 0o644)]);
        let d = tempfile::tempdir().unwrap();
        assert!(matches!(
            extract(a.path(), d.path(), 0),
            Err(ExtractError::UnsafeEntry)
        ));
        let junk = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(junk.path(), b"not gzip").unwrap();
        assert!(matches!(
            extract(junk.path(), d.path(), 0),
            Err(ExtractError::NotAnArchive)
        ));
        assert!(!d.path().join("evil").exists());
    }
}

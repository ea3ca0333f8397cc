use super::*;
use std::collections::BTreeMap;
use std::io::Read;

fn ex(patterns: &[&str]) -> Excludes {
    Excludes::new(&patterns.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
}

#[test]
fn bare_patterns_match_any_component_and_dir_only_ones_spare_files() {
    let e = ex(&["node_modules/", "*.pyc", "build/"]);
    assert!(e.excludes(&["node_modules"], true));
    assert!(e.excludes(&["a", "node_modules", "x.js"], false));
    assert!(e.excludes(&["pkg", "m.pyc"], false));
    // A file literally named like a directory exclude is kept.
    assert!(!e.excludes(&["build"], false));
    assert!(e.excludes(&["build"], true));
    assert!(!e.excludes(&["src", "main.rs"], false));
}

#[test]
fn anchored_patterns_match_the_path_or_below_segment_by_segment() {
    let e = ex(&["secrets/prod", "*/test", "a/*/c"]);
    assert!(e.excludes(&["secrets", "prod"], false));
    assert!(e.excludes(&["secrets", "prod", "key"], false));
    assert!(!e.excludes(&["other", "secrets", "prod"], false));
    assert!(e.excludes(&["a", "test"], true));
    assert!(!e.excludes(&["a", "b", "test"], true));
    assert!(e.excludes(&["a", "x", "c"], false));
}

#[test]
fn pathspecs_mirror_the_walk_rules() {
    let specs = exclude_pathspecs(&["build/".into(), "*.pyc".into(), "secrets/prod".into()]);
    assert_eq!(
        specs,
        [
            ":(glob,exclude)**/build/**",
            ":(glob,exclude)**/*.pyc",
            ":(glob,exclude)**/*.pyc/**",
            ":(glob,exclude)secrets/prod",
            ":(glob,exclude)secrets/prod/**",
        ]
    );
}

#[test]
fn credential_bearing_git_files_are_recognised_at_any_depth() {
    assert!(is_sensitive_git_internal(&[".git", "config"]));
    assert!(is_sensitive_git_internal(&[
        ".git",
        "modules",
        "sub",
        "FETCH_HEAD"
    ]));
    assert!(is_sensitive_git_internal(&[".git", "logs", "HEAD"]));
    assert!(!is_sensitive_git_internal(&[".git", "HEAD"]));
    assert!(!is_sensitive_git_internal(&[".git"]));
    assert!(!is_sensitive_git_internal(&["src", "config"]));
}

#[test]
fn the_only_repository_below_is_archived_instead_of_its_parent() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("group/repo/.git")).unwrap();
    std::fs::create_dir_all(d.path().join("node_modules/dep/.git")).unwrap();
    assert_eq!(
        resolve_repository_root(d.path()),
        d.path().join("group/repo")
    );
    std::fs::create_dir_all(d.path().join("other/.git")).unwrap();
    assert_eq!(resolve_repository_root(d.path()), d.path());
    assert_eq!(
        resolve_repository_root(&d.path().join("other")),
        d.path().join("other")
    );
}

fn members(archive: &Path) -> BTreeMap<String, Vec<u8>> {
    let file = std::fs::File::open(archive).unwrap();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut out = BTreeMap::new();
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let mut body = Vec::new();
        entry.read_to_end(&mut body).unwrap();
        out.insert(name, body);
    }
    out
}

#[test]
fn tarball_holds_files_and_empty_dirs_without_excluded_or_linked_paths() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("proj");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("empty")).unwrap();
    std::fs::create_dir_all(root.join("node_modules/x")).unwrap();
    std::fs::create_dir_all(root.join(".git/logs")).unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();
    std::fs::write(root.join("node_modules/x/i.js"), "x").unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main").unwrap();
    std::fs::write(root.join(".git/config"), "[remote] url=https://t:secret@h").unwrap();
    std::fs::write(root.join(".git/logs/HEAD"), "log").unwrap();
    std::fs::write(d.path().join("outside.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(d.path().join("outside.txt"), root.join("link.txt")).unwrap();
    let out = d.path().join("a.tar.gz");
    write_tar_gz(&root, &out, &["node_modules/".into()]).unwrap();
    let m = members(&out);
    let names: Vec<&str> = m.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "proj",
            "proj/.git",
            "proj/.git/HEAD",
            "proj/archive_manifest.json",
            "proj/empty",
            "proj/src",
            "proj/src/main.rs",
        ]
    );
    assert_eq!(m["proj/src/main.rs"], b"fn main() {}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&m["proj/archive_manifest.json"]).unwrap();
    assert_eq!(
        manifest,
        serde_json::json!({"excludes": ["node_modules/"], "file_count": 2, "format": "tar.gz",
            "source": "proj", "total_bytes": 32})
    );
}

#[test]
fn a_users_manifest_file_wins_over_ours() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("p");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join(MANIFEST_NAME), "mine").unwrap();
    let out = d.path().join("a.tar.gz");
    write_tar_gz(&root, &out, &[]).unwrap();
    assert_eq!(members(&out)["p/archive_manifest.json"], b"mine");
}

#[test]
fn exact_size_reader_pads_and_cuts() {
    let mut short = ExactSize {
        inner: &b"ab"[..],
        remaining: 4,
    };
    let mut buf = Vec::new();
    short.read_to_end(&mut buf).unwrap();
    assert_eq!(buf, b"ab\0\0");
    let mut long = ExactSize {
        inner: (&b"abcdef"[..]).take(3),
        remaining: 3,
    };
    let mut buf = Vec::new();
    long.read_to_end(&mut buf).unwrap();
    assert_eq!(buf, b"abc");
}

use super::*;
use serde_json::json;

fn base() -> serde_json::Value {
    json!({"schema_version": 1, "name": "my-app", "display_name": "My App",
           "version": "1.0.0", "entrypoint": "dist/index.js"})
}

fn backend() -> serde_json::Value {
    json!({"schema_version": 1,
           "artifacts": {"linux-amd64": {"path": "b.tar.gz", "sha256": "a".repeat(64)}},
           "argv": ["{artifact_dir}/run", "--port", "{port}"]})
}

fn parse(v: serde_json::Value) -> Result<CanvasExtensionManifest, ManifestError> {
    CanvasExtensionManifest::parse(&v.to_string())
}

fn with(mut v: serde_json::Value, key: &str, value: serde_json::Value) -> serde_json::Value {
    v[key] = value;
    v
}

#[test]
fn a_minimal_manifest_gets_the_defaults() {
    let m = parse(base()).unwrap();
    assert_eq!(m.description, "");
    assert!(m.contributes.pages.is_empty());
    let out = serde_json::to_value(&m).unwrap();
    assert_eq!(out["contributes"], json!({"pages": []}));
    assert!(out.get("backend").is_none() && out.get("icon").is_none());
}

#[test]
fn names_paths_and_versions_are_checked() {
    assert!(parse(with(base(), "schema_version", json!(2))).is_err());
    assert!(parse(with(base(), "name", json!("My_App"))).is_err());
    assert!(parse(with(base(), "entrypoint", json!(""))).is_err());
    assert!(parse(with(base(), "entrypoint", json!("/etc/passwd"))).is_err());
    assert!(parse(with(base(), "entrypoint", json!("a/../../x.js"))).is_err());
    assert!(parse(with(base(), "entrypoint", json!("a/..x/y.js"))).is_ok());
    let pages = |p: serde_json::Value| with(base(), "contributes", json!({"pages": p}));
    assert!(parse(pages(json!([{"id": "a", "title": "A", "path": "/a/b-c"}]))).is_ok());
    assert!(parse(pages(json!([{"id": "a", "title": "A", "path": "a"}]))).is_err());
    assert!(parse(pages(json!([{"id": "a", "title": "A", "path": "/A"}]))).is_err());
    assert!(parse(pages(json!([{"id": "A", "title": "A", "path": "/a"}]))).is_err());
    let dup =
        json!([{"id": "a", "title": "A", "path": "/a"}, {"id": "a", "title": "B", "path": "/b"}]);
    assert!(parse(pages(dup)).is_err());
    let dup =
        json!([{"id": "a", "title": "A", "path": "/a"}, {"id": "b", "title": "B", "path": "/a"}]);
    assert!(parse(pages(dup)).is_err());
    // missing required fields
    let mut v = base();
    v.as_object_mut().unwrap().remove("display_name");
    assert!(parse(v).is_err());
}

#[test]
fn a_non_svg_icon_is_dropped_not_refused() {
    assert_eq!(
        parse(with(base(), "icon", json!("i.png"))).unwrap().icon,
        None
    );
    assert_eq!(parse(with(base(), "icon", json!(3))).unwrap().icon, None);
    assert_eq!(
        parse(with(base(), "icon", json!("i.svg")))
            .unwrap()
            .icon
            .as_deref(),
        Some("i.svg")
    );
}

#[test]
fn backend_rules() {
    let ok = parse(with(base(), "backend", backend())).unwrap();
    let b = ok.backend.unwrap();
    assert_eq!(b.health.path, "/health");
    let bad = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut b = backend();
        f(&mut b);
        parse(with(base(), "backend", b)).is_err()
    };
    assert!(bad(&|b| b["argv"] = json!(["/bin/sh"])));
    assert!(bad(&|b| b["argv"] = json!([])));
    assert!(bad(&|b| b["argv"] = json!(["{artifact_dir}/x", "{home}"])));
    assert!(bad(&|b| b["argv"] = json!(["{artifact_dir}/x", ""])));
    assert!(bad(&|b| b["inherit_environment"] = json!(["HOME"])));
    assert!(bad(&|b| b["inherit_environment"] = json!(["PATH", "PATH"])));
    assert!(bad(&|b| b["artifacts"] = json!({})));
    assert!(bad(
        &|b| b["artifacts"] = json!({"windows": {"path": "b.tar.gz", "sha256": "a".repeat(64)}})
    ));
    assert!(bad(
        &|b| b["artifacts"]["linux-amd64"]["sha256"] = json!("ABC")
    ));
    assert!(bad(
        &|b| b["artifacts"]["linux-amd64"]["path"] = json!("../b.tar.gz")
    ));
    assert!(bad(
        &|b| b["artifacts"]["linux-amd64"]["path"] = json!("b.zip")
    ));
    assert!(bad(
        &|b| b["artifacts"]["linux-amd64"]["strip_components"] = json!(1)
    ));
    assert!(bad(
        &|b| b["artifacts"]["linux-amd64"]["url"] = json!("https://x/b.tar.gz")
    ));
    assert!(bad(&|b| b["health"] = json!({"timeout_seconds": 0})));
    assert!(bad(&|b| b["health"] = json!({"path": "health"})));
    assert!(bad(&|b| b["schema_version"] = json!(2)));
    // a remote artifact: url without path
    let remote = json!({"url": "https://example.com/b.tar.gz", "sha256": "b".repeat(64), "strip_components": 1});
    let mut b = backend();
    b["artifacts"]["linux-arm64"] = remote;
    assert!(parse(with(base(), "backend", b)).is_ok());
    let mut b = backend();
    b["artifacts"]["linux-arm64"] =
        json!({"url": "http://example.com/b.tar.gz", "sha256": "b".repeat(64)});
    assert!(parse(with(base(), "backend", b)).is_err());
}

#[test]
fn placeholders_are_found_like_the_reference_regex() {
    assert_eq!(
        placeholders("{artifact_dir}/x{port}"),
        vec!["{artifact_dir}", "{port}"]
    );
    assert_eq!(placeholders("{}{a{b}"), vec!["{b}"]);
    assert!(placeholders("plain").is_empty());
}

#[test]
fn canonical_json_leaves_out_nulls_in_field_order() {
    let m = parse(with(base(), "backend", backend())).unwrap();
    let text = m.canonical_json();
    assert!(text.starts_with(r#"{"schema_version":1,"name":"my-app","display_name":"My App""#));
    assert!(!text.contains("null"));
    assert!(
        text.contains(
            r#""health":{"path":"/health","timeout_seconds":30.0,"interval_seconds":0.1}"#
        )
    );
}

#[test]
fn containment_follows_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.js"), "x").unwrap();
    std::fs::write(dir.path().join("ok.js"), "x").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.js"), dir.path().join("link.js"))
        .unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    assert!(resolve_contained_file("entrypoint", "ok.js", dir.path()).is_ok());
    let e = resolve_contained_file("entrypoint", "link.js", dir.path()).unwrap_err();
    assert!(e.to_string().contains("outside"), "{e}");
    assert!(resolve_contained_file("entrypoint", "sub", dir.path()).is_err());
    assert!(resolve_contained_file("entrypoint", "missing.js", dir.path()).is_err());
}

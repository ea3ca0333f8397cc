use super::*;
use std::fs;

fn plugin_dir(root: &Path, name: &str, version: &str) -> PathBuf {
    let d = root.join(format!("src-{name}"));
    fs::create_dir_all(d.join(".plugin")).unwrap();
    fs::write(
        d.join(".plugin/plugin.json"),
        serde_json::json!({"name": name, "version": version, "description": "d"}).to_string(),
    )
    .unwrap();
    d
}

fn settings(root: &Path) -> FetchSettings {
    FetchSettings {
        cache_dir: root.join("cache"),
        env: Default::default(),
    }
}

#[test]
fn install_list_disable_update_uninstall() {
    let tmp = tempfile::tempdir().unwrap();
    let src = plugin_dir(tmp.path(), "city-weather", "1.0.0");
    let m = Installed::new(tmp.path().join("installed"), Kind::Plugin);
    let spec = PluginSource::new(src.to_string_lossy());
    let info = m.install(&spec, false, &settings(tmp.path())).unwrap();
    assert_eq!(
        (info.name.as_str(), info.version.as_str()),
        ("city-weather", "1.0.0")
    );
    assert!(info.enabled && info.resolved_ref.is_none());
    assert!(
        tmp.path()
            .join("installed/city-weather/.plugin/plugin.json")
            .is_file()
    );
    assert!(matches!(
        m.install(&spec, false, &settings(tmp.path())),
        Err(InstallError::Exists(_))
    ));
    assert!(m.set_enabled("city-weather", false).unwrap());
    assert!(!m.set_enabled("nope", false).unwrap());
    assert!(m.enabled_dirs().is_empty());
    // a new version at the source; the disabled state survives the update
    plugin_dir(tmp.path(), "city-weather", "2.0.0");
    let updated = m
        .update("city-weather", &settings(tmp.path()))
        .unwrap()
        .unwrap();
    assert_eq!(updated.version, "2.0.0");
    assert!(!updated.enabled);
    let meta: Value =
        serde_json::from_str(&fs::read_to_string(m.dir().join(METADATA_FILE)).unwrap()).unwrap();
    assert_eq!(meta["extensions"]["city-weather"]["version"], "2.0.0");
    assert!(m.uninstall("city-weather").unwrap());
    assert!(!m.uninstall("city-weather").unwrap());
    assert!(m.list().is_empty());
}

#[test]
fn listing_reconciles_with_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("installed");
    let m = Installed::new(dir.clone(), Kind::Skill);
    fs::create_dir_all(dir.join("hand-copied")).unwrap();
    fs::write(
        dir.join("hand-copied/SKILL.md"),
        "---\nname: hand-copied\ndescription: by hand\n---\nbody",
    )
    .unwrap();
    fs::create_dir_all(dir.join("Bad_Name")).unwrap();
    fs::write(
        dir.join(METADATA_FILE),
        r#"{"extensions": {"gone": {"name": "gone", "source": "x", "installed_at": "t", "install_path": "/nowhere"}}}"#,
    )
    .unwrap();
    let list = m.list();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].name, "hand-copied");
    assert_eq!(list[0].source, "local");
    assert_eq!(list[0].description, "by hand");
    assert!(m.get("gone").is_none());
    let bad = tmp.path().join("bad-src");
    fs::create_dir_all(&bad).unwrap();
    assert!(matches!(
        m.install(
            &PluginSource::new(bad.to_string_lossy()),
            false,
            &settings(tmp.path())
        ),
        Err(InstallError::Unrecognised(_))
    ));
    assert!(!valid_name("Bad_Name") && valid_name("a-1"));
}

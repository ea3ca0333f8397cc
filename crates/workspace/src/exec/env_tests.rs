#![allow(
    clippy::disallowed_methods,
    reason = "tests start programs, stage files and read the environment directly"
)]

use super::*;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn server_env() -> BTreeMap<String, String> {
    map(&[
        ("PATH", "/usr/bin"),
        ("HOME", "/home/u"),
        ("SESSION_API_KEY", "k1"),
        ("OH_SECRET_KEY", "s"),
        ("LMNR_PROJECT_API_KEY", "l"),
        ("OTEL_HEADERS", "h"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "h"),
        ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "h"),
        ("OH_SESSION_API_KEYS_0", "a"),
        ("OH_SESSION_API_KEYS_17", "b"),
        ("OH_SESSION_API_KEYS", "kept: no underscore after KEYS"),
        ("OH_OTHER", "kept"),
    ])
}

#[test]
fn credentials_are_withheld_and_the_rest_is_kept() {
    let env = EnvPolicy::new().sanitize(server_env());
    assert_eq!(
        env.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "AI_AGENT",
            "HOME",
            "OH_OTHER",
            "OH_SESSION_API_KEYS",
            "PATH"
        ]
    );
    assert_eq!(env["AI_AGENT"], "openhands");
}

#[test]
fn ai_agent_is_defaulted_only_when_unset_or_blank() {
    let p = EnvPolicy::new();
    assert_eq!(
        p.sanitize(map(&[("AI_AGENT", "  ")]))["AI_AGENT"],
        "openhands"
    );
    assert_eq!(
        p.sanitize(map(&[("AI_AGENT", "other")]))["AI_AGENT"],
        "other"
    );
}

#[test]
fn ld_library_path_is_restored_from_the_original() {
    let p = EnvPolicy::new();
    let env = p.sanitize(map(&[
        ("LD_LIBRARY_PATH", "/bundle/lib"),
        ("LD_LIBRARY_PATH_ORIG", "/usr/lib"),
    ]));
    assert_eq!(env["LD_LIBRARY_PATH"], "/usr/lib");
    // As in the reference, the original stays.
    assert_eq!(env["LD_LIBRARY_PATH_ORIG"], "/usr/lib");
    let env = p.sanitize(map(&[
        ("LD_LIBRARY_PATH", "/bundle/lib"),
        ("LD_LIBRARY_PATH_ORIG", ""),
    ]));
    assert!(!env.contains_key("LD_LIBRARY_PATH"));
    let env = p.sanitize(map(&[("LD_LIBRARY_PATH", "/x")]));
    assert_eq!(env["LD_LIBRARY_PATH"], "/x");
}

#[test]
fn extra_variables_are_validated_and_cannot_reinject_credentials() {
    let p = EnvPolicy::new();
    let env = p
        .child_env_from_with(
            server_env(),
            [
                ("FOO", "1"),
                ("_under_score9", "2"),
                ("OH_SECRET_KEY", "again"),
                ("OH_SESSION_API_KEYS_3", "again"),
                ("AI_AGENT", ""),
            ],
        )
        .unwrap();
    assert_eq!(env.get("FOO"), Some("1"));
    assert_eq!(env.get("_under_score9"), Some("2"));
    assert_eq!(env.get("OH_SECRET_KEY"), None);
    assert_eq!(env.get("OH_SESSION_API_KEYS_3"), None);
    assert_eq!(env.get("AI_AGENT"), Some("openhands"));
    for bad in ["", "1ABC", "A-B", "A B", "Ä", "A=B"] {
        let e = p
            .child_env_from_with(server_env(), [(bad, "x")])
            .unwrap_err();
        assert_eq!(e, EnvError::InvalidName(bad.to_string()));
        assert!(e.to_string().contains("invalid environment variable name"));
    }
}

#[test]
fn callers_can_withhold_more_names_and_prefixes() {
    let p = EnvPolicy::new()
        .strip_name("MY_TOKEN")
        .strip_prefix("CLOUD_");
    let env = p.child_env_from(map(&[
        ("MY_TOKEN", "t"),
        ("CLOUD_KEY", "c"),
        ("CLOUDY", "kept"),
        ("OH_SECRET_KEY", "s"),
    ]));
    assert_eq!(
        env.vars().keys().map(String::as_str).collect::<Vec<_>>(),
        ["AI_AGENT", "CLOUDY"]
    );
    assert!(p.strips("CLOUD_X") && p.strips("MY_TOKEN") && p.strips("OH_SECRET_KEY"));
    assert!(!EnvPolicy::new().strips("MY_TOKEN"));
}

#[test]
fn a_child_env_refuses_withheld_and_invalid_names() {
    let mut env = EnvPolicy::new().child_env_from(map(&[("PATH", "/bin")]));
    assert_eq!(
        env.set("OH_SECRET_KEY", "x"),
        Err(EnvError::Withheld("OH_SECRET_KEY".into()))
    );
    assert!(matches!(
        env.set("BAD-NAME", "x"),
        Err(EnvError::InvalidName(_))
    ));
    env.set("TERM", "xterm").unwrap();
    env.set_default("TERM", "dumb").unwrap();
    env.set_default("PAGER", "cat").unwrap();
    assert_eq!(env.get("TERM"), Some("xterm"));
    assert_eq!(env.get("PAGER"), Some("cat"));
    env.remove("AI_AGENT");
    assert_eq!(env.get("AI_AGENT"), Some("openhands"));
    env.set("LD_LIBRARY_PATH_ORIG", "/orig").unwrap();
    assert_eq!(env.get("LD_LIBRARY_PATH"), Some("/orig"));
}

#[test]
fn debug_output_shows_names_but_no_values() {
    let env = EnvPolicy::new().child_env_from(map(&[("SECRETISH", "do-not-print")]));
    let text = format!("{env:?}");
    assert!(text.contains("SECRETISH") && !text.contains("do-not-print"));
}

#[test]
fn applying_replaces_the_inherited_environment() {
    let env = EnvPolicy::new().child_env_from(map(&[("ONLY", "this")]));
    let mut cmd = std::process::Command::new("/usr/bin/env");
    env.apply(&mut cmd);
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    assert_eq!(lines, ["AI_AGENT=openhands", "ONLY=this"]);
}

#[test]
fn names_are_validated_like_the_reference() {
    for ok in ["A", "_", "a1", "_9", "PATH"] {
        assert!(is_valid_name(ok), "{ok}");
    }
    for bad in ["", "9", "a-b", "a.b", "é"] {
        assert!(!is_valid_name(bad), "{bad}");
    }
}

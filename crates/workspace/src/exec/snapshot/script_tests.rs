#![allow(
    clippy::disallowed_methods,
    reason = "tests start programs, stage files and read the environment directly"
)]

use super::*;

fn base() -> BTreeMap<String, String> {
    [
        ("PATH", "/usr/bin"),
        ("HOME", "/h"),
        ("GONE", "x"),
        ("PROTECTED", "mine"),
        ("PWD", "/somewhere"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn dump() -> Dump {
    let exported = b"PATH=/opt/bin:/usr/bin\0HOME=/h\0NEW=it's new\0PROTECTED=rc\0PWD=/elsewhere\0SHLVL=2\0RO\0OH_SECRET_KEY=leak\0";
    let variables = b"NVM_DIR\0declare -- NVM_DIR=\"/h/.nvm\"\0arr\0declare -a arr=([0]=\"a\" [1]=\"b\")\0BASH_REMATCH\0declare -a BASH_REMATCH=()\0";
    let functions =
        b"greet\0-f\0greet () \n{ \n    echo \"hello $1\"\n}\0shared\0-fx\0shared () \n{ \n    :\n}\0";
    let aliases = b"ll\0ls -l\0q\0echo 'quoted'\0";
    let options = "shopt -s expand_aliases\nshopt -u login_shell\nset -o emacs\nset +o vi\nset +o history\nset -o braceexpand\numask 0027\ngarbage line\n";
    Dump::parse(exported, variables, functions, aliases, options.to_string())
}

#[test]
fn the_dump_is_parsed_into_records() {
    let d = dump();
    assert_eq!(d.exported.get("NEW"), Some(&Some("it's new".to_string())));
    assert_eq!(d.exported.get("RO"), Some(&None));
    assert_eq!(d.variables.len(), 3);
    assert_eq!(d.variables[1].0, "arr");
    assert_eq!(d.functions.len(), 2);
    assert!(!d.functions[0].exported && d.functions[1].exported);
    assert!(d.functions[0].definition.contains("hello $1"));
    assert_eq!(
        d.aliases,
        vec![
            ("ll".to_string(), "ls -l".to_string()),
            ("q".to_string(), "echo 'quoted'".to_string())
        ]
    );
}

#[test]
fn compose_restores_what_the_rc_files_changed_and_nothing_else() {
    let s = compose(&dump(), &base(), |n| {
        n == "PROTECTED" || n == "OH_SECRET_KEY"
    });
    // Changed and new exported variables; unchanged ones are not repeated.
    assert!(
        s.contains("builtin export PATH='/opt/bin:/usr/bin'\n"),
        "{s}"
    );
    assert!(s.contains("builtin export NEW='it'\\''s new'\n"), "{s}");
    assert!(!s.contains("export HOME"), "{s}");
    // Removed by the rc files.
    assert!(s.contains("builtin unset -v GONE\n"), "{s}");
    // Skipped: protected, withheld, bash's own, read-only.
    for absent in [
        "PROTECTED",
        "OH_SECRET_KEY",
        "PWD",
        "SHLVL",
        "RO",
        "BASH_REMATCH",
    ] {
        assert!(!s.contains(absent), "{absent} in:\n{s}");
    }
    // Shell variables, functions, exported functions, aliases.
    assert!(s.contains("\ndeclare -- NVM_DIR=\"/h/.nvm\"\n"));
    assert!(s.contains("\ndeclare -a arr=([0]=\"a\" [1]=\"b\")\n"));
    assert!(s.contains("greet () \n{ \n    echo \"hello $1\"\n}\n"));
    assert!(s.contains("builtin export -f -- 'shared'\n"));
    assert!(s.contains("builtin alias -- 'll=ls -l'\n"));
    assert!(s.contains("builtin alias -- 'q=echo '\\''quoted'\\'''\n"));
    // Options: restorable ones only.
    assert!(s.contains("builtin shopt -s expand_aliases\n"));
    assert!(s.contains("builtin set -o braceexpand\n"));
    assert!(s.contains("builtin umask 0027\n"));
    for absent in ["login_shell", "emacs", " vi", "history", "garbage"] {
        assert!(!s.contains(absent), "{absent} in:\n{s}");
    }
}

#[test]
fn a_composed_snapshot_runs_in_bash() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snap.sh");
    std::fs::write(&path, compose(&dump(), &base(), |_| false)).unwrap();
    let out = std::process::Command::new("bash")
        .arg("--norc")
        .arg("--noprofile")
        .arg("-c")
        .arg(format!(
            ". {}\necho \"$NEW|$NVM_DIR|${{arr[1]}}|$(umask)|${{GONE-unset}}\"\ngreet you\nll_out=$(type -t ll)\necho \"$ll_out\"\nq",
            shell_quote(&path.to_string_lossy())
        ))
        .env("GONE", "x")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text,
        "it's new|/h/.nvm|b|0027|unset\nhello you\nalias\nquoted\n",
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn quoting_survives_any_text() {
    for s in [
        "",
        "plain",
        "it's",
        "a'b'c",
        "$HOME `x` \\ \"q\"",
        "multi\nline",
    ] {
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("printf %s {}", shell_quote(s)))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), s);
    }
}

#[test]
fn the_capture_script_quotes_its_directory() {
    let s = capture_script(Path::new("/tmp/it's here"));
    assert!(s.contains("__oh_dir='/tmp/it'\\''s here'\n"));
    assert!(s.ends_with("builtin exit 0\n"));
}

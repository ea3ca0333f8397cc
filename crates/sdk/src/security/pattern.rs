//! `PatternSecurityAnalyzer`: known threat signatures.
//!
//! Signatures on the executable corpus (destructive commands, dynamic code,
//! download-and-run), injection signatures on every field, plus the parsed
//! shell structure for what a word-boundary pattern cannot see (quoted,
//! escaped, path-qualified or nested `rm -rf`), plus the built-in command
//! signatures of [`super::signatures`] (always on). Patterns can be replaced in
//! the analyzer's JSON (`high_patterns`, `medium_patterns`,
//! `injection_high_patterns`, `injection_medium_patterns`: lists of
//! `[regex, description, detector id]`).

use std::sync::LazyLock;

use openhands_wire::event::{ActionEvent, SecurityRisk};
use regex::{Regex, RegexBuilder};
use serde_json::Value;

use super::extract::{exec_segments, normalize, text_segments};
use super::{AnalyzerConfigError, SecurityAnalysis};
use super::{shell, signatures};

/// One compiled signature.
#[derive(Debug, Clone)]
pub struct Signature {
    regex: Regex,
    /// Stable detector id (`exec.destruct.rm_rf`, …).
    pub id: String,
    source: (String, String),
}

/// The four signature lists.
#[derive(Debug, Clone)]
pub struct PatternAnalyzer {
    high: Vec<Signature>,
    medium: Vec<Signature>,
    injection_high: Vec<Signature>,
    injection_medium: Vec<Signature>,
}

const HIGH: &[(&str, &str, &str)] = &[
    (
        r"\brm\s+(?:-[a-zA-Z]*[rR][a-zA-Z]*f[a-zA-Z]*|-[a-zA-Z]*f[a-zA-Z]*[rR][a-zA-Z]*|-[rR]\s+-f|-f\s+-[rR]|--recursive\s+--force|--force\s+--recursive)\b",
        "Recursive force-delete",
        "exec.destruct.rm_rf",
    ),
    (
        r"\bsudo\s+rm\b",
        "Privileged file deletion",
        "exec.destruct.sudo_rm",
    ),
    (r"\bmkfs\.\w+", "Filesystem format", "exec.destruct.mkfs"),
    (
        r"\bdd\b.{0,100}of=/dev/",
        "Raw disk write",
        "exec.destruct.dd_raw_disk",
    ),
    (
        r"\beval\s*\(",
        "Dynamic code evaluation",
        "exec.code.eval_call",
    ),
    (
        r"\bexec\s*\(",
        "Dynamic code execution",
        "exec.code.exec_call",
    ),
    (
        r"\bos\.system\s*\(",
        "OS command execution",
        "exec.code.os_system",
    ),
    (
        r"\bsubprocess\.(?:call|run|Popen|check_output|check_call)\s*\(",
        "Subprocess invocation",
        "exec.code.subprocess",
    ),
    (
        r"\bcurl\b[^|]{0,200}\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b",
        "Download and run",
        "exec.net.curl_pipe_exec",
    ),
    (
        r"\bwget\b[^|]{0,200}\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b",
        "Download and run",
        "exec.net.wget_pipe_exec",
    ),
];

const MEDIUM: &[(&str, &str, &str)] = &[
    (
        r"\bcurl\b.{0,100}https?://",
        "HTTP request via curl",
        "exec.net.curl",
    ),
    (
        r"\bwget\b.{0,100}https?://",
        "Download via wget",
        "exec.net.wget",
    ),
];

const INJECTION_HIGH: &[(&str, &str, &str)] = &[(
    r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+)?(?:previous|prior|above)\s+(?:instructions?|prompts?|rules?|directives?)\b",
    "Instruction override attempt",
    "inject.override",
)];

const INJECTION_MEDIUM: &[(&str, &str, &str)] = &[
    (
        r"\byou\s+are\s+now\s+(?:in\s+)?(?:\w+\s+)?mode\b",
        "Mode switching attempt",
        "inject.mode_switch",
    ),
    (
        r"\bpretend\s+(?:you\s+are|to\s+be)\s+(?:a\s+)?different\b",
        "Identity manipulation",
        "inject.identity",
    ),
];

fn compile(list: &[(&str, &str, &str)]) -> Vec<Signature> {
    list.iter()
        .filter_map(|(p, d, id)| sig(p, d, id).ok())
        .collect()
}

fn sig(pattern: &str, desc: &str, id: &str) -> Result<Signature, regex::Error> {
    Ok(Signature {
        regex: RegexBuilder::new(pattern)
            .case_insensitive(true)
            .size_limit(1 << 20)
            .build()?,
        id: id.to_string(),
        source: (pattern.to_string(), desc.to_string()),
    })
}

static DEFAULT: LazyLock<PatternAnalyzer> = LazyLock::new(|| PatternAnalyzer {
    high: compile(HIGH),
    medium: compile(MEDIUM),
    injection_high: compile(INJECTION_HIGH),
    injection_medium: compile(INJECTION_MEDIUM),
});

impl PatternAnalyzer {
    /// From the analyzer's JSON; absent lists keep the defaults.
    pub fn from_json(value: &Value) -> Result<Self, AnalyzerConfigError> {
        let mut out = DEFAULT.clone();
        for (field, slot) in [
            ("high_patterns", &mut out.high),
            ("medium_patterns", &mut out.medium),
            ("injection_high_patterns", &mut out.injection_high),
            ("injection_medium_patterns", &mut out.injection_medium),
        ] {
            let Some(list) = value.get(field) else {
                continue;
            };
            let items = list.as_array().ok_or_else(|| {
                AnalyzerConfigError::field(field, "must be a list of [regex, description, id]")
            })?;
            let mut sigs = Vec::with_capacity(items.len());
            for item in items {
                let parts: Option<Vec<&str>> = item
                    .as_array()
                    .filter(|a| a.len() == 3)
                    .and_then(|a| a.iter().map(Value::as_str).collect());
                let Some(p) = parts else {
                    return Err(AnalyzerConfigError::field(
                        field,
                        "each entry must be [regex, description, id]",
                    ));
                };
                sigs.push(
                    sig(p[0], p[1], p[2]).map_err(|e| {
                        AnalyzerConfigError::field(field, &format!("bad regex: {e}"))
                    })?,
                );
            }
            *slot = sigs;
        }
        Ok(out)
    }

    /// The configured lists as JSON (for round trips).
    pub fn to_json_fields(&self) -> serde_json::Map<String, Value> {
        let dump = |s: &[Signature]| {
            Value::Array(
                s.iter()
                    .map(|x| serde_json::json!([x.source.0, x.source.1, x.id]))
                    .collect(),
            )
        };
        let mut m = serde_json::Map::new();
        m.insert("high_patterns".into(), dump(&self.high));
        m.insert("medium_patterns".into(), dump(&self.medium));
        m.insert("injection_high_patterns".into(), dump(&self.injection_high));
        m.insert(
            "injection_medium_patterns".into(),
            dump(&self.injection_medium),
        );
        m
    }

    /// Classifies one action.
    pub fn analyze(&self, action: &ActionEvent) -> SecurityAnalysis {
        let exec = exec_segments(action);
        let exec_text = normalize(&exec.join(" "));
        let mut all = exec.clone();
        all.extend(text_segments(action));
        let all_text = normalize(&all.join(" "));
        let hit = |list: &[Signature], text: &str| {
            list.iter()
                .find(|s| s.regex.is_match(text))
                .map(|s| s.id.clone())
        };
        if let Some(id) =
            hit(&self.high, &exec_text).or_else(|| hit(&self.injection_high, &all_text))
        {
            return SecurityAnalysis::with_detector(SecurityRisk::High, &id);
        }
        let mut uncertain = false;
        for seg in &exec {
            match shell_rm_rf(seg) {
                Shape::Match => {
                    return SecurityAnalysis::with_detector(
                        SecurityRisk::High,
                        "exec.destruct.rm_rf",
                    );
                }
                Shape::Uncertain => uncertain = true,
                Shape::None => {}
            }
        }
        if let Some(id) = signatures::first_match(&signatures::HIGH, &exec_text) {
            return SecurityAnalysis::with_detector(SecurityRisk::High, id);
        }
        if let Some(id) =
            hit(&self.medium, &exec_text).or_else(|| hit(&self.injection_medium, &all_text))
        {
            return SecurityAnalysis::with_detector(SecurityRisk::Medium, &id);
        }
        if let Some(id) = signatures::first_match(&signatures::MEDIUM, &exec_text) {
            return SecurityAnalysis::with_detector(SecurityRisk::Medium, id);
        }
        if uncertain {
            return SecurityAnalysis::with_detector(
                SecurityRisk::Unknown,
                "exec.destruct.unresolved",
            );
        }
        SecurityAnalysis::plain(SecurityRisk::Low)
    }
}

enum Shape {
    Match,
    Uncertain,
    None,
}

/// `rm` with recursive and force flags anywhere in the parsed segment
/// (any quoting, path, wrapper or nesting); a computed command name with
/// that flag shape is uncertain.
fn shell_rm_rf(segment: &str) -> Shape {
    let Some(script) = shell::parse(segment) else {
        return Shape::None;
    };
    shape_of(&script, 0)
}

fn shape_of(script: &shell::Script, depth: usize) -> Shape {
    let mut uncertain = false;
    for cmd in &script.commands {
        for sub in cmd.args.iter().chain(cmd.name.iter()).flat_map(|w| &w.subs) {
            match shape_of(sub, depth + 1) {
                Shape::Match => return Shape::Match,
                Shape::Uncertain => uncertain = true,
                Shape::None => {}
            }
        }
        let Some(name) = &cmd.name else { continue };
        let rf = destructive_flags(&cmd.args);
        match name.text.as_deref() {
            Some(n) if n.contains(char::is_whitespace) && depth < 4 => {
                // `rm${IFS}-rf${IFS}/`: the name expands to several words.
                let mut line = n.to_string();
                for a in &cmd.args {
                    line.push(' ');
                    line.push_str(a.best());
                }
                if let Some(inner) = shell::parse(&line) {
                    match shape_of(&inner, depth + 1) {
                        Shape::Match => return Shape::Match,
                        Shape::Uncertain => uncertain = true,
                        Shape::None => {}
                    }
                }
            }
            Some("eval") if depth < 4 => {
                // `eval` runs its joined arguments as shell.
                let parts: Option<Vec<&str>> = cmd.args.iter().map(|a| a.text.as_deref()).collect();
                match parts.and_then(|p| shell::parse(&p.join(" "))) {
                    Some(inner) => match shape_of(&inner, depth + 1) {
                        Shape::Match => return Shape::Match,
                        Shape::Uncertain => uncertain = true,
                        Shape::None => {}
                    },
                    None => uncertain = true,
                }
            }
            Some(n) => {
                let base = n.rsplit('/').next().unwrap_or(n);
                if base == "rm" && rf {
                    return Shape::Match;
                }
                if matches!(
                    base,
                    "sudo" | "env" | "nohup" | "command" | "exec" | "xargs" | "timeout" | "nice"
                ) && cmd
                    .args
                    .iter()
                    .any(|a| a.best().rsplit('/').next() == Some("rm"))
                    && rf
                {
                    return Shape::Match;
                }
                if SHELL_NAMES.contains(&base) && depth < 4 {
                    let mut it = cmd.args.iter();
                    while let Some(a) = it.next() {
                        if a.best().starts_with('-') && a.best().contains('c') {
                            if let Some(src) = it.next().and_then(|w| w.text.as_deref())
                                && let Some(inner) = shell::parse(src)
                            {
                                match shape_of(&inner, depth + 1) {
                                    Shape::Match => return Shape::Match,
                                    Shape::Uncertain => uncertain = true,
                                    Shape::None => {}
                                }
                            }
                            break;
                        }
                    }
                }
            }
            None => {
                if rf {
                    uncertain = true;
                }
            }
        }
    }
    if uncertain {
        Shape::Uncertain
    } else {
        Shape::None
    }
}

const SHELL_NAMES: &[&str] = &["sh", "bash", "dash", "zsh", "ksh"];

fn destructive_flags(args: &[shell::Word]) -> bool {
    let mut r = false;
    let mut f = false;
    for a in args {
        let t = a.best();
        if t == "--recursive" {
            r = true;
        } else if t == "--force" {
            f = true;
        } else if let Some(s) = t.strip_prefix('-')
            && !s.starts_with('-')
        {
            r |= s.contains('r') || s.contains('R');
            f |= s.contains('f');
        }
    }
    r && f
}

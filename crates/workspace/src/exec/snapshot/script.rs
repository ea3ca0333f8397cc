//! The bash side of a snapshot: the start-up file that runs the rc files
//! and dumps what they set up, and the snapshot script composed from that
//! dump.
//!
//! The dump is machine-readable (NUL-separated records) so that names can
//! be filtered here, in one place, whatever the values contain:
//!
//! * `exported` — `NAME=value` for every exported variable, or `NAME`
//!   alone for exported variables that cannot be restored (read-only,
//!   arrays, declared without a value);
//! * `variables` — `NAME`, `declare -p` text: shell (not exported)
//!   variables the rc files created;
//! * `functions` — `NAME`, `-f`/`-fx`, `declare -f` text: every function;
//! * `aliases` — `NAME`, value: every alias;
//! * `options` — `shopt -p`, `set +o`, `umask -p` lines;
//! * `done` — written last: the dump is complete.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Quotes `s` for bash as one word.
pub(crate) fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Variables a snapshot never sets or unsets: what bash itself maintains
/// per shell (position, nesting, counters, read-only information), the
/// prompt settings the terminal installs, and history (the terminal turns
/// it off).
const NEVER_RESTORED: &[&str] = &[
    "_",
    "PWD",
    "OLDPWD",
    "SHLVL",
    "SHELL",
    "LINES",
    "COLUMNS",
    "PS0",
    "PS1",
    "PS2",
    "PROMPT_COMMAND",
    "HISTFILE",
    "HISTCMD",
    "BASH",
    "BASHOPTS",
    "BASHPID",
    "BASH_ALIASES",
    "BASH_ARGC",
    "BASH_ARGV",
    "BASH_ARGV0",
    "BASH_CMDS",
    "BASH_COMMAND",
    "BASH_EXECUTION_STRING",
    "BASH_LINENO",
    "BASH_MONOSECONDS",
    "BASH_REMATCH",
    "BASH_SOURCE",
    "BASH_SUBSHELL",
    "BASH_TRAPSIG",
    "BASH_VERSINFO",
    "BASH_VERSION",
    "COMP_CWORD",
    "COMP_KEY",
    "COMP_LINE",
    "COMP_POINT",
    "COMP_TYPE",
    "COMP_WORDS",
    "DIRSTACK",
    "EPOCHREALTIME",
    "EPOCHSECONDS",
    "EUID",
    "FUNCNAME",
    "GROUPS",
    "LINENO",
    "OPTIND",
    "PIPESTATUS",
    "PPID",
    "RANDOM",
    "SECONDS",
    "SHELLOPTS",
    "SRANDOM",
    "UID",
];

/// `set -o` options a snapshot does not restore: line editing (the
/// terminal runs bash with `--noediting`) and history (turned off).
const OPTIONS_NOT_RESTORED: &[&str] = &["emacs", "vi", "history"];
/// `shopt` options that cannot be set.
const SHOPTS_NOT_RESTORED: &[&str] = &["login_shell", "restricted_shell"];

/// The start-up file of the capture shell: records the variables that
/// exist before the rc files run, sources them as a session would, dumps
/// the result into `out`, and exits.
pub(crate) fn capture_script(out: &Path) -> String {
    let dir = shell_quote(&out.to_string_lossy());
    format!(
        r#"# OpenHands shell-snapshot capture (generated)
__oh_dir={dir}
declare -A __oh_known=()
__oh_dump() {{
  builtin shopt -p >|"$__oh_dir/options" 2>/dev/null
  builtin set +o >>"$__oh_dir/options"
  builtin umask -p >>"$__oh_dir/options"
  builtin local -
  builtin set +e +u +f +x +v
  builtin local IFS=$' \t\n' __oh_n __oh_a __oh_f __oh_x
  for __oh_n in $(builtin compgen -e); do
    __oh_a=${{!__oh_n@a}}
    if [[ $__oh_a == *[raA]* ]] || ! [[ -v $__oh_n ]]; then
      builtin printf '%s\0' "$__oh_n"
    else
      builtin printf '%s=%s\0' "$__oh_n" "${{!__oh_n}}"
    fi
  done >|"$__oh_dir/exported"
  for __oh_n in $(builtin compgen -v); do
    [[ -n ${{__oh_known[$__oh_n]+set}} || $__oh_n == __oh_* ]] && continue
    __oh_a=${{!__oh_n@a}}
    [[ $__oh_a == *[rx]* ]] && continue
    builtin printf '%s\0' "$__oh_n"
    builtin declare -p -- "$__oh_n"
    builtin printf '\0'
  done >|"$__oh_dir/variables"
  while builtin read -r __oh_x __oh_f __oh_n; do
    [[ $__oh_n == __oh_* ]] && continue
    builtin printf '%s\0%s\0' "$__oh_n" "$__oh_f"
    builtin declare -f -- "$__oh_n"
    builtin printf '\0'
  done < <(builtin declare -F) >|"$__oh_dir/functions"
  for __oh_n in "${{!BASH_ALIASES[@]}}"; do
    builtin printf '%s\0%s\0' "$__oh_n" "${{BASH_ALIASES[$__oh_n]}}"
  done >|"$__oh_dir/aliases"
  builtin printf ok >|"$__oh_dir/done"
}}
for __oh_n in $(builtin compgen -v); do __oh_known[$__oh_n]=1; done
if [ -f {system_rc} ]; then . {system_rc}; fi
if [ -f "$HOME/.bashrc" ]; then . "$HOME/.bashrc"; fi
__oh_dump
builtin exit 0
"#,
        system_rc = super::stamps::SYSTEM_RC,
    )
}

/// A function of the dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Function {
    /// Its name.
    pub name: String,
    /// Whether it is exported (`export -f`).
    pub exported: bool,
    /// `declare -f` text.
    pub definition: String,
}

/// What the capture shell dumped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Dump {
    /// Exported variables: name → value (`None`: cannot be restored).
    pub exported: BTreeMap<String, Option<String>>,
    /// Shell variables the rc files created: name, `declare -p` text.
    pub variables: Vec<(String, String)>,
    /// Every function.
    pub functions: Vec<Function>,
    /// Aliases: name, value.
    pub aliases: Vec<(String, String)>,
    /// `shopt -p`, `set +o` and `umask -p` lines.
    pub options: String,
}

/// Splits NUL-terminated records.
fn records(bytes: &[u8]) -> impl Iterator<Item = String> + '_ {
    bytes
        .split(|&b| b == 0)
        .map(|r| String::from_utf8_lossy(r).into_owned())
}

impl Dump {
    /// Parses the files of a dump (see the module documentation).
    pub(crate) fn parse(
        exported: &[u8],
        variables: &[u8],
        functions: &[u8],
        aliases: &[u8],
        options: String,
    ) -> Self {
        let exported = records(exported)
            .filter(|r| !r.is_empty())
            .map(|r| match r.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (r, None),
            })
            .collect();
        let mut vars = Vec::new();
        let mut it = records(without_final_nul(variables));
        while let (Some(name), Some(decl)) = (it.next(), it.next()) {
            vars.push((name, decl));
        }
        let mut alias_list = Vec::new();
        let mut it = records(without_final_nul(aliases));
        while let (Some(name), Some(value)) = (it.next(), it.next()) {
            alias_list.push((name, value));
        }
        alias_list.sort();
        let mut fns = Vec::new();
        let mut it = records(without_final_nul(functions));
        while let (Some(name), Some(flags), Some(definition)) = (it.next(), it.next(), it.next()) {
            fns.push(Function {
                name,
                exported: flags.contains('x'),
                definition,
            });
        }
        Dump {
            exported,
            variables: vars,
            functions: fns,
            aliases: alias_list,
            options,
        }
    }
}

/// The bytes without the final record terminator.
fn without_final_nul(b: &[u8]) -> &[u8] {
    b.strip_suffix(&[0]).unwrap_or(b)
}

/// The snapshot script: applied to a new shell that started with the
/// environment `base`, it recreates what the rc files set up: functions,
/// shell variables they created, exported variables they set, changed or
/// removed, aliases and options. Names for which `skip` is true, and the
/// [`NEVER_RESTORED`] ones, are left alone.
pub(crate) fn compose(
    dump: &Dump,
    base: &BTreeMap<String, String>,
    skip: impl Fn(&str) -> bool,
) -> String {
    let never: BTreeSet<&str> = NEVER_RESTORED.iter().copied().collect();
    let keep = |name: &str| {
        super::super::env::is_valid_name(name)
            && !never.contains(name)
            && !name.starts_with("__oh_")
            && !skip(name)
    };
    let mut s =
        String::from("# OpenHands shell snapshot (generated): what the start-up files set up.\n");
    // Shell variables first, while no user function can shadow `declare`
    // (`builtin declare` would not parse array assignments).
    for (name, decl) in &dump.variables {
        if keep(name) && decl.starts_with("declare ") {
            s.push_str(decl.trim_end_matches('\n'));
            s.push('\n');
        }
    }
    // Functions before aliases: their bodies are stored alias-expanded.
    for f in &dump.functions {
        s.push_str(&f.definition);
        if !f.definition.ends_with('\n') {
            s.push('\n');
        }
    }
    for f in dump.functions.iter().filter(|f| f.exported) {
        s.push_str(&format!("builtin export -f -- {}\n", shell_quote(&f.name)));
    }
    for (name, value) in &dump.exported {
        if let Some(value) = value
            && keep(name)
            && base.get(name) != Some(value)
        {
            s.push_str(&format!("builtin export {name}={}\n", shell_quote(value)));
        }
    }
    for name in base.keys() {
        if keep(name) && !dump.exported.contains_key(name) {
            s.push_str(&format!("builtin unset -v {name}\n"));
        }
    }
    for (name, value) in &dump.aliases {
        s.push_str(&format!(
            "builtin alias -- {}\n",
            shell_quote(&format!("{name}={value}"))
        ));
    }
    for line in dump.options.lines() {
        if restorable_option(line) {
            s.push_str("builtin ");
            s.push_str(line);
            s.push('\n');
        }
    }
    s
}

/// Whether an option line (`shopt -s x`, `set +o x`, `umask 0022`) is
/// restored.
fn restorable_option(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["shopt", "-s" | "-u", name] => !SHOPTS_NOT_RESTORED.contains(name),
        ["set", "-o" | "+o", name] => !OPTIONS_NOT_RESTORED.contains(name),
        ["umask", mask] => mask.chars().all(|c| c.is_ascii_digit()),
        _ => false,
    }
}

#[cfg(test)]
#[path = "script_tests.rs"]
mod tests;

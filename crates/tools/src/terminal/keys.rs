//! Names of special keys the model may send with `is_input` and the bytes a
//! terminal transmits for them.

/// The bytes a terminal sends for the key called `name`, or `None` when
/// `name` is not a key name (it is then typed as text).
///
/// Recognised: `C-<letter>` (either case, e.g. `C-c` → `0x03`), `C-@`,
/// `C-[`, `C-\`, `C-]`, `C-^`, `C-_`, `C-?`, the arrows `UP`, `DOWN`, `LEFT`,
/// `RIGHT`, `HOME`, `END`, `PGUP`, `PGDN`, and `TAB`, `ESC`, `BS`
/// (backspace, sent as DEL), `ENTER`. Key names are matched after trimming
/// surrounding whitespace; the navigation names are case-insensitive.
pub fn key_bytes(name: &str) -> Option<Vec<u8>> {
    let name = name.trim();
    if let Some(rest) = name.strip_prefix("C-").or_else(|| name.strip_prefix("c-")) {
        return control_byte(rest).map(|b| vec![b]);
    }
    let bytes: &[u8] = match name.to_ascii_uppercase().as_str() {
        "UP" => b"\x1b[A",
        "DOWN" => b"\x1b[B",
        "RIGHT" => b"\x1b[C",
        "LEFT" => b"\x1b[D",
        "HOME" => b"\x1b[H",
        "END" => b"\x1b[F",
        "PGUP" | "PAGEUP" => b"\x1b[5~",
        "PGDN" | "PAGEDOWN" => b"\x1b[6~",
        "TAB" => b"\t",
        "ESC" | "ESCAPE" => b"\x1b",
        "BS" | "BACKSPACE" => b"\x7f",
        "ENTER" | "RETURN" => b"\r",
        _ => return None,
    };
    Some(bytes.to_vec())
}

/// The control character for `C-<c>`, where `rest` must be exactly one
/// character.
fn control_byte(rest: &str) -> Option<u8> {
    let mut chars = rest.chars();
    let c = chars.next()?;
    if chars.next().is_some() {
        return None;
    }
    match c {
        'a'..='z' | 'A'..='Z' => Some((c.to_ascii_uppercase() as u8) & 0x1f),
        '@' | ' ' => Some(0x00),
        '[' => Some(0x1b),
        '\\' => Some(0x1c),
        ']' => Some(0x1d),
        '^' => Some(0x1e),
        '_' => Some(0x1f),
        '?' => Some(0x7f),
        _ => None,
    }
}

/// The bytes written to the terminal for `is_input` text that is not a key
/// name: the text with line breaks sent as carriage returns (what the Enter
/// key produces), followed by one final Enter.
pub fn text_input_bytes(text: &str) -> Vec<u8> {
    let normalized = text.replace("\r\n", "\n");
    let mut out: Vec<u8> = normalized
        .bytes()
        .map(|b| if b == b'\n' { b'\r' } else { b })
        .collect();
    out.push(b'\r');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_letters_map_to_c0_bytes() {
        assert_eq!(key_bytes("C-c"), Some(vec![0x03]));
        assert_eq!(key_bytes("C-d"), Some(vec![0x04]));
        assert_eq!(key_bytes("C-z"), Some(vec![0x1a]));
        assert_eq!(key_bytes("C-a"), Some(vec![0x01]));
        assert_eq!(key_bytes("C-C"), Some(vec![0x03]));
        assert_eq!(key_bytes("c-l"), Some(vec![0x0c]));
        assert_eq!(key_bytes("C-["), Some(vec![0x1b]));
        assert_eq!(key_bytes("C-\\"), Some(vec![0x1c]));
        assert_eq!(key_bytes(" C-c "), Some(vec![0x03]));
    }

    #[test]
    fn navigation_keys_map_to_escape_sequences() {
        assert_eq!(key_bytes("UP"), Some(b"\x1b[A".to_vec()));
        assert_eq!(key_bytes("DOWN"), Some(b"\x1b[B".to_vec()));
        assert_eq!(key_bytes("RIGHT"), Some(b"\x1b[C".to_vec()));
        assert_eq!(key_bytes("LEFT"), Some(b"\x1b[D".to_vec()));
        assert_eq!(key_bytes("HOME"), Some(b"\x1b[H".to_vec()));
        assert_eq!(key_bytes("END"), Some(b"\x1b[F".to_vec()));
        assert_eq!(key_bytes("PGUP"), Some(b"\x1b[5~".to_vec()));
        assert_eq!(key_bytes("PGDN"), Some(b"\x1b[6~".to_vec()));
        assert_eq!(key_bytes("TAB"), Some(b"\t".to_vec()));
        assert_eq!(key_bytes("ESC"), Some(b"\x1b".to_vec()));
        assert_eq!(key_bytes("BS"), Some(b"\x7f".to_vec()));
        assert_eq!(key_bytes("ENTER"), Some(b"\r".to_vec()));
        assert_eq!(key_bytes("enter"), Some(b"\r".to_vec()));
    }

    #[test]
    fn other_text_is_not_a_key() {
        assert_eq!(key_bytes("C-cc"), None);
        assert_eq!(key_bytes("C-1"), None);
        assert_eq!(key_bytes("C-"), None);
        assert_eq!(key_bytes("ls"), None);
        assert_eq!(key_bytes("up the hill"), None);
        assert_eq!(key_bytes(""), None);
    }

    #[test]
    fn text_input_ends_with_enter_and_uses_cr_for_newlines() {
        assert_eq!(text_input_bytes("hello"), b"hello\r".to_vec());
        assert_eq!(text_input_bytes("a\nb"), b"a\rb\r".to_vec());
        assert_eq!(text_input_bytes("a\r\nb"), b"a\rb\r".to_vec());
    }
}

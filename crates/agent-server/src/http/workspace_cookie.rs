//! The workspace session cookie (`oh_workspace_session_key`): how it is
//! written (Python's cookie quoting, the attributes the reference's
//! Starlette response gives it) and read back from a `Cookie` header.
//! Only the workspace static-site routes honour it; everything else under
//! `/api` wants the session key header.

use axum::http::HeaderMap;

/// The cookie's name.
pub const COOKIE_NAME: &str = "oh_workspace_session_key";
/// Its path scope: the workspace routes live under it.
pub const COOKIE_PATH: &str = "/api/conversations";
/// "Never expire" (browsers clamp to ~400 days).
pub const MAX_AGE_SECONDS: u64 = 60 * 60 * 24 * 365 * 10;

const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

fn legal(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~:".contains(c)
}

/// A value quoted as Python's `http.cookies` does: as is when every
/// character is legal, else in double quotes with `"`/`\` escaped and
/// control or non-ASCII Latin-1 characters as `\ooo`.
pub fn quote(value: &str) -> String {
    if !value.is_empty() && value.chars().all(legal) {
        return value.to_string();
    }
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if legal(c) || " ()/<=>?@[]{}".contains(c) => out.push(c),
            c if (c as u32) < 256 => out.push_str(&format!("\\{:03o}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Undoes [`quote`] (a value without surrounding quotes is returned as is).
pub fn unquote(value: &str) -> String {
    let Some(inner) = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .filter(|_| value.len() >= 2)
    else {
        return value.to_string();
    };
    let chars: Vec<char> = inner.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '\\' && i + 1 < chars.len() {
            let octal = &chars[i + 1..chars.len().min(i + 4)];
            if octal.len() == 3
                && ('0'..='3').contains(&octal[0])
                && octal[1..].iter().all(|c| ('0'..='7').contains(c))
            {
                let code = octal
                    .iter()
                    .fold(0u32, |acc, c| acc * 8 + c.to_digit(8).unwrap_or(0));
                if let Some(ch) = char::from_u32(code) {
                    out.push(ch);
                }
                i += 4;
                continue;
            }
            out.push(chars[i + 1]);
            i += 2;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// The cookie's value in a request's `Cookie` headers, if present.
pub fn read(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|chunk| {
            let (name, value) = chunk.split_once('=')?;
            (name.trim() == COOKIE_NAME).then(|| unquote(value.trim()))
        })
}

/// The `Set-Cookie` value: HttpOnly, SameSite=none, path-scoped; `Secure;
/// Partitioned` in a secure context.
pub fn set_cookie(value: &str, secure: bool, max_age: u64) -> String {
    let mut cookie = format!(
        "{COOKIE_NAME}={}; HttpOnly; Max-Age={max_age}; Path={COOKIE_PATH}; SameSite=none",
        quote(value)
    );
    if secure {
        cookie.push_str("; Secure; Partitioned");
    }
    cookie
}

/// Whether the browser will keep a `Secure` cookie from this request:
/// HTTPS (also as told by `X-Forwarded-Proto`) or a loopback host (also as
/// told by `X-Forwarded-Host`).
pub fn secure_context(headers: &HeaderMap, scheme_is_https: bool) -> bool {
    let first = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(',').next().unwrap_or("").trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let https = match first("x-forwarded-proto") {
        Some(proto) => proto.eq_ignore_ascii_case("https"),
        None => scheme_is_https,
    };
    if https {
        return true;
    }
    let host = first("x-forwarded-host")
        .or_else(|| first("host"))
        .unwrap_or_default();
    let host = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("").to_string()
    } else if host.matches(':').count() == 1 {
        host.split(':').next().unwrap_or("").to_string()
    } else {
        host
    };
    LOOPBACK_HOSTS.contains(&host.to_ascii_lowercase().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn quoting_round_trips_like_python() {
        assert_eq!(quote("abc-123"), "abc-123");
        assert_eq!(quote(""), "\"\"");
        assert_eq!(quote("ab c"), "\"ab c\"");
        assert_eq!(quote("a\"b;"), "\"a\\\"b\\073\"");
        for v in ["", "ab c", "a\"b;\\x", "plain"] {
            assert_eq!(unquote(&quote(v)), v);
        }
    }

    #[test]
    fn cookie_header_and_secure_context() {
        let mut h = HeaderMap::new();
        h.insert(
            "cookie",
            HeaderValue::from_static("a=1; oh_workspace_session_key=\"k y\"; b=2"),
        );
        assert_eq!(read(&h).as_deref(), Some("k y"));
        let mut h = HeaderMap::new();
        h.insert("host", HeaderValue::from_static("127.0.0.1:8000"));
        assert!(secure_context(&h, false));
        h.insert("host", HeaderValue::from_static("example.com:8000"));
        assert!(!secure_context(&h, false));
        h.insert("x-forwarded-proto", HeaderValue::from_static("https, http"));
        assert!(secure_context(&h, false));
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-host", HeaderValue::from_static("[::1]:3000"));
        assert!(secure_context(&h, false));
    }
}

use super::*;
use serde_json::json;

fn parse(v: Value) -> Result<McpConfig, ConfigError> {
    McpConfig::parse(&v, UnknownFields::Refuse)
}

#[test]
fn flat_and_wrapped_maps_give_the_same_servers() {
    let flat = parse(json!({"fetch": {"command": "uvx", "args": ["mcp-server-fetch"]}})).unwrap();
    let wrapped =
        parse(json!({"mcpServers": {"fetch": {"command": "uvx", "args": ["mcp-server-fetch"]}}}))
            .unwrap();
    assert_eq!(flat, wrapped);
    assert_eq!(flat.servers[0].name, "fetch");
    assert_eq!(
        flat.servers[0].transport,
        Transport::Stdio {
            command: "uvx".into(),
            args: vec!["mcp-server-fetch".into()],
            env: BTreeMap::new(),
            cwd: None
        }
    );
    assert!(parse(json!({})).unwrap().is_empty());
    assert!(parse(Value::Null).unwrap().is_empty());
}

#[test]
fn remote_servers_fold_auth_into_headers() {
    let c = parse(json!({
        "a": {"url": "http://127.0.0.1:1/mcp", "auth": {"strategy": "bearer", "value": "tok"}},
        "b": {"url": "https://h/mcp", "type": "shttp", "headers": {"X-A": "1"},
              "auth": {"strategy": "api_key", "value": "k", "header_name": "X-Key"}},
        "c": {"url": "https://h/mcp", "transport": "streamable-http",
              "auth": {"strategy": "basic", "username": "u", "password": "p"}},
        "d": {"url": "https://h/mcp", "auth": "plain-token", "enabled": false}
    }))
    .unwrap();
    let headers = |i: usize| match &c.servers[i].transport {
        Transport::Http { headers, .. } => headers.clone(),
        other => panic!("not http: {other:?}"),
    };
    assert_eq!(headers(0)["Authorization"], "Bearer tok");
    assert_eq!(headers(1)["X-Key"], "k");
    assert_eq!(headers(1)["X-A"], "1");
    assert_eq!(headers(2)["Authorization"], "Basic dTpw");
    assert_eq!(headers(3)["Authorization"], "Bearer plain-token");
    assert_eq!(c.enabled().count(), 3);
}

#[test]
fn malformed_servers_name_the_server_and_field() {
    let cases = [
        (json!({"s": {"args": []}}), "command"),
        (
            json!({"s": {"transport": "stdio", "url": "http://x"}}),
            "command",
        ),
        (json!({"s": {"transport": "http"}}), "url"),
        (
            json!({"s": {"transport": "carrier-pigeon", "command": "x"}}),
            "transport",
        ),
        (json!({"s": {"type": "pigeon", "command": "x"}}), "type"),
        (json!({"s": {"command": 5}}), "command"),
        (json!({"s": {"command": ""}}), "command"),
        (json!({"s": {"command": "x", "args": "a b"}}), "args"),
        (json!({"s": {"command": "x", "args": [1]}}), "args"),
        (json!({"s": {"command": "x", "env": {"A": 1}}}), "env"),
        (json!({"s": {"command": "x", "cwd": []}}), "cwd"),
        (json!({"s": {"command": "x", "enabled": "yes"}}), "enabled"),
        (json!({"s": {"command": "x", "timeout": -1}}), "timeout"),
        (json!({"s": {"command": "x", "bogus": 1}}), "bogus"),
        (
            json!({"s": {"url": "http://h/mcp", "headers": []}}),
            "headers",
        ),
        (json!({"s": {"url": "ftp://h/mcp"}}), "url"),
        (
            json!({"s": {"url": "http://h/mcp", "auth": {"strategy": "magic"}}}),
            "auth",
        ),
        (
            json!({"s": {"url": "http://h/mcp", "auth": {"strategy": "oauth2",
                "authentication": {"type": "oauth", "client_auth_method": "private_key_jwt"}}}}),
            "auth.authentication.client_auth_method",
        ),
        (
            json!({"s": {"url": "http://h/mcp", "headers": {"authorization": "x"},
                         "auth": {"strategy": "bearer", "value": "t"}}}),
            "auth",
        ),
    ];
    for (v, field) in cases {
        let e = parse(v.clone()).expect_err(&v.to_string());
        assert_eq!(e.server, "s", "{v}");
        assert_eq!(e.field.as_deref(), Some(field), "{v}: {e}");
        assert!(e.to_string().starts_with("MCP server 's': "), "{e}");
    }
    let e = parse(json!({"s": "npx"})).unwrap_err();
    assert_eq!((e.server.as_str(), e.field.as_deref()), ("s", None));
    let e = parse(json!({"mcpServers": []})).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("mcpServers"));
    assert!(parse(json!([1])).is_err());
}

#[test]
fn unknown_fields_can_be_dropped_for_external_files() {
    let v = json!({"mcpServers": {"s": {"command": "x", "alwaysAllow": ["t"]}}});
    assert!(parse(v.clone()).is_err());
    let c = McpConfig::parse(&v, UnknownFields::Drop).unwrap();
    assert_eq!(c.servers.len(), 1);
}

#[test]
fn per_server_timeout_is_in_seconds() {
    let c = parse(json!({"s": {"command": "x", "timeout": 2.5}})).unwrap();
    assert_eq!(c.servers[0].timeout, Some(Duration::from_millis(2500)));
}

#[test]
fn sse_is_chosen_by_transport_or_url() {
    let c = parse(json!({
        "a": {"url": "http://h/mcp", "transport": "sse"},
        "b": {"url": "http://h/sse?x=1"},
        "c": {"url": "http://h/sse-not/mcp"}
    }))
    .unwrap();
    assert!(matches!(c.servers[0].transport, Transport::Sse { .. }));
    assert!(matches!(c.servers[1].transport, Transport::Sse { .. }));
    assert!(matches!(c.servers[2].transport, Transport::Http { .. }));
}

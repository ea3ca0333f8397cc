//! The control plane serves its API over HTTPS from `OH_CONTROL_TLS_CERT_FILE`
//! and `OH_CONTROL_TLS_KEY_FILE`: a client trusting the test's CA runs the
//! task flow over it, a client that does not trust it and plain HTTP get
//! nothing, and unusable files stop the start with the setting named.

use crate::common::{
    self, Api, Control, Followed, Options, control_bin, follow_until, mock_llm, tenant,
};
use openhands_testkit::{Script, Turn};
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_is_served_over_https_from_its_settings() {
    let files = tempfile::tempdir().unwrap();
    let openhands_testkit::tls::TestCertificates { ca, cert, key } =
        openhands_testkit::tls::certificates(files.path()).unwrap();
    let script = Script::from_turns([Turn::tool_call("finish", json!({"message": "done"}))])
        .with_toolless_reply(Turn::text("title"));
    let llm = mock_llm(script).await;
    let c = Control::start(
        &common::Db::Sqlite,
        &llm.base_url(),
        Options {
            env: vec![
                (
                    "OH_CONTROL_TLS_CERT_FILE".into(),
                    cert.to_string_lossy().into_owned(),
                ),
                (
                    "OH_CONTROL_TLS_KEY_FILE".into(),
                    key.to_string_lossy().into_owned(),
                ),
            ],
            ..Options::default()
        },
    );
    assert!(c.url.starts_with("https://127.0.0.1:"), "{}", c.url);

    openhands_control::install_tls_provider();
    let trusting = openhands_client::http_client(&openhands_client::HttpOptions {
        tls: openhands_client::TlsOptions::with_ca_file(&ca),
        ..openhands_client::HttpOptions::per_request(Duration::from_secs(30)).no_proxy()
    })
    .unwrap();
    let api = Api::with_client(&c.url, trusting);
    let doc = api.call("GET", "/openapi.json", None, None).await;
    assert_eq!(doc.status, 200, "{}", doc.text);

    // The task flow, over HTTPS.
    let full = "sandboxes:write,ai_chat:use";
    let t = tenant(&c, "acme", full, full);
    let sb = api.create_sandbox(&t, json!({})).await;
    assert_eq!(sb.status, 201, "{}", sb.text);
    let sb = sb.json["id"].as_str().unwrap().to_string();
    let started = api.start_task(&t, &sb, "go").await;
    assert_eq!(started.status, 202, "{}", started.text);
    let task = started.json["id"].as_str().unwrap().to_string();
    let mut f = Followed::default();
    follow_until(
        &api,
        &t,
        &sb,
        &task,
        &mut f,
        Duration::from_secs(60),
        |_| false,
    )
    .await;
    assert_eq!(f.exit.as_ref().unwrap()["exit_code"], 0, "{:#?}", f.lines);

    // A client that does not trust the CA, and plain HTTP, get nothing.
    let untrusting = openhands_client::http_client(
        &openhands_client::HttpOptions::per_request(Duration::from_secs(10)).no_proxy(),
    )
    .unwrap();
    assert!(
        untrusting
            .get(format!("{}/openapi.json", c.url))
            .send()
            .await
            .is_err()
    );
    let plain = c.url.replacen("https://", "http://", 1);
    let answered = untrusting.get(format!("{plain}/openapi.json")).send().await;
    assert!(
        answered.as_ref().map_or(true, |r| !r.status().is_success()),
        "plain HTTP was served: {answered:?}"
    );
    llm.shutdown().await;
}

#[test]
fn unusable_certificate_files_stop_the_start_naming_the_setting() {
    let files = tempfile::tempdir().unwrap();
    let junk = files.path().join("junk.pem");
    std::fs::write(&junk, "not a certificate").unwrap();
    let data = files.path().join("control");
    for (cert, key, named) in [
        (&junk, &junk, "OH_CONTROL_TLS_CERT_FILE"),
        (
            &files.path().join("missing.pem"),
            &junk,
            "OH_CONTROL_TLS_CERT_FILE",
        ),
    ] {
        let out = std::process::Command::new(control_bin())
            .args(["serve", "--host", "127.0.0.1", "--port", "0", "--data-dir"])
            .arg(&data)
            .env("OH_CONTROL_TLS_CERT_FILE", cert)
            .env("OH_CONTROL_TLS_KEY_FILE", key)
            .env("OH_CONTROL_SECRET_KEY", crate::common::SECRET_KEY)
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(named), "{err}");
        assert!(
            String::from_utf8_lossy(&out.stdout).is_empty(),
            "no URL is announced"
        );
    }
    // One without the other is refused before anything starts.
    let out = std::process::Command::new(control_bin())
        .args(["serve", "--host", "127.0.0.1", "--port", "0", "--data-dir"])
        .arg(&data)
        .env("OH_CONTROL_TLS_CERT_FILE", &junk)
        .env_remove("OH_CONTROL_TLS_KEY_FILE")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("OH_CONTROL_TLS_KEY_FILE"), "{err}");
}

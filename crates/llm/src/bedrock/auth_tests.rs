use super::*;
use openhands_wire::secret::SecretString;
use serde_json::json;
use std::collections::HashMap;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let m: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k: &str| m.get(k).cloned()
}

fn keys() -> [(&'static str, &'static str); 2] {
    [
        ("AWS_ACCESS_KEY_ID", "AKID"),
        ("AWS_SECRET_ACCESS_KEY", "SECRET"),
    ]
}

#[test]
fn model_ids_regions_and_endpoints_follow_litellm() {
    let e = env(&keys());
    let t = resolve(
        &LlmConfig::new("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0"),
        &e,
    )
    .unwrap();
    assert_eq!(t.model_id, "anthropic.claude-3-5-sonnet-20240620-v1:0");
    assert_eq!(t.model_path, "anthropic.claude-3-5-sonnet-20240620-v1%3A0");
    assert_eq!(t.region, "us-west-2");
    assert_eq!(
        t.url(false),
        "https://bedrock-runtime.us-west-2.amazonaws.com/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse"
    );
    assert!(t.url(true).ends_with("/converse-stream"));
    // converse/ and an embedded region are taken out of the id.
    let t = resolve(
        &LlmConfig::new("bedrock/converse/eu-west-1/amazon.nova-pro-v1:0"),
        &e,
    )
    .unwrap();
    assert_eq!(t.model_id, "amazon.nova-pro-v1:0");
    assert_eq!(t.region, "eu-west-1");
    // An ARN keeps its slashes encoded and gives its region.
    let t = resolve(
        &LlmConfig::new(
            "bedrock/arn:aws:bedrock:ap-south-1:123:inference-profile/apac.anthropic.claude",
        ),
        &e,
    )
    .unwrap();
    assert_eq!(t.region, "ap-south-1");
    assert!(
        t.model_path
            .starts_with("arn%3Aaws%3Abedrock%3Aap-south-1%3A123%3Ainference-profile%2F")
    );
    // Region variables in order; the setting wins.
    let e2 = env(&[
        keys()[0],
        keys()[1],
        ("AWS_REGION", "us-east-2"),
        ("AWS_REGION_NAME", "us-east-1"),
    ]);
    assert_eq!(
        resolve(&LlmConfig::new("bedrock/m"), &e2).unwrap().region,
        "us-east-1"
    );
    let mut c = LlmConfig::new("bedrock/m");
    c.extra
        .insert("aws_region_name".into(), json!("eu-central-1"));
    let t = resolve(&c, &e2).unwrap();
    assert_eq!(t.region, "eu-central-1");
    assert_eq!(
        t.endpoint,
        "https://bedrock-runtime.eu-central-1.amazonaws.com"
    );
    c.extra.insert("aws_region_name".into(), json!("nowhere"));
    assert!(matches!(resolve(&c, &e2), Err(LlmError::Config(m)) if m.contains("aws_region_name")));
    assert_eq!(
        resolve(&LlmConfig::new("bedrock/cn-north-1/m"), &e)
            .unwrap()
            .endpoint,
        "https://bedrock-runtime.cn-north-1.amazonaws.com.cn"
    );
    // Endpoint: base_url, then the setting, then the variable.
    let e3 = env(&[
        keys()[0],
        keys()[1],
        ("AWS_BEDROCK_RUNTIME_ENDPOINT", "http://env:1/"),
    ]);
    assert_eq!(
        resolve(&LlmConfig::new("bedrock/m"), &e3).unwrap().endpoint,
        "http://env:1"
    );
    let mut c = LlmConfig::new("bedrock/m");
    c.extra.insert(
        "aws_bedrock_runtime_endpoint".into(),
        json!("http://setting:2"),
    );
    assert_eq!(resolve(&c, &e3).unwrap().endpoint, "http://setting:2");
    c.base_url = Some("http://base:3".into());
    assert_eq!(resolve(&c, &e3).unwrap().endpoint, "http://base:3");
    // InvokeModel routes are refused.
    assert!(matches!(
        resolve(&LlmConfig::new("bedrock/invoke/anthropic.claude"), &e),
        Err(LlmError::Config(m)) if m.contains("InvokeModel")
    ));
}

#[test]
fn credentials_come_from_settings_variables_and_profiles() {
    // A bearer token (api_key, or AWS_BEARER_TOKEN_BEDROCK put there) wins.
    let mut c = LlmConfig::new("bedrock/m");
    c.api_key = Some(SecretString::new("bedrock-api-key"));
    assert_eq!(
        resolve(&c, &env(&keys())).unwrap().auth,
        BedrockAuth::Bearer
    );
    // Settings beat the variables.
    let mut c = LlmConfig::new("bedrock/m");
    c.extra.insert("aws_access_key_id".into(), json!("SETID"));
    c.extra
        .insert("aws_secret_access_key".into(), json!("SETSECRET"));
    c.extra
        .insert("aws_session_token".into(), json!("SETTOKEN"));
    let BedrockAuth::SigV4(k) = resolve(&c, &env(&keys())).unwrap().auth else {
        panic!("sigv4 expected")
    };
    assert_eq!(
        (k.access_key_id.as_str(), k.session_token.as_deref()),
        ("SETID", Some("SETTOKEN"))
    );
    c.extra.remove("aws_secret_access_key");
    assert!(
        matches!(resolve(&c, &env(&keys())), Err(LlmError::Config(m)) if m.contains("aws_secret_access_key"))
    );
    // The variables.
    let e = env(&[keys()[0], keys()[1], ("AWS_SESSION_TOKEN", "TOK")]);
    let BedrockAuth::SigV4(k) = resolve(&LlmConfig::new("bedrock/m"), &e).unwrap().auth else {
        panic!("sigv4 expected")
    };
    assert_eq!(k.session_token.as_deref(), Some("TOK"));
    // Nothing at all: the message says what to set.
    let home = tempfile::tempdir().unwrap();
    let h = home.path().display().to_string();
    let err = resolve(&LlmConfig::new("bedrock/m"), &env(&[("HOME", &h)])).unwrap_err();
    assert!(
        err.to_string().contains("AWS_BEARER_TOKEN_BEDROCK"),
        "{err}"
    );
    // Refused settings are named.
    let mut c = LlmConfig::new("bedrock/m");
    c.extra
        .insert("aws_role_name".into(), json!("arn:aws:iam::1:role/x"));
    assert!(
        matches!(resolve(&c, &env(&keys())), Err(LlmError::Config(m)) if m.starts_with("aws_role_name"))
    );
}

#[test]
fn shared_profile_files_are_read() {
    let home = tempfile::tempdir().unwrap();
    let aws = home.path().join(".aws");
    std::fs::create_dir_all(&aws).unwrap();
    std::fs::write(
        aws.join("credentials"),
        "[default]\naws_access_key_id = DEFID\naws_secret_access_key = DEFSECRET\n\n\
         [work]\naws_access_key_id=WORKID\naws_secret_access_key=WORKSECRET\naws_session_token=WT\n",
    )
    .unwrap();
    std::fs::write(
        aws.join("config"),
        "[default]\nregion = eu-west-3\n[profile work]\nregion=ap-northeast-1\n\
         [profile sso]\nsso_start_url = https://x\n",
    )
    .unwrap();
    let h = home.path().display().to_string();
    let e = env(&[("HOME", &h)]);
    let t = resolve(&LlmConfig::new("bedrock/m"), &e).unwrap();
    let BedrockAuth::SigV4(k) = &t.auth else {
        panic!()
    };
    assert_eq!(k.access_key_id, "DEFID");
    assert_eq!(t.region, "eu-west-3");
    let mut c = LlmConfig::new("bedrock/m");
    c.extra.insert("aws_profile_name".into(), json!("work"));
    let t = resolve(&c, &e).unwrap();
    let BedrockAuth::SigV4(k) = &t.auth else {
        panic!()
    };
    assert_eq!(
        (k.access_key_id.as_str(), k.session_token.as_deref()),
        ("WORKID", Some("WT"))
    );
    assert_eq!(t.region, "ap-northeast-1");
    let e_profile = env(&[("HOME", &h), ("AWS_PROFILE", "work")]);
    let t = resolve(&LlmConfig::new("bedrock/m"), &e_profile).unwrap();
    assert_eq!(t.region, "ap-northeast-1");
    c.extra.insert("aws_profile_name".into(), json!("sso"));
    let err = resolve(&c, &e).unwrap_err().to_string();
    assert!(
        err.contains("aws_profile_name") && err.contains("sso_start_url"),
        "{err}"
    );
    c.extra.insert("aws_profile_name".into(), json!("missing"));
    let err = resolve(&c, &e).unwrap_err().to_string();
    assert!(err.contains("`missing`"), "{err}");
}

//! Secrets of a conversation and their protection at rest.
//!
//! [`SecretsRegistry`] holds named secrets (`StaticSecret` values or
//! `LookupSecret` URLs resolved once), exports the ones a command names to
//! tools and masks their values in every output. [`Cipher`] encrypts secrets
//! written to disk as Fernet tokens (`gAAAA…`), interoperable with the
//! reference; without a cipher secrets are written redacted, never in clear.

use base64::Engine;
use openhands_wire::secret::REDACTED;
use parking_lot::RwLock;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use crate::tool::SecretAccess;

/// Placeholder that replaces secret values in outputs.
pub const SECRET_MASK: &str = "<secret-hidden>";

/// Encrypts and decrypts secrets at rest (Fernet tokens). The key is derived
/// from a passphrase (`OH_SECRET_KEY`) with SHA-256; previous passphrases
/// still decrypt, for key rotation.
#[derive(Clone)]
pub struct Cipher {
    keys: Arc<Vec<fernet::Fernet>>,
}

impl std::fmt::Debug for Cipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cipher(**********)")
    }
}

fn fernet_for(passphrase: &str) -> Option<fernet::Fernet> {
    let digest = Sha256::digest(passphrase.as_bytes());
    let key = base64::engine::general_purpose::URL_SAFE.encode(digest);
    fernet::Fernet::new(&key)
}

impl Cipher {
    /// A cipher for `secret_key`, also decrypting with `previous_keys`.
    /// Returns `None` for an empty key.
    pub fn new(secret_key: &str, previous_keys: &[String]) -> Option<Self> {
        if secret_key.is_empty() {
            return None;
        }
        let mut keys = vec![fernet_for(secret_key)?];
        keys.extend(previous_keys.iter().filter_map(|k| fernet_for(k)));
        Some(Self {
            keys: Arc::new(keys),
        })
    }

    /// Encrypts `plain` with the current key.
    pub fn encrypt(&self, plain: &str) -> String {
        match self.keys.first() {
            Some(k) => k.encrypt(plain.as_bytes()),
            None => REDACTED.to_string(),
        }
    }

    /// Decrypts a token with the current or a previous key.
    pub fn decrypt(&self, token: &str) -> Option<String> {
        self.keys
            .iter()
            .find_map(|k| k.decrypt(token).ok())
            .and_then(|b| String::from_utf8(b).ok())
    }
}

/// True when `text` looks like a Fernet token.
pub fn looks_encrypted(text: &str) -> bool {
    text.starts_with("gAAAA")
}

/// Protects a secret for writing to disk: encrypted with a cipher, redacted
/// without one.
pub fn protect(value: &str, cipher: Option<&Cipher>) -> String {
    match cipher {
        Some(c) => c.encrypt(value),
        None => REDACTED.to_string(),
    }
}

/// Reverses [`protect`]: decrypts tokens, returns `None` for redacted or
/// undecryptable values, passes plain values through.
pub fn unprotect(value: &str, cipher: Option<&Cipher>) -> Option<String> {
    if value == REDACTED || value.is_empty() {
        return None;
    }
    if looks_encrypted(value) {
        return cipher.and_then(|c| c.decrypt(value));
    }
    Some(value.to_string())
}

/// A secret whose value your code provides — the reference's user-defined
/// `SecretSource` (a subclass with `get_value`). The conversation asks it
/// each time an action names the secret (on a blocking thread, within
/// [`LOOKUP_TIMEOUT`]), exports the value to that command like a static
/// secret and masks it in what the model sees. The value is never written
/// to disk: a resumed conversation needs the provider registered again.
///
/// ```
/// use openhands_sdk::secrets::{SecretProvider, SecretSource};
///
/// struct FromVault;
///
/// impl SecretProvider for FromVault {
///     fn get_value(&self) -> Option<String> {
///         Some("callable-based-secret".into())
///     }
/// }
///
/// let source = SecretSource::custom(FromVault);
/// assert!(matches!(source, SecretSource::Custom(_)));
/// ```
pub trait SecretProvider: Send + Sync + 'static {
    /// The current value (`None`: there is none now; the action runs
    /// without it and the model is told the secret could not be fetched).
    fn get_value(&self) -> Option<String>;

    /// What the secret is for (its `description`).
    fn description(&self) -> Option<String> {
        None
    }

    /// The `kind` recorded in the conversation's state (the value never is).
    fn kind(&self) -> &str {
        "CustomSecret"
    }
}

/// A registered [`SecretProvider`] (compared by identity).
#[derive(Clone)]
pub struct CustomSecret(pub Arc<dyn SecretProvider>);

impl std::fmt::Debug for CustomSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CustomSecret({})", self.0.kind())
    }
}

impl PartialEq for CustomSecret {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Where a secret's value comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum SecretSource {
    /// A value your code provides each time it is needed.
    Custom(CustomSecret),
    /// A literal value.
    Static {
        /// The value.
        value: String,
        /// Optional description.
        description: Option<String>,
    },
    /// A URL answering the value to a GET (with headers).
    Lookup {
        /// URL.
        url: String,
        /// Request headers.
        headers: Map<String, Value>,
        /// Optional description.
        description: Option<String>,
    },
}

impl SecretSource {
    /// A secret `provider` gives the value of.
    pub fn custom(provider: impl SecretProvider) -> Self {
        SecretSource::Custom(CustomSecret(Arc::new(provider)))
    }

    /// Parses the forms clients send: `"value"`, `{"value": ...}`,
    /// `{"kind":"StaticSecret","value":...}`, `{"kind":"LookupSecret","url":...}`.
    /// Protected values are decrypted with `cipher` when possible.
    pub fn from_json(v: &Value, cipher: Option<&Cipher>) -> Option<Self> {
        match v {
            Value::String(s) => Some(SecretSource::Static {
                value: unprotect(s, cipher)?,
                description: None,
            }),
            Value::Object(m) => {
                let description = m
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                match m.get("kind").and_then(Value::as_str) {
                    Some("LookupSecret") => Some(SecretSource::Lookup {
                        url: m.get("url")?.as_str()?.to_string(),
                        headers: m
                            .get("headers")
                            .and_then(Value::as_object)
                            .cloned()
                            .unwrap_or_default(),
                        description,
                    }),
                    _ => Some(SecretSource::Static {
                        value: unprotect(m.get("value")?.as_str()?, cipher)?,
                        description,
                    }),
                }
            }
            _ => None,
        }
    }

    /// The JSON written to disk (values protected with `cipher`).
    pub fn to_json(&self, cipher: Option<&Cipher>) -> Value {
        match self {
            SecretSource::Custom(CustomSecret(p)) => {
                let mut m = Map::new();
                if let Some(d) = p.description() {
                    m.insert("description".into(), json!(d));
                }
                m.insert("kind".into(), json!(p.kind()));
                Value::Object(m)
            }
            SecretSource::Static { value, description } => {
                let mut m = Map::new();
                if let Some(d) = description {
                    m.insert("description".into(), json!(d));
                }
                m.insert("value".into(), json!(protect(value, cipher)));
                m.insert("kind".into(), json!("StaticSecret"));
                Value::Object(m)
            }
            SecretSource::Lookup {
                url,
                headers,
                description,
            } => {
                let mut m = Map::new();
                if let Some(d) = description {
                    m.insert("description".into(), json!(d));
                }
                m.insert("url".into(), json!(url));
                let hs: Map<String, Value> = headers
                    .iter()
                    .map(|(k, v)| {
                        let s = v.as_str().unwrap_or_default();
                        (k.clone(), json!(protect(s, cipher)))
                    })
                    .collect();
                m.insert("headers".into(), Value::Object(hs));
                m.insert("kind".into(), json!("LookupSecret"));
                Value::Object(m)
            }
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    sources: BTreeMap<String, SecretSource>,
    values: BTreeMap<String, String>,
    /// Earlier values of custom secrets: no longer exported, still masked.
    retired: Vec<String>,
}

/// Named secrets of one conversation.
#[derive(Debug, Clone, Default)]
pub struct SecretsRegistry {
    inner: Arc<RwLock<Inner>>,
}

impl SecretsRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces secrets. Static values are usable at once; lookup
    /// secrets become usable after [`SecretsRegistry::set_value`].
    pub fn update(&self, secrets: impl IntoIterator<Item = (String, SecretSource)>) {
        let mut g = self.inner.write();
        for (name, src) in secrets {
            match &src {
                SecretSource::Static { value, .. } => {
                    g.values.insert(name.clone(), value.clone());
                }
                SecretSource::Lookup { .. } | SecretSource::Custom(_) => {
                    g.values.remove(&name);
                }
            }
            g.sources.insert(name, src);
        }
    }

    /// Sets the resolved value of a secret (e.g. a fetched lookup secret).
    pub fn set_value(&self, name: &str, value: String) {
        let mut g = self.inner.write();
        if let Some(old) = g.values.insert(name.to_string(), value)
            && !g.retired.contains(&old)
        {
            g.retired.push(old);
        }
    }

    /// Stops exporting the value of `name` (it stays masked).
    fn retire_value(&self, name: &str) {
        let mut g = self.inner.write();
        if let Some(old) = g.values.remove(name)
            && !g.retired.contains(&old)
        {
            g.retired.push(old);
        }
    }

    /// Removes the secret `name` (its value is no longer exported but stays
    /// masked); `true` when it was there.
    pub fn remove(&self, name: &str) -> bool {
        self.retire_value(name);
        self.inner.write().sources.remove(name).is_some()
    }

    /// Masks `values` in output from now on without exporting them (a
    /// rotated credential's new contents and tokens).
    pub fn mask_also(&self, values: impl IntoIterator<Item = String>) {
        let mut g = self.inner.write();
        for v in values {
            if !v.is_empty() && !g.retired.contains(&v) {
                g.retired.push(v);
            }
        }
    }

    /// Lookup secrets that still need a value: `(name, url, headers)`.
    pub fn unresolved_lookups(&self) -> Vec<(String, String, Map<String, Value>)> {
        let g = self.inner.read();
        g.sources
            .iter()
            .filter(|(n, _)| !g.values.contains_key(*n))
            .filter_map(|(n, s)| match s {
                SecretSource::Lookup { url, headers, .. } => {
                    Some((n.clone(), url.clone(), headers.clone()))
                }
                SecretSource::Static { .. } | SecretSource::Custom(_) => None,
            })
            .collect()
    }

    /// The custom secrets `text` names, with their providers.
    fn custom_named_in(&self, text: &str) -> Vec<(String, Arc<dyn SecretProvider>)> {
        let g = self.inner.read();
        g.sources
            .iter()
            .filter(|(n, _)| text.contains(n.as_str()))
            .filter_map(|(n, s)| match s {
                SecretSource::Custom(CustomSecret(p)) => Some((n.clone(), p.clone())),
                _ => None,
            })
            .collect()
    }

    /// Secret names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.inner.read().sources.keys().cloned().collect()
    }

    /// The value of a secret.
    pub fn get(&self, name: &str) -> Option<String> {
        self.inner.read().values.get(name).cloned()
    }

    /// `SecretRegistry` JSON for `base_state.json` (`{"secret_sources":{...}}`).
    pub fn to_json(&self, cipher: Option<&Cipher>) -> Value {
        let g = self.inner.read();
        let sources: Map<String, Value> = g
            .sources
            .iter()
            .map(|(k, v)| (k.clone(), v.to_json(cipher)))
            .collect();
        json!({ "secret_sources": sources })
    }

    /// Loads `SecretRegistry` JSON (values decrypted with `cipher`; redacted
    /// values are dropped).
    pub fn from_json(v: &Value, cipher: Option<&Cipher>) -> Self {
        let reg = Self::new();
        if let Some(m) = v.get("secret_sources").and_then(Value::as_object) {
            reg.update(
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), SecretSource::from_json(v, cipher)?))),
            );
        }
        reg
    }
}

/// How long one `LookupSecret` fetch may take (the reference's 30 s).
pub const LOOKUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest secret value accepted from a lookup.
const LOOKUP_MAX_BYTES: usize = 64 * 1024;

static LOOKUP_CLIENT: LazyLock<Result<reqwest::Client, openhands_client::ClientError>> =
    LazyLock::new(|| {
        openhands_client::http_client(&openhands_client::HttpOptions::per_request(
            Duration::from_secs(10),
        ))
    });

/// Why a lookup secret could not be fetched (never holds the value).
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    /// No HTTP client could be built.
    #[error("no HTTP client available: {0}")]
    NoClient(#[source] openhands_client::ClientError),
    /// No answer in time (seconds).
    #[error("timed out after {0} s")]
    Timeout(f64),
    /// The request failed (the URL left out).
    #[error("request failed: {0}")]
    Request(#[source] reqwest::Error),
    /// An answer with an error status.
    #[error("the lookup answered HTTP {0}")]
    Status(u16),
    /// The body could not be read (the URL left out).
    #[error("reading the answer failed: {0}")]
    Read(#[source] reqwest::Error),
    /// The body is larger than a secret may be.
    #[error("the answer is larger than {LOOKUP_MAX_BYTES} bytes")]
    TooLarge,
    /// The body is not text.
    #[error("the answer is not UTF-8 text")]
    NotText,
}

/// Fetches a lookup secret: GET `url` with `headers`; the body of a 2xx
/// answer is the value. Errors never contain the value.
pub async fn fetch_lookup(
    url: &str,
    headers: &Map<String, Value>,
    timeout: Duration,
) -> Result<String, LookupError> {
    let client = LOOKUP_CLIENT
        .as_ref()
        .map_err(|e| LookupError::NoClient(e.clone()))?;
    let mut req = client.get(url).timeout(timeout);
    for (k, v) in headers {
        if let Some(v) = v.as_str() {
            req = req.header(k.as_str(), v);
        }
    }
    let resp = req.send().await.map_err(|e| {
        if e.is_timeout() {
            LookupError::Timeout(timeout.as_secs_f64())
        } else {
            LookupError::Request(e.without_url())
        }
    })?;
    let status = resp.status();
    if !status.is_success() {
        return Err(LookupError::Status(status.as_u16()));
    }
    let bytes = resp
        .bytes()
        .await
        .map_err(|e| LookupError::Read(e.without_url()))?;
    if bytes.len() > LOOKUP_MAX_BYTES {
        return Err(LookupError::TooLarge);
    }
    String::from_utf8(bytes.to_vec()).map_err(|_| LookupError::NotText)
}

impl SecretsRegistry {
    /// Fetches the lookup secrets `text` names that have no value yet, and
    /// caches their values (from then on exported and masked like static
    /// secrets). Returns the failures: `(name, error)`.
    pub async fn resolve_lookups_named_in(
        &self,
        text: &str,
        timeout: Duration,
    ) -> Vec<(String, String)> {
        let wanted: Vec<(String, String, Map<String, Value>)> = self
            .unresolved_lookups()
            .into_iter()
            .filter(|(name, _, _)| text.contains(name.as_str()))
            .collect();
        let mut failures = Vec::new();
        for (name, url, headers) in wanted {
            match fetch_lookup(&url, &headers, timeout).await {
                Ok(value) => self.set_value(&name, value),
                Err(e) => failures.push((name, e.to_string())),
            }
        }
        // Custom secrets are asked every time: their value may change.
        for (name, provider) in self.custom_named_in(text) {
            let asked = tokio::task::spawn_blocking(move || provider.get_value());
            match tokio::time::timeout(timeout, asked).await {
                Ok(Ok(Some(value))) => self.set_value(&name, value),
                outcome => {
                    self.retire_value(&name);
                    let why = match outcome {
                        Ok(Ok(_)) => "its source has no value".to_string(),
                        Ok(Err(_)) => "its source failed".to_string(),
                        Err(_) => format!(
                            "its source did not answer within {} s",
                            timeout.as_secs_f64()
                        ),
                    };
                    failures.push((name, why));
                }
            }
        }
        failures
    }
}

impl SecretAccess for SecretsRegistry {
    fn secret_value(&self, name: &str) -> Option<String> {
        self.get(name)
    }

    fn secrets_named_in(&self, text: &str) -> Vec<(String, String)> {
        let g = self.inner.read();
        g.values
            .iter()
            .filter(|(name, _)| text.contains(name.as_str()))
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect()
    }

    fn mask(&self, text: &str) -> String {
        let g = self.inner.read();
        let mut out = text.to_string();
        // Longest values first so a value containing another is masked whole.
        let mut values: Vec<&String> = g
            .values
            .values()
            .chain(g.retired.iter())
            .filter(|v| v.len() >= 3)
            .collect();
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        for v in values {
            if out.contains(v.as_str()) {
                out = out.replace(v.as_str(), SECRET_MASK);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cipher_round_trip_and_rotation() {
        let old = Cipher::new("old-key", &[]).unwrap();
        let token = old.encrypt("sk-123");
        assert!(looks_encrypted(&token));
        let new = Cipher::new("new-key", &["old-key".to_string()]).unwrap();
        assert_eq!(new.decrypt(&token).as_deref(), Some("sk-123"));
        assert!(Cipher::new("other", &[]).unwrap().decrypt(&token).is_none());
        assert!(Cipher::new("", &[]).is_none());
    }

    #[test]
    fn registry_masks_and_exports_named_secrets() {
        let reg = SecretsRegistry::new();
        reg.update([(
            "GITHUB_TOKEN".to_string(),
            SecretSource::from_json(&json!("ghp_abcdef"), None).unwrap(),
        )]);
        assert_eq!(
            reg.secrets_named_in("curl -H $GITHUB_TOKEN x"),
            vec![("GITHUB_TOKEN".to_string(), "ghp_abcdef".to_string())]
        );
        assert!(reg.secrets_named_in("ls").is_empty());
        assert_eq!(reg.mask("token=ghp_abcdef!"), "token=<secret-hidden>!");
    }

    struct Counter(std::sync::atomic::AtomicUsize);

    impl SecretProvider for Counter {
        fn get_value(&self) -> Option<String> {
            let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            (n < 2).then(|| format!("token-{n}"))
        }
        fn description(&self) -> Option<String> {
            Some("rotating".into())
        }
    }

    #[tokio::test]
    async fn custom_secrets_are_asked_each_time_and_never_stored() {
        let reg = SecretsRegistry::new();
        reg.update([(
            "ROTATING".to_string(),
            SecretSource::custom(Counter(Default::default())),
        )]);
        assert!(
            reg.get("ROTATING").is_none(),
            "not asked before it is named"
        );
        assert!(
            reg.resolve_lookups_named_in("ls", LOOKUP_TIMEOUT)
                .await
                .is_empty()
        );
        assert!(reg.get("ROTATING").is_none());
        let named = "echo $ROTATING";
        assert!(
            reg.resolve_lookups_named_in(named, LOOKUP_TIMEOUT)
                .await
                .is_empty()
        );
        assert_eq!(reg.get("ROTATING").as_deref(), Some("token-0"));
        assert_eq!(reg.mask("got token-0"), "got <secret-hidden>");
        reg.resolve_lookups_named_in(named, LOOKUP_TIMEOUT).await;
        assert_eq!(reg.get("ROTATING").as_deref(), Some("token-1"));
        let failed = reg.resolve_lookups_named_in(named, LOOKUP_TIMEOUT).await;
        assert_eq!(failed.len(), 1);
        assert!(failed[0].1.contains("no value"), "{failed:?}");
        assert!(reg.get("ROTATING").is_none(), "no longer exported");
        assert_eq!(
            reg.mask("token-0 token-1"),
            "<secret-hidden> <secret-hidden>"
        );
        let stored = reg.to_json(None).to_string();
        assert!(!stored.contains("token-"), "{stored}");
        assert!(stored.contains("CustomSecret") && stored.contains("rotating"));
    }

    #[test]
    fn json_never_holds_clear_values() {
        let reg = SecretsRegistry::new();
        reg.update([(
            "K".to_string(),
            SecretSource::Static {
                value: "v-secret".into(),
                description: None,
            },
        )]);
        let redacted = reg.to_json(None);
        assert!(!redacted.to_string().contains("v-secret"));
        let c = Cipher::new("k", &[]).unwrap();
        let enc = reg.to_json(Some(&c));
        assert!(!enc.to_string().contains("v-secret"));
        let back = SecretsRegistry::from_json(&enc, Some(&c));
        assert_eq!(back.get("K").as_deref(), Some("v-secret"));
        let lost = SecretsRegistry::from_json(&redacted, None);
        assert!(lost.get("K").is_none());
    }
}

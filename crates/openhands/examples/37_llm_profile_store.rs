//! LLM profiles: named LLM configurations saved as JSON files (the
//! reference's `~/.openhands/profiles` format) and loaded by name. Secrets
//! are masked on save unless a cipher encrypts them.

#![allow(
    clippy::disallowed_methods,
    reason = "an example reads its settings as a user's program would"
)]

use openhands::LlmBuilder;
use openhands::sdk::profiles::LlmProfileStore;

/// A profile as the reference writes it with a normal save (masked key).
const FAST_PROFILE: &str = r#"{
  "model": "anthropic/claude-haiku-4-5",
  "api_key": "**********",
  "temperature": 0.0,
  "usage_id": "fast"
}"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::current_dir()?.join("profiles");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("fast.json"), FAST_PROFILE)?;
    let store = LlmProfileStore::new(&dir, None);
    println!("seeded profiles: {:?}", store.list()?);

    let api_key =
        std::env::var("LLM_API_KEY").unwrap_or_else(|_| "sk-example-not-a-real-key".into());
    let creative = LlmBuilder::from_env()
        .api_key(api_key.clone())
        .usage_id("creative")
        .temperature(0.9)
        .build()?;
    store.save("creative", creative.config(), false)?;
    let stored = std::fs::read_to_string(dir.join("creative.json"))?;
    println!("key stored in clear: {}", stored.contains(&api_key));
    println!("stored profiles: {:?}", store.list()?);

    for name in ["fast", "creative"] {
        let config = store.load(name)?;
        println!(
            "loaded {name}: usage {}, model {}, temperature {:?}, key set {}",
            config.usage_id,
            config.model,
            config.temperature,
            config.api_key.is_some()
        );
    }
    store.delete("creative")?;
    println!("after deletion: {:?}", store.list()?);
    Ok(())
}

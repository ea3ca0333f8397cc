//! Resolving a plugin reference (`name` or `name@marketplace`) against a
//! conversation's registered marketplaces into the source to fetch, with
//! the reference's errors: an unknown marketplace or plugin is "not
//! found", a malformed or ambiguous reference cannot be resolved.

use super::marketplace::{Marketplace, MarketplaceRegistration};
use super::source::{self, FetchSettings, PluginSource};

/// Why a reference did not resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// No such marketplace or plugin (404 on the server).
    #[error("{0}")]
    NotFound(String),
    /// Malformed, ambiguous, or every marketplace failed (400).
    #[error("{0}")]
    Invalid(String),
}

fn parse_ref(plugin_ref: &str) -> Result<(&str, Option<&str>), ResolveError> {
    let Some((name, market)) = plugin_ref.rsplit_once('@') else {
        if plugin_ref.is_empty() {
            return Err(ResolveError::Invalid(
                "Plugin reference must not be empty".into(),
            ));
        }
        return Ok((plugin_ref, None));
    };
    if name.is_empty() || market.is_empty() {
        return Err(ResolveError::Invalid(
            "Plugin reference must use 'plugin-name@marketplace-name'".into(),
        ));
    }
    Ok((name, Some(market)))
}

fn fetch_marketplace(
    reg: &MarketplaceRegistration,
    settings: &FetchSettings,
) -> Result<Marketplace, super::types::PluginError> {
    let (dir, _) = source::fetch_blocking(&reg.plugin_source(), settings)?;
    Marketplace::load(&dir, &reg.name)
}

/// The source of `plugin_ref` in `registrations`. Blocking (marketplaces
/// may be git repositories).
pub fn resolve_plugin_ref(
    registrations: &[MarketplaceRegistration],
    plugin_ref: &str,
    settings: &FetchSettings,
) -> Result<PluginSource, ResolveError> {
    let (name, market) = parse_ref(plugin_ref)?;
    if let Some(market) = market {
        let reg = registrations
            .iter()
            .find(|r| r.name == market)
            .ok_or_else(|| {
                ResolveError::NotFound(format!("Marketplace '{market}' is not registered"))
            })?;
        let m =
            fetch_marketplace(reg, settings).map_err(|e| ResolveError::Invalid(e.to_string()))?;
        let entry = m.plugin(name).ok_or_else(|| {
            ResolveError::NotFound(format!(
                "Plugin '{name}' not found in marketplace '{market}'"
            ))
        })?;
        return m
            .plugin_source(entry)
            .map_err(|e| ResolveError::Invalid(e.to_string()));
    }
    let mut matches: Vec<(String, PluginSource)> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    for reg in registrations {
        let m = match fetch_marketplace(reg, settings) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(marketplace = %reg.name, error = %e, "marketplace not searched");
                failures.push(format!("{}: {e}", reg.name));
                continue;
            }
        };
        if let Some(entry) = m.plugin(name) {
            let spec = m
                .plugin_source(entry)
                .map_err(|e| ResolveError::Invalid(e.to_string()))?;
            matches.push((reg.name.clone(), spec));
        }
    }
    match matches.len() {
        0 if !failures.is_empty() && failures.len() == registrations.len() => {
            Err(ResolveError::NotFound(format!(
                "Plugin '{name}' not found; marketplace fetch failed: {}",
                failures.join("; ")
            )))
        }
        0 => Err(ResolveError::NotFound(format!(
            "Plugin '{name}' not found in any registered marketplace"
        ))),
        1 => Ok(matches.remove(0).1),
        _ => Err(ResolveError::Invalid(format!(
            "Plugin '{name}' is ambiguous; found in multiple marketplaces: {}. Use '{name}@<marketplace-name>'.",
            matches
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_parsed_as_the_reference_does() {
        assert_eq!(parse_ref("kit").unwrap(), ("kit", None));
        assert_eq!(parse_ref("kit@team").unwrap(), ("kit", Some("team")));
        assert_eq!(parse_ref("a@b@team").unwrap(), ("a@b", Some("team")));
        assert!(matches!(parse_ref(""), Err(ResolveError::Invalid(_))));
        assert!(matches!(parse_ref("@team"), Err(ResolveError::Invalid(_))));
        let settings = FetchSettings::for_dir(None, Default::default());
        let e = resolve_plugin_ref(&[], "kit@team", &settings).unwrap_err();
        assert_eq!(
            e,
            ResolveError::NotFound("Marketplace 'team' is not registered".into())
        );
        let e = resolve_plugin_ref(&[], "kit", &settings).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Plugin 'kit' not found in any registered marketplace"
        );
    }
}

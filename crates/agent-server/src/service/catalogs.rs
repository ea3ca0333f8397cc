//! The marketplace catalogs of the public extensions repository (skills
//! and true plugins, with installation status), the skill catalog of agent
//! profile launches (public + user skills), the public repository's sync,
//! and strict plugin fetches. Blocking work runs on the blocking pool; git
//! runs through the execution layer with timeouts. No HTTP types here.

use crate::service::extensions::plugin_contents;
use openhands_protocol::catalogs::{MarketplacePluginInfo, MarketplaceSkillInfo, SyncResponse};
use openhands_sdk::installed::{Installed, Kind, installed_dir};
use openhands_sdk::plugin::catalog::{plugin_catalog, skill_catalog};
use openhands_sdk::plugin::strict::{CheckedPlugin, StrictFetch, StrictFetchError, fetch_strict};
use openhands_sdk::secrets::{SecretSource, fetch_lookup};
use openhands_sdk::skills::Skill;
use openhands_sdk::skills::context::{DEFAULT_MARKETPLACE_PATH, Listing, SkillSources, list};
use openhands_sdk::skills::public_repo::PublicRepo;
use openhands_workspace::exec::EnvPolicy;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

/// Longest a lookup secret of a fetch request may take.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a catalog skill comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The public extensions repository.
    Public,
    /// The user's skills (installed ones included).
    User,
}

impl Origin {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Public => "public",
            Origin::User => "user",
        }
    }
}

/// The catalogs and fetches of one server.
#[derive(Debug, Clone)]
pub struct CatalogService {
    sources: SkillSources,
    env: EnvPolicy,
}

fn installed_names(sources: &SkillSources, kind: Kind) -> HashSet<String> {
    sources
        .openhands_dir()
        .map(|d| {
            Installed::new(installed_dir(&d, kind), kind)
                .list()
                .into_iter()
                .map(|i| i.name)
                .collect()
        })
        .unwrap_or_default()
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::error!(error = %e, "catalog task failed");
            None
        }
    }
}

impl CatalogService {
    /// The catalogs of `sources` (git under the default policy).
    pub fn new(sources: SkillSources) -> Self {
        Self {
            sources,
            env: EnvPolicy::default(),
        }
    }

    /// The skills catalog of the public repository's marketplace.
    pub async fn skill_marketplace(&self) -> Vec<MarketplaceSkillInfo> {
        let Some(repo) = PublicRepo::of(&self.sources) else {
            return Vec::new();
        };
        let Some(dir) = repo.for_catalog(&self.env).await else {
            tracing::warn!("Failed to access public skills repository");
            return Vec::new();
        };
        let sources = self.sources.clone();
        blocking(move || {
            let installed = installed_names(&sources, Kind::Skill);
            skill_catalog(&dir, DEFAULT_MARKETPLACE_PATH)
                .into_iter()
                .map(|e| MarketplaceSkillInfo {
                    installed: installed.contains(&e.name),
                    name: e.name,
                    description: e.description,
                    source: e.source,
                })
                .collect()
        })
        .await
        .unwrap_or_default()
    }

    /// The true plugins of the public repository's marketplace.
    pub async fn plugin_marketplace(&self) -> Vec<MarketplacePluginInfo> {
        let Some(repo) = PublicRepo::of(&self.sources) else {
            return Vec::new();
        };
        let Some(dir) = repo.for_catalog(&self.env).await else {
            tracing::warn!("Failed to access public extensions repository");
            return Vec::new();
        };
        let sources = self.sources.clone();
        blocking(move || {
            let installed = installed_names(&sources, Kind::Plugin);
            plugin_catalog(&dir, DEFAULT_MARKETPLACE_PATH)
                .into_iter()
                .map(|e| {
                    let contents = e.local_dir.as_deref().and_then(|d| {
                        match openhands_sdk::plugin::load::load(d) {
                            Ok(l) => Some((d.to_string_lossy().into_owned(), plugin_contents(&l.plugin))),
                            Err(err) => {
                                tracing::warn!(dir = %d.display(), error = %err, "Failed to load plugin contents");
                                None
                            }
                        }
                    });
                    let (path, skills, files) = match contents {
                        Some((p, (s, f))) => (Some(p), Some(s), Some(f)),
                        None => (None, None, None),
                    };
                    MarketplacePluginInfo {
                        installed: installed.contains(&e.name),
                        name: e.name,
                        description: e.description,
                        source: e.source,
                        git_ref: e.git_ref,
                        repo_path: e.repo_path,
                        path,
                        skills,
                        files,
                    }
                })
                .collect()
        })
        .await
        .unwrap_or_default()
    }

    /// The public and user skills an agent profile launch can load, each
    /// with its origin (a user skill shadowing a public one is the user's).
    /// The public tier is the local copy `EXTENSIONS_PATH` names or, without
    /// one, the cached clone of the public repository when one exists (a
    /// listing never downloads: `POST /api/skills/sync` and the marketplace
    /// catalogs keep the clone fresh).
    pub async fn skill_catalog(&self) -> Vec<(Skill, Origin)> {
        let mut sources = self.sources.clone();
        if sources.public_skills_dir.is_none()
            && let Some(PublicRepo::Cached { dir, .. }) = PublicRepo::of(&sources)
            && tokio::fs::try_exists(dir.join(".git"))
                .await
                .unwrap_or(false)
        {
            sources.public_skills_dir = Some(dir);
        }
        blocking(move || {
            let public = sources.public_skills_dir.is_some();
            let user = sources.home.is_some();
            let listing = |public: bool, user: bool| Listing {
                public,
                user,
                project: None,
                marketplace_path: Some(DEFAULT_MARKETPLACE_PATH.to_string()),
            };
            let names = |l: Listing| -> HashSet<String> {
                list(&l, &sources)
                    .map(|(s, _)| s.into_iter().map(|s| s.name).collect())
                    .unwrap_or_default()
            };
            let user_names = if user {
                names(listing(false, true))
            } else {
                HashSet::new()
            };
            let public_names = if public {
                names(listing(true, false))
            } else {
                HashSet::new()
            };
            let merged = match list(&listing(public, user), &sources) {
                Ok((skills, _)) => skills,
                Err(e) => {
                    tracing::warn!(error = %e, "skill catalog");
                    Vec::new()
                }
            };
            merged
                .into_iter()
                .map(|s| {
                    let origin = if public_names.contains(&s.name) && !user_names.contains(&s.name)
                    {
                        Origin::Public
                    } else {
                        Origin::User
                    };
                    (s, origin)
                })
                .collect()
        })
        .await
        .unwrap_or_default()
    }

    /// Refreshes the public repository.
    pub async fn sync(&self) -> SyncResponse {
        let Some(repo) = PublicRepo::of(&self.sources) else {
            return SyncResponse {
                status: "error".into(),
                message: "Sync failed: the server has no OpenHands directory to keep the skills repository in".into(),
            };
        };
        match repo.sync(&self.env).await {
            Ok(()) => SyncResponse {
                status: "success".into(),
                message: "Skills repository synced successfully".into(),
            },
            Err(e) => {
                tracing::warn!(error = %e, "Failed to sync skills repository");
                SyncResponse {
                    status: "error".into(),
                    message: format!("Sync failed: {e}"),
                }
            }
        }
    }

    /// Strictly fetches a plugin into the pinned cache; `secrets` are the
    /// request's `SecretSource`s (lookups are fetched; one that fails
    /// counts as missing).
    pub async fn fetch_plugin(
        &self,
        source: String,
        git_ref: Option<String>,
        repo_path: Option<String>,
        secrets: &Map<String, Value>,
        timeout: Duration,
    ) -> Result<CheckedPlugin, StrictFetchError> {
        let mut values = BTreeMap::new();
        for (name, v) in secrets {
            match SecretSource::from_json(v, None) {
                Some(SecretSource::Static { value, .. }) => {
                    values.insert(name.clone(), value);
                }
                Some(SecretSource::Lookup { url, headers, .. }) => {
                    match fetch_lookup(&url, &headers, LOOKUP_TIMEOUT).await {
                        Ok(value) => {
                            values.insert(name.clone(), value);
                        }
                        Err(e) => {
                            tracing::warn!(secret = %name, error = %e, "lookup secret failed")
                        }
                    }
                }
                // JSON never holds a custom source.
                None | Some(SecretSource::Custom(_)) => {}
            }
        }
        let cache_dir = openhands_sdk::plugin::FetchSettings::for_dir(
            self.sources.openhands_dir().as_deref(),
            self.env.clone(),
        )
        .cache_dir;
        fetch_strict(&StrictFetch {
            source,
            git_ref,
            repo_path,
            secrets: values,
            timeout,
            allow_local: true,
            cache_dir: Some(cache_dir),
            env: self.env.clone(),
        })
        .await
    }
}

use super::*;
use crate::meta_profile::MetaProfileClass;
use parking_lot::Mutex;
use std::collections::HashMap;

struct Store(Mutex<HashMap<String, MetaProfile>>);

impl MetaProfileSource for Store {
    fn names(&self) -> Vec<String> {
        let mut n: Vec<String> = self.0.lock().keys().cloned().collect();
        n.sort();
        n
    }
    fn load(&self, name: &str) -> Result<MetaProfile, MetaProfileLoadError> {
        let found = self.0.lock().get(name).cloned();
        found.ok_or_else(|| MetaProfileLoadError::NotFound {
            name: name.into(),
            available: self.names(),
        })
    }
}

fn meta(classifier: &str) -> MetaProfile {
    MetaProfile {
        classifier_model: classifier.into(),
        classes: vec![MetaProfileClass {
            description: "anything".into(),
            model: "m".into(),
        }],
        prompt_template: None,
        model_table: None,
    }
}

fn store(names: &[&str]) -> Store {
    Store(Mutex::new(
        names.iter().map(|n| (n.to_string(), meta(n))).collect(),
    ))
}

fn params(active: Option<&str>, inline: Option<&str>) -> RouteParams {
    RouteParams {
        active_meta_profile: active.map(str::to_string),
        meta_profile: inline.map(meta),
        meta_profile_llms: BTreeMap::new(),
    }
}

#[test]
fn the_stores_profile_wins_over_the_inline_one_by_name() {
    let s = store(&["b", "a"]);
    let resolve = |p| ClassifyAndSwitchLlmTool::resolve(&p, Some(&s));
    // The named one from the store, even with an inline blob.
    assert_eq!(
        resolve(params(Some("b"), Some("inline")))
            .unwrap()
            .classifier_model,
        "b"
    );
    // The store cannot resolve the name: the inline blob.
    assert_eq!(
        resolve(params(Some("gone"), Some("inline")))
            .unwrap()
            .classifier_model,
        "inline"
    );
    // Neither: an error listing what exists.
    assert_eq!(
        resolve(params(Some("gone"), None)).unwrap_err().to_string(),
        "Active meta-profile 'gone' could not be resolved from the store or inline \
         configuration. Available meta-profiles: a, b"
    );
    // No name: the inline blob, else the alphabetically first stored.
    assert_eq!(
        resolve(params(None, Some("inline")))
            .unwrap()
            .classifier_model,
        "inline"
    );
    assert_eq!(resolve(params(None, None)).unwrap().classifier_model, "a");
    let empty = store(&[]);
    assert!(
        ClassifyAndSwitchLlmTool::resolve(&params(None, None), Some(&empty))
            .unwrap_err()
            .to_string()
            .contains("none are available")
    );
}

#[test]
fn spec_params_are_checked_naming_the_parameter() {
    let p = |v: Value| RouteParams::from_params(v.as_object().unwrap());
    let ok = p(json!({
        "active_meta_profile": "route",
        "meta_profile": {"classifier_model": "c", "classes": [{"description": "d", "model": "m"}]},
        "meta_profile_llms": {"c": {"model": "openai/gpt-4o-mini"}}
    }))
    .unwrap();
    assert_eq!(ok.active_meta_profile.as_deref(), Some("route"));
    assert_eq!(ok.meta_profile_llms["c"].model, "openai/gpt-4o-mini");
    assert!(
        p(json!({"other": 1}))
            .unwrap_err()
            .to_string()
            .contains("'other'")
    );
    assert!(
        p(json!({"meta_profile": {"classifier_model": "c", "prompt_template": "no slot"}}))
            .unwrap_err()
            .to_string()
            .starts_with("meta_profile:")
    );
    assert!(
        p(json!({"meta_profile_llms": {"c": {"model": 5}}}))
            .unwrap_err()
            .to_string()
            .starts_with("meta_profile_llms.c:")
    );
    assert!(p(json!({"active_meta_profile": 3})).is_err());
    assert_eq!(p(json!({})).unwrap(), RouteParams::default());
}

#[test]
fn replies_are_quoted_as_python_repr_does() {
    assert_eq!(py_repr("maybe"), "'maybe'");
    assert_eq!(py_repr("it's"), "\"it's\"");
    assert_eq!(py_repr("a\nb\\"), "'a\\nb\\\\'");
    assert_eq!(py_repr("'\""), "'\\'\"'");
}

#[tokio::test]
async fn outside_a_conversation_the_call_fails() {
    let tool = ClassifyAndSwitchLlmTool::new(RouteParams::default(), &ToolEnv::new("/"));
    let obs = tool
        .run(ClassifyAndSwitchLlmAction {}, &ToolCallContext::default())
        .await
        .unwrap();
    assert!(obs.is_error);
    assert_eq!(obs.model, None);
}

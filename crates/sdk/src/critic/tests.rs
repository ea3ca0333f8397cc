//! Critic configuration, the simple critics, refinement decisions and the
//! API critic against a local classification service.

use super::*;
use crate::test_http::monitor;

fn critic(v: Value) -> Critic {
    Critic::from_json(&v).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn configurations_are_parsed_and_bad_ones_named() {
    let c = critic(json!({"kind": "PassCritic"}));
    assert_eq!(c.mode, Mode::FinishAndMessage);
    assert!(c.refinement.is_none());
    let c = critic(json!({"kind": "PassCritic", "mode": "all_actions",
        "iterative_refinement": {"success_threshold": 0.7}}));
    assert_eq!(c.mode, Mode::AllActions);
    assert_eq!(
        c.refinement,
        Some(Refinement {
            success_threshold: 0.7,
            max_iterations: 3
        })
    );
    let err = |v: Value| Critic::from_json(&v).expect_err("must fail").to_string();
    assert!(err(json!({"kind": "MadeUpCritic"})).contains("MadeUpCritic"));
    assert!(err(json!({"kind": "PassCritic", "mode": "sometimes"})).contains("mode"));
    assert!(
        err(json!({"kind": "PassCritic", "iterative_refinement": {"max_iterations": 0}}))
            .contains("max_iterations")
    );
    assert!(
        err(json!({"kind": "PassCritic", "iterative_refinement": {"success_threshold": 1.5}}))
            .contains("success_threshold")
    );
    assert!(err(json!({"kind": "APIBasedCritic"})).contains("api_key"));
    assert!(
        err(json!({"kind": "APIBasedCritic", "api_key": "k", "tokenizer_name": "other/tok"}))
            .contains("tokenizer_name")
    );
}

#[tokio::test]
async fn simple_critics_score_as_the_reference() {
    let input = Evaluation {
        events: &[],
        messages: &[],
        tools: &[],
    };
    let pass = critic(json!({"kind": "PassCritic"})).evaluate(&input).await;
    assert_eq!(pass.as_ref().expect("pass").score, 1.0);
    // Without a git patch (the reference's agent passes none) both patch
    // critics score 0.
    let empty = critic(json!({"kind": "EmptyPatchCritic"}))
        .evaluate(&input)
        .await
        .expect("empty");
    assert_eq!(
        (empty.score, empty.message.as_deref()),
        (0.0, Some("Git patch is empty or missing"))
    );
    let finished = critic(json!({"kind": "AgentFinishedCritic"}))
        .evaluate(&input)
        .await
        .expect("finished");
    assert_eq!(finished.score, 0.0);
    assert_eq!(empty_patch(Some("diff --git a b")).score, 1.0);
    assert_eq!(
        agent_finished(&[], Some("diff")).message.as_deref(),
        Some("Agent did not finish properly. No FinishAction found")
    );
    assert_eq!(
        pass.map(|r| r.to_json()).ok(),
        Some(json!({"score": 1.0, "message": "PassCritic always succeeds", "metadata": null}))
    );
}

#[test]
fn refinement_runs_until_the_threshold_or_the_bound() {
    let c = critic(json!({"kind": "EmptyPatchCritic",
        "iterative_refinement": {"success_threshold": 0.6, "max_iterations": 2}}));
    let low = CriticResult::new(0.25, "low");
    let high = CriticResult::new(0.9, "high");
    let (text, next) = c.refinement_step(Some(&low), 0).expect("refine");
    assert_eq!(next, 1);
    assert!(text.starts_with(
        "The task appears incomplete (iteration 1, predicted success likelihood: 25.0%)."
    ));
    assert_eq!(c.refinement_step(Some(&low), 1).map(|s| s.1), Some(2));
    assert!(c.refinement_step(Some(&low), 2).is_none(), "bounded");
    assert!(c.refinement_step(Some(&high), 0).is_none(), "passed");
    assert!(c.refinement_step(None, 0).is_none(), "no result");
    let plain = critic(json!({"kind": "PassCritic"}));
    assert!(plain.refinement_step(Some(&low), 0).is_none());
}

fn probs(success: f64, loop_behavior: f64) -> Vec<f64> {
    let api = critic(json!({"kind": "APIBasedCritic", "api_key": "k"}));
    let CriticKind::Api(a) = &api.kind else {
        panic!("api critic");
    };
    a.labels()
        .iter()
        .map(|l| match *l {
            "success" => success,
            "loop_behavior" => loop_behavior,
            "sentiment_neutral" => 1.0,
            _ => 0.01,
        })
        .collect()
}

#[tokio::test]
async fn api_critic_scores_through_the_service_and_refines_on_likely_issues() {
    let (url, seen) = monitor(|body| {
        let input = body["input"].as_str().unwrap_or_default();
        let (s, l) = if input.contains("looping") {
            (0.8, 0.9)
        } else if input.contains("broken") {
            (500.0, 0.0)
        } else {
            (0.3, 0.05)
        };
        if s > 1.0 {
            return (500, "{}".into(), 0);
        }
        let answer = json!({"id": "x", "data": [{"probs": probs(s, l), "num_classes": 27}]});
        (200, answer.to_string(), 0)
    })
    .await;
    let c = critic(
        json!({"kind": "APIBasedCritic", "server_url": url, "api_key": "crit-key",
        "model_name": "critic-v1", "iterative_refinement": {"success_threshold": 0.6}}),
    );
    let tools = vec![json!({"type": "function", "function": {"name": "terminal",
        "description": "Run", "parameters": {"type": "object"}}})];
    let messages = vec![
        ("system".to_string(), "You are an agent.".to_string()),
        ("user".to_string(), "Fix the bug.".to_string()),
        ("assistant".to_string(), "Done.".to_string()),
    ];
    let input = Evaluation {
        events: &[],
        messages: &messages,
        tools: &tools,
    };
    let r = c.evaluate(&input).await.expect("scored");
    assert_eq!(r.score, 0.3);
    assert!(
        r.message
            .as_deref()
            .unwrap_or_default()
            .starts_with("Success: 0.30; {\"sentiment_neutral\": 1.0")
    );
    let meta = r.metadata.clone().expect("metadata");
    assert_eq!(
        meta["categorized_features"]["sentiment"]["predicted"],
        "Neutral"
    );
    assert!(c.should_refine(&r), "below the threshold");
    let req = seen.lock().expect("log")[0].clone();
    assert!(req.headers.contains("authorization: bearer crit-key"));
    assert!(req.headers.starts_with("post /classify"), "{}", req.headers);
    assert_eq!(req.body["model"], "critic-v1");
    let rendered = req.body["input"].as_str().expect("input");
    assert!(rendered.starts_with("<|im_start|>system\nYou are an agent.\n\n# Tools"));
    assert!(rendered.contains("\n{\"type\": \"function\", \"function\": {\"name\": \"terminal\""));
    assert!(rendered.ends_with("<|im_start|>assistant\nDone.<|im_end|>\n"));

    // A high score with a likely agent issue still refines.
    let looping = vec![("user".to_string(), "looping".to_string())];
    let r = c
        .evaluate(&Evaluation {
            events: &[],
            messages: &looping,
            tools: &tools,
        })
        .await
        .expect("scored");
    assert_eq!(r.score, 0.8);
    assert!(c.should_refine(&r));
    let (text, _) = c.refinement_step(Some(&r), 0).expect("refine");
    assert!(
        text.contains("Potential agent issues: Loop Behavior (90%)"),
        "{text}"
    );

    // Failures are errors (the caller records no result).
    let broken = vec![("user".to_string(), "broken".to_string())];
    let started = std::time::Instant::now();
    let err = c
        .evaluate(&Evaluation {
            events: &[],
            messages: &broken,
            tools: &tools,
        })
        .await
        .expect_err("500s");
    assert!(err.to_string().contains("HTTP 500"), "{err}");
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(3),
        "retried twice"
    );
    assert!(
        c.evaluate(&Evaluation {
            events: &[],
            messages: &broken,
            tools: &[]
        })
        .await
        .is_err()
    );
}

#[test]
fn chatml_groups_consecutive_tool_results() {
    let m = |r: &str, t: &str| (r.to_string(), t.to_string());
    let out = api::render_chatml(
        &[
            m("system", "S"),
            m("user", "U"),
            m("assistant", ""),
            m("tool", "a"),
            m("tool", "b"),
        ],
        &[],
    );
    assert_eq!(
        out,
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n<|im_end|>\n\
<|im_start|>user\n<tool_response>\na\n</tool_response>\n<tool_response>\nb\n</tool_response><|im_end|>\n"
    );
}

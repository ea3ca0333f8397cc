use super::*;

#[test]
fn verdicts_are_read_from_json_alone_or_inside_text() {
    let v = GoalVerdict::parse(r#"{"score": 0.9, "complete": true, "missing": ""}"#);
    assert_eq!(
        v,
        GoalVerdict {
            score: 0.9,
            complete: true,
            missing: String::new()
        }
    );
    let v = GoalVerdict::parse(
        "Here you go:\n```json\n{\"score\": 0.4, \"complete\": false, \"missing\": \"tests\"}\n```",
    );
    assert_eq!(v.score, 0.4);
    assert!(!v.complete);
    assert_eq!(v.missing, "tests");
}

#[test]
fn an_unreadable_verdict_never_completes_the_goal() {
    for answer in ["I think it's done!", "", "[1, 2]", "{not json}"] {
        let v = GoalVerdict::parse(answer);
        assert!(!v.complete, "{answer:?}");
        assert_eq!(v.score, 0.0);
        assert!(!v.missing.is_empty());
    }
}

#[test]
fn verdict_fields_are_read_tolerantly() {
    // A missing `complete` follows the score; an explicit null is false.
    assert!(GoalVerdict::parse(r#"{"score": 1}"#).complete);
    assert!(!GoalVerdict::parse(r#"{"score": 0.99}"#).complete);
    assert!(!GoalVerdict::parse(r#"{"score": 1, "complete": null}"#).complete);
    // Scores are clamped and may come as text.
    assert_eq!(GoalVerdict::parse(r#"{"score": 7}"#).score, 1.0);
    assert_eq!(GoalVerdict::parse(r#"{"score": -2}"#).score, 0.0);
    assert_eq!(GoalVerdict::parse(r#"{"score": "0.25"}"#).score, 0.25);
    assert_eq!(GoalVerdict::parse(r#"{"score": "high"}"#).score, 0.0);
    // An empty or false `missing` is nothing missing.
    assert_eq!(GoalVerdict::parse(r#"{"missing": null}"#).missing, "");
    assert_eq!(GoalVerdict::parse(r#"{"missing": false}"#).missing, "");
    assert_eq!(
        GoalVerdict::parse(r#"{"missing": ["a"]}"#).missing,
        r#"["a"]"#
    );
}

fn verdict(complete: bool, missing: &str) -> GoalVerdict {
    GoalVerdict {
        score: if complete { 1.0 } else { 0.2 },
        complete,
        missing: missing.into(),
    }
}

#[test]
fn the_controller_continues_until_complete_or_capped() {
    let mut c = GoalController::new("ship it", 3).unwrap();
    assert_eq!(c.start(), "ship it");
    let GoalStep::Continue { followup, .. } = c.on_verdict(verdict(false, "the tests")) else {
        panic!("expected a follow-up");
    };
    assert!(followup.contains("the tests"), "{followup}");
    assert!(followup.contains("Audit 1"), "{followup}");
    let GoalStep::Done(outcome) = c.on_verdict(verdict(true, "")) else {
        panic!("expected the end");
    };
    assert_eq!(outcome.status, GoalStatusName::Complete);
    assert_eq!(outcome.iterations, 2);

    let mut c = GoalController::new("ship it", 1).unwrap();
    let GoalStep::Done(outcome) = c.on_verdict(verdict(false, "x")) else {
        panic!("expected the cap");
    };
    assert_eq!(outcome.status, GoalStatusName::Capped);
    assert_eq!(outcome.iterations, 1);
}

#[test]
fn a_follow_up_without_a_reason_still_says_something_is_missing() {
    let mut c = GoalController::new("ship it", 3).unwrap();
    let GoalStep::Continue { followup, .. } = c.on_verdict(verdict(false, "  ")) else {
        panic!("expected a follow-up");
    };
    assert!(followup.contains("not verified yet"), "{followup}");
}

#[test]
fn bad_objectives_and_caps_are_refused() {
    assert!(matches!(
        GoalController::new("  ", 3),
        Err(GoalError::Invalid(_))
    ));
    assert!(matches!(
        GoalController::new("x", 0),
        Err(GoalError::Invalid(_))
    ));
}

#[test]
fn a_resumed_goal_keeps_one_audit_in_hand() {
    let c = GoalController::resumed("x", 3, 1).unwrap();
    assert_eq!(c.iteration(), 1);
    let c = GoalController::resumed("x", 3, 9).unwrap();
    assert_eq!(c.iteration(), 2);
}

#[test]
fn the_status_has_the_reference_json_shape() {
    let status = GoalStatus {
        active: true,
        status: GoalStatusName::Running,
        iteration: 0,
        max_iterations: 10,
        objective: "o".into(),
        verdict: None,
    };
    assert_eq!(
        serde_json::to_value(&status).unwrap(),
        serde_json::json!({"active": true, "status": "running", "iteration": 0,
            "max_iterations": 10, "objective": "o", "verdict": null})
    );
}

//! Latent blueprint tools (spec 004): a tool with no activity is done by the model itself. Its
//! result is the `_output` the model wrote into the call, validated against the `_output`
//! schema; a call without one, or with one that does not fit, is answered with what is wrong
//! and a request to call again, and nothing else happens.

mod common;

use common::{call_answer, one_prompt_project, runtime_on, text_answer, ListModel};
use toolhost_runtime::engine::{RunOutcome, StopReason};
use toolhost_store::{Role, ToolStatus};

const SENTIMENT: &str = r#"{
  "type": "object",
  "description": "Analyzes the sentiment of a text.",
  "properties": {
    "text": {"type": "string"},
    "_output": {
      "type": "object",
      "properties": {"sentiment": {"type": "string", "enum": ["positive", "neutral", "negative"]}, "confidence": {"type": "number", "minimum": 0, "maximum": 1}},
      "required": ["sentiment", "confidence"],
      "additionalProperties": false
    }
  },
  "required": ["text"],
  "additionalProperties": false
}"#;

#[tokio::test]
async fn a_latent_call_is_answered_by_the_output_the_model_wrote() {
    let project = one_prompt_project(&["sentiment"]);
    std::fs::write(project.root.join("agents/tools/sentiment.json"), SENTIMENT).unwrap();
    let model = ListModel::new(vec![
        call_answer("w1", "sentiment", r#"{"text": "best day"}"#),
        call_answer(
            "w2",
            "sentiment",
            r#"{"text": "best day", "_output": {"sentiment": "great", "confidence": 3}}"#,
        ),
        call_answer(
            "w3",
            "sentiment",
            r#"{"text": "best day", "_output": {"sentiment": "positive", "confidence": 0.9}}"#,
        ),
        text_answer("It is positive."),
    ]);
    let (rt, store) = runtime_on(&project, model.clone()).await;
    // The tool file loaded (the only problem is the model, registered in code).
    assert!(rt
        .problems()
        .iter()
        .all(|p| !p.path.ends_with("sentiment.json")));
    let thread = rt
        .start_thread("a", "How does 'best day' feel?")
        .await
        .unwrap();
    assert_eq!(
        rt.run(&thread.id).await.unwrap(),
        RunOutcome::Done(StopReason::Response)
    );
    let results: Vec<_> = store
        .messages(&thread.id)
        .unwrap()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .collect();
    assert_eq!(results.len(), 3);
    // Missing `_output`: the violation and a request to call again.
    let missing = results[0].content.clone().unwrap();
    assert_eq!(results[0].status, Some(ToolStatus::Error));
    assert!(missing.contains("_output"), "{missing}");
    assert!(missing.contains("Call `sentiment` again"), "{missing}");
    assert!(!missing.contains("no implementation"), "{missing}");
    // An `_output` that breaks its schema: each violation, at its place.
    let invalid = results[1].content.clone().unwrap();
    assert_eq!(results[1].status, Some(ToolStatus::Error));
    assert!(invalid.contains("/_output/sentiment"), "{invalid}");
    assert!(invalid.contains("/_output/confidence"), "{invalid}");
    // A fitting one is the result.
    assert_eq!(results[2].status, Some(ToolStatus::Success));
    assert_eq!(
        results[2].content.as_deref(),
        Some(r#"{"sentiment":"positive","confidence":0.9}"#)
    );
    // And the model saw each of them.
    let last = model.requests().last().unwrap().clone();
    assert!(last
        .iter()
        .any(|m| m.content.as_deref() == Some(r#"{"sentiment":"positive","confidence":0.9}"#)));
}

//! Conformance cases for what a person decides: approvals decided once and only when they match,
//! and variables with their requests.

use super::thread;
use crate::*;
use serde_json::json;

fn approval_request(call_id: &str) -> ApprovalRequest {
    ApprovalRequest {
        call_id: call_id.into(),
        tool: "pay".into(),
        arguments: json!({"amount": 5}),
        args_hash: "hash-1".into(),
        tool_fingerprint: "tool-1".into(),
        reason: Some("moves money".into()),
        reject_message: None,
    }
}

fn decision(approved: bool, args_hash: &str, tool_fingerprint: &str) -> ApprovalDecision {
    ApprovalDecision {
        approved,
        always: false,
        message: None,
        reason: None,
        edited_arguments: None,
        decided_by: "tester".into(),
        args_hash: args_hash.into(),
        tool_fingerprint: tool_fingerprint.into(),
    }
}

/// An approval is requested once, decided once, and only by a decision that matches it.
pub fn approvals_are_decided_once_and_only_when_they_match(store: &dyn Store) {
    let t = thread(store);
    let request = Write::RequestApproval(approval_request("c1"));
    store.apply(&t, vec![request.clone()]).unwrap();
    // Asking again (after a restart) changes nothing.
    store.apply(&t, vec![request]).unwrap();
    let records = store.approvals(&t).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].request, approval_request("c1"));
    assert_eq!(records[0].decision, None);

    let decide = |call: &str, d: ApprovalDecision| {
        store.apply(
            &t,
            vec![Write::DecideApproval {
                call_id: call.into(),
                decision: d,
            }],
        )
    };
    for (call, d) in [
        ("c2", decision(true, "hash-1", "tool-1")),
        ("c1", decision(true, "hash-2", "tool-1")),
        ("c1", decision(true, "hash-1", "tool-2")),
    ] {
        assert!(matches!(
            decide(call, d),
            Err(StoreError::DecisionRefused { .. })
        ));
    }
    assert_eq!(store.approvals(&t).unwrap()[0].decision, None);
    decide("c1", decision(false, "hash-1", "tool-1")).unwrap();
    let records = store.approvals(&t).unwrap();
    assert_eq!(
        records[0].decision,
        Some(decision(false, "hash-1", "tool-1"))
    );
    assert!(records[0].decided_at.is_some());
    // A decision is never replaced.
    assert!(matches!(
        decide("c1", decision(true, "hash-1", "tool-1")),
        Err(StoreError::DecisionRefused { .. })
    ));
}

/// Variables are set and replaced by name; requests for them are recorded and answered.
pub fn variables_and_their_requests_are_stored(store: &dyn Store) {
    let t = thread(store);
    let var = |name: &str, secret: bool, value: &str| StoredVariable {
        name: name.into(),
        secret,
        value: value.into(),
    };
    store
        .apply(
            &t,
            vec![
                Write::SetVariable(var("region", false, "eu")),
                Write::SetVariable(var("token", true, "sealed-1")),
                Write::RequestVariables {
                    id: "r1".into(),
                    names: vec!["api_key".into()],
                },
            ],
        )
        .unwrap();
    store
        .apply(&t, vec![Write::SetVariable(var("region", false, "us"))])
        .unwrap();
    assert_eq!(
        store.variables(&t).unwrap(),
        vec![var("region", false, "us"), var("token", true, "sealed-1")]
    );
    let requests = store.variable_requests(&t).unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].names, vec!["api_key".to_owned()]);
    assert_eq!(requests[0].answered_at, None);
    store
        .apply(&t, vec![Write::AnswerVariables { id: "r1".into() }])
        .unwrap();
    assert!(store.variable_requests(&t).unwrap()[0]
        .answered_at
        .is_some());
    let other = thread(store);
    assert!(store.variables(&other).unwrap().is_empty());
    assert!(store.approvals(&other).unwrap().is_empty());
}

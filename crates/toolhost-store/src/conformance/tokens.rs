//! Conformance cases for API tokens: stored as given (hash, scopes, agent limits), found by id,
//! unique, listed oldest first, and revoked once.

use crate::*;

fn token(id: &str, created_at: Millis, agents: Option<Vec<String>>) -> ApiToken {
    ApiToken {
        id: id.into(),
        name: format!("token {id}"),
        secret_hash: format!("{id:0>64}"),
        scopes: vec!["read".into(), "run".into()],
        agents,
        created_at,
        revoked_at: None,
    }
}

/// A token is stored with every field, found by its id, listed oldest first, and an id is
/// never given twice.
pub fn tokens_are_stored_found_and_unique(store: &dyn Store) {
    assert_eq!(store.tokens().unwrap(), vec![]);
    assert_eq!(store.token("nope").unwrap(), None);
    let limited = token("t2", 2_000, Some(vec!["assistant".into()]));
    let open = token("t1", 1_000, None);
    store.create_token(&limited).unwrap();
    store.create_token(&open).unwrap();
    assert_eq!(store.token("t2").unwrap(), Some(limited.clone()));
    assert_eq!(store.token("t1").unwrap(), Some(open.clone()));
    assert_eq!(store.tokens().unwrap(), vec![open.clone(), limited]);
    match store.create_token(&token("t1", 3_000, None)) {
        Err(StoreError::TokenExists(id)) => assert_eq!(id, "t1"),
        other => panic!("a second token with one id was stored: {other:?}"),
    }
    assert_eq!(
        store.token("t1").unwrap(),
        Some(open),
        "the first one stays"
    );
}

/// Revoking marks the token with the time it happened, once; an unknown id revokes nothing.
pub fn tokens_are_revoked_once(store: &dyn Store) {
    store.create_token(&token("t1", 1_000, None)).unwrap();
    assert!(!store.revoke_token("nope").unwrap());
    let before = now_millis();
    assert!(store.revoke_token("t1").unwrap());
    let revoked = store.token("t1").unwrap().unwrap().revoked_at.unwrap();
    assert!(revoked >= before, "{revoked} < {before}");
    assert!(!store.revoke_token("t1").unwrap(), "revoked twice");
    assert_eq!(
        store.token("t1").unwrap().unwrap().revoked_at,
        Some(revoked)
    );
}

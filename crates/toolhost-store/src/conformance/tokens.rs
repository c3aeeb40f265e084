//! Conformance cases for API tokens: stored as given (hash, scopes, agent limits), found by id,
//! unique, listed oldest first, revoked once, and kept with their expiry.

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
        expires_at: None,
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

/// A token's expiry is stored as given, past or future, and read back by `token` and `tokens`;
/// an expired token can still be revoked, and revoking leaves its expiry as it was.
pub fn tokens_keep_their_expiry(store: &dyn Store) {
    let now = now_millis();
    let lapsed = ApiToken {
        expires_at: Some(now - 60_000),
        ..token("t1", now - 120_000, None)
    };
    let later = ApiToken {
        expires_at: Some(now + 86_400_000),
        ..token("t2", now - 60_000, None)
    };
    let forever = token("t3", now, None);
    for t in [&lapsed, &later, &forever] {
        store.create_token(t).unwrap();
    }
    assert_eq!(store.token("t1").unwrap(), Some(lapsed.clone()));
    assert_eq!(store.token("t2").unwrap(), Some(later.clone()));
    assert_eq!(store.token("t3").unwrap(), Some(forever.clone()));
    assert_eq!(
        store.tokens().unwrap(),
        vec![lapsed.clone(), later.clone(), forever]
    );
    let expired: Vec<bool> = store
        .tokens()
        .unwrap()
        .iter()
        .map(|t| t.is_expired(now))
        .collect();
    assert_eq!(expired, [true, false, false]);
    assert!(
        store.revoke_token("t1").unwrap(),
        "an expired token is revoked"
    );
    let revoked = store.token("t1").unwrap().unwrap();
    assert!(revoked.revoked_at.is_some());
    assert_eq!(revoked.expires_at, lapsed.expires_at);
}

/// A credential is written by compare-and-set: the first write only where none is, each later
/// one only on the version read, so of two writers holding one version exactly one wins; and
/// versions never go back, so a writer that read a credential before it was removed (and
/// stored again) cannot write over what came after.
pub fn credentials_are_written_by_compare_and_set(store: &dyn Store) {
    assert_eq!(store.credential("mcp/a").unwrap(), None);
    assert_eq!(store.put_credential("mcp/a", "one", None).unwrap(), Some(1));
    assert_eq!(
        store.put_credential("mcp/a", "other", None).unwrap(),
        None,
        "a second first write won"
    );
    let first = store.credential("mcp/a").unwrap().unwrap();
    assert_eq!(
        first,
        Credential {
            value: "one".into(),
            version: 1
        }
    );
    assert_eq!(
        store.put_credential("mcp/a", "two", Some(1)).unwrap(),
        Some(2)
    );
    assert_eq!(
        store.put_credential("mcp/a", "late", Some(1)).unwrap(),
        None,
        "a stale write won"
    );
    assert_eq!(
        store.credential("mcp/a").unwrap(),
        Some(Credential {
            value: "two".into(),
            version: 2
        })
    );
    assert_eq!(store.credential("mcp/b").unwrap(), None);
    assert!(store.delete_credential("mcp/a").unwrap());
    assert!(!store.delete_credential("mcp/a").unwrap());
    assert_eq!(store.credential("mcp/a").unwrap(), None);
    // A writer holding version 2 from before the removal cannot bring it back.
    assert_eq!(
        store.put_credential("mcp/a", "revived", Some(2)).unwrap(),
        None
    );
    // A new first write goes on counting, so the old version never matches again.
    let again = store
        .put_credential("mcp/a", "three", None)
        .unwrap()
        .unwrap();
    assert!(again > 2, "{again}");
    assert_eq!(
        store.put_credential("mcp/a", "stale", Some(2)).unwrap(),
        None
    );
    assert_eq!(store.credential("mcp/a").unwrap().unwrap().value, "three");
}

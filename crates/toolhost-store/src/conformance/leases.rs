//! Conformance cases for thread leases: one owner at a time, taken over only when expired or
//! dead, and a fence that stops a run that lost its lease from writing.

use super::{text, thread};
use crate::*;

fn claim_of(owner: &str, ttl_ms: Millis) -> LeaseClaim {
    LeaseClaim {
        owner: owner.into(),
        ttl_ms,
        replacing: None,
    }
}

/// A thread has one owner: a second claim is refused and names the owner; the owner may claim
/// again (a renewal); after a release anyone may claim it.
pub fn a_thread_has_one_owner_at_a_time(store: &dyn Store) {
    let t = thread(store);
    assert_eq!(store.lease(&t).unwrap(), None);
    let first = store.claim(&t, &claim_of("run-a", 60_000)).unwrap();
    assert_eq!(first.owner, "run-a");
    assert!(first.expires_at > first.since);
    match store.claim(&t, &claim_of("run-b", 60_000)) {
        Err(StoreError::ThreadOwned { thread, lease }) => {
            assert_eq!(thread, t);
            assert_eq!(lease.owner, "run-a");
            assert_eq!(lease.since, first.since);
        }
        other => panic!("a second owner was let in: {other:?}"),
    }
    let again = store.claim(&t, &claim_of("run-a", 60_000)).unwrap();
    assert_eq!(again.since, first.since, "a renewal keeps the start");
    assert!(
        !store.release(&t, "run-b").unwrap(),
        "only the owner releases"
    );
    assert_eq!(store.lease(&t).unwrap().unwrap().owner, "run-a");
    assert!(store.release(&t, "run-a").unwrap());
    assert_eq!(store.lease(&t).unwrap(), None);
    assert_eq!(
        store.claim(&t, &claim_of("run-b", 60_000)).unwrap().owner,
        "run-b"
    );
    assert!(matches!(
        store.claim("no-such-thread", &claim_of("run-a", 1000)),
        Err(StoreError::ThreadNotFound(_))
    ));
}

/// An expired lease is taken over; a lease whose owner is named dead is taken over at once; the
/// old owner can then neither renew nor write.
pub fn an_expired_or_dead_owner_is_taken_over_and_fenced_out(store: &dyn Store) {
    let t = thread(store);
    store.claim(&t, &claim_of("dead", 1)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    let taken = store.claim(&t, &claim_of("next", 60_000)).unwrap();
    assert_eq!(taken.owner, "next");
    assert!(matches!(
        store.renew(&t, "dead", 60_000),
        Err(StoreError::LeaseLost { .. })
    ));
    let before = store.messages(&t).unwrap().len();
    let fenced = store.apply(
        &t,
        vec![Write::CheckOwner("dead".into()), text(Role::User, "late")],
    );
    assert!(matches!(fenced, Err(StoreError::LeaseLost { .. })));
    assert_eq!(store.messages(&t).unwrap().len(), before, "nothing written");
    store
        .apply(
            &t,
            vec![Write::CheckOwner("next".into()), text(Role::User, "owned")],
        )
        .unwrap();
    assert_eq!(store.messages(&t).unwrap().len(), before + 1);

    // Named dead: taken over before it expires.
    let replaced = store
        .claim(
            &t,
            &LeaseClaim {
                owner: "third".into(),
                ttl_ms: 60_000,
                replacing: Some("next".into()),
            },
        )
        .unwrap();
    assert_eq!(replaced.owner, "third");
    // Naming someone other than the owner does not help.
    let refused = store.claim(
        &t,
        &LeaseClaim {
            owner: "fourth".into(),
            ttl_ms: 60_000,
            replacing: Some("next".into()),
        },
    );
    assert!(matches!(refused, Err(StoreError::ThreadOwned { .. })));
}

/// Renewing extends the lease; a stop request reaches the owner through its renewals and is
/// cleared for the next owner.
pub fn leases_are_renewed_and_carry_stop_requests(store: &dyn Store) {
    let t = thread(store);
    assert!(!store.request_stop(&t).unwrap(), "nobody runs it");
    assert!(matches!(
        store.request_stop("no-such-thread"),
        Err(StoreError::ThreadNotFound(_))
    ));
    let first = store.claim(&t, &claim_of("run-a", 1_000)).unwrap();
    let renewed = store.renew(&t, "run-a", 60_000).unwrap();
    assert!(renewed.expires_at > first.expires_at);
    assert!(!renewed.stop_requested);
    assert!(store.request_stop(&t).unwrap());
    assert!(store.renew(&t, "run-a", 60_000).unwrap().stop_requested);
    store.release(&t, "run-a").unwrap();
    assert!(
        !store
            .claim(&t, &claim_of("run-b", 60_000))
            .unwrap()
            .stop_requested
    );
}

/// Of many claims racing for one thread, exactly one wins.
pub fn racing_claims_have_one_winner(store: &dyn Store) {
    let t = thread(store);
    let winners = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for i in 0..8 {
            let (t, winners) = (&t, &winners);
            scope.spawn(move || {
                if store
                    .claim(t, &claim_of(&format!("run-{i}"), 60_000))
                    .is_ok()
                {
                    winners.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            });
        }
    });
    assert_eq!(winners.into_inner(), 1);
}

/// A thread created with writes has them from its first moment: they are one transaction.
pub fn a_thread_is_created_with_its_first_writes(store: &dyn Store) {
    let t = store
        .create_thread(NewThread {
            agent: "agent".into(),
            writes: vec![
                text(Role::User, "hello"),
                Write::SetVariable(StoredVariable {
                    name: "CITY".into(),
                    secret: false,
                    value: "Oslo".into(),
                }),
            ],
            ..NewThread::default()
        })
        .unwrap();
    assert_eq!(
        store.messages(&t.id).unwrap()[0].content.as_deref(),
        Some("hello")
    );
    assert_eq!(store.variables(&t.id).unwrap()[0].value, "Oslo");
    // A failing write leaves no thread behind.
    let before = store.threads(None).unwrap().len();
    let failed = store.create_thread(NewThread {
        agent: "agent".into(),
        writes: vec![
            text(Role::User, "hello"),
            Write::CompleteCall {
                call_id: "never-journaled".into(),
                result: NewMessage::default(),
            },
        ],
        ..NewThread::default()
    });
    assert!(failed.is_err());
    assert_eq!(store.threads(None).unwrap().len(), before);
}

/// A process keeps many leases in one call: those with a time to live are renewed, the others
/// read; each says whether its owner still holds it and whether a stop was requested.
pub fn many_leases_are_kept_in_one_call(store: &dyn Store) {
    let (a, b, c) = (thread(store), thread(store), thread(store));
    let first = store.claim(&a, &claim_of("run-a", 1_000)).unwrap();
    store.claim(&b, &claim_of("run-b", 60_000)).unwrap();
    store.claim(&c, &claim_of("someone-else", 60_000)).unwrap();
    assert!(store.request_stop(&b).unwrap());
    let held = |thread: &str, owner: &str, ttl_ms| HeldLease {
        thread: thread.to_owned(),
        owner: owner.to_owned(),
        ttl_ms,
    };
    let kept = store
        .keep_leases(&[
            held(&a, "run-a", Some(60_000)),
            held(&b, "run-b", None),
            held(&c, "run-c", Some(60_000)),
        ])
        .unwrap();
    assert_eq!(kept.len(), 3);
    let renewed = kept[0].as_ref().expect("run-a holds its lease");
    assert!(renewed.expires_at >= first.expires_at + 50_000, "renewed");
    assert_eq!(renewed.since, first.since);
    assert!(!renewed.stop_requested);
    assert!(
        kept[1]
            .as_ref()
            .expect("run-b holds its lease")
            .stop_requested
    );
    assert_eq!(kept[2], None, "run-c never held its thread");
    assert_eq!(
        store.lease(&c).unwrap().unwrap().owner,
        "someone-else",
        "a failed renewal changes nothing"
    );
    assert_eq!(store.keep_leases(&[]).unwrap(), Vec::<Option<Lease>>::new());
}

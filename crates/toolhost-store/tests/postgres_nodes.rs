//! Many nodes on one PostgreSQL database: they all come up on a new database at once, share
//! threads through it (one lease, one order of positions), refuse a schema from a newer
//! toolhost, and group the writes of one node into shared commits.

use std::sync::{Arc, Barrier};
use toolhost_store::conformance::fresh_database::FreshDatabase;
use toolhost_store::{
    LeaseClaim, NewMessage, NewThread, PostgresStore, Role, Store, StoreError, Write,
};

fn text(content: &str) -> Write {
    Write::AppendMessage(NewMessage {
        role: Some(Role::User),
        content: Some(content.into()),
        ..NewMessage::default()
    })
}

fn claim(owner: &str) -> LeaseClaim {
    LeaseClaim {
        owner: owner.into(),
        ttl_ms: 60_000,
        replacing: None,
    }
}

#[test]
fn ten_nodes_started_together_on_a_new_database_all_come_up() {
    let database = FreshDatabase::new();
    let url = database.url();
    let barrier = Arc::new(Barrier::new(10));
    let nodes: Vec<PostgresStore> = std::thread::scope(|scope| {
        let started: Vec<_> = (0..10)
            .map(|_| {
                let (url, barrier) = (&url, barrier.clone());
                scope.spawn(move || {
                    barrier.wait();
                    PostgresStore::connect(url)
                })
            })
            .collect();
        started
            .into_iter()
            .map(|node| node.join().unwrap().expect("every node comes up"))
            .collect()
    });
    // Migrated once: one schema row at the version this build writes, and every node works.
    let rows = database
        .client()
        .query("SELECT version FROM toolhost_schema", &[])
        .unwrap();
    assert_eq!(rows.len(), 1);
    for (i, node) in nodes.iter().enumerate() {
        node.create_thread(NewThread {
            agent: format!("agent-{i}"),
            ..NewThread::default()
        })
        .unwrap();
    }
    assert_eq!(nodes[0].threads(None).unwrap().len(), 10);
}

#[test]
fn a_database_from_a_newer_toolhost_is_refused_and_left_as_it_is() {
    let database = FreshDatabase::new();
    drop(database.store());
    let mut client = database.client();
    client
        .batch_execute("UPDATE toolhost_schema SET version = 999")
        .unwrap();
    match PostgresStore::connect(&database.url()) {
        Err(StoreError::SchemaTooNew { found: 999, .. }) => {}
        other => panic!("expected SchemaTooNew, got {other:?}"),
    }
    let version: i64 = client
        .query_one("SELECT version FROM toolhost_schema", &[])
        .unwrap()
        .get(0);
    assert_eq!(version, 999, "the newer database is left as it is");
}

#[test]
fn two_nodes_share_threads_one_owner_and_one_order_of_positions() {
    let database = FreshDatabase::new();
    let (a, b) = (database.store(), database.store());
    let thread = a.create_thread(NewThread::default()).unwrap().id;
    a.claim(&thread, &claim("node-a")).unwrap();
    match b.claim(&thread, &claim("node-b")) {
        Err(StoreError::ThreadOwned { lease, .. }) => assert_eq!(lease.owner, "node-a"),
        other => panic!("node b took a thread node a owns: {other:?}"),
    }
    // Writes from both nodes interleave in one order, which either node reads the same.
    for n in 0..5 {
        a.apply(&thread, vec![text(&format!("a{n}"))]).unwrap();
        b.apply(&thread, vec![text(&format!("b{n}"))]).unwrap();
    }
    let seen_by_a = a.messages(&thread).unwrap();
    let seen_by_b = b.messages(&thread).unwrap();
    assert_eq!(seen_by_a, seen_by_b);
    let contents: Vec<_> = seen_by_b.iter().filter_map(|m| m.content.clone()).collect();
    assert_eq!(
        contents,
        ["a0", "b0", "a1", "b1", "a2", "b2", "a3", "b3", "a4", "b4"]
    );
    assert!(seen_by_b.windows(2).all(|w| w[0].seq < w[1].seq));
    // A node that releases hands the thread over at once.
    assert!(a.release(&thread, "node-a").unwrap());
    assert_eq!(b.claim(&thread, &claim("node-b")).unwrap().owner, "node-b");
}

#[test]
fn positions_follow_commits_across_nodes_so_followers_miss_nothing() {
    // Three nodes append at once while a follower reads "everything after my position" over
    // and over: every message must reach it, each once, in position order.
    let database = FreshDatabase::new();
    let nodes: Vec<PostgresStore> = (0..3).map(|_| database.store()).collect();
    let follower = database.store();
    let threads: Vec<String> = nodes
        .iter()
        .map(|n| n.create_thread(NewThread::default()).unwrap().id)
        .collect();
    const EACH: usize = 60;
    let writing = std::sync::atomic::AtomicUsize::new(nodes.len());
    let seen = std::thread::scope(|scope| {
        for (node, thread) in nodes.iter().zip(&threads) {
            let writing = &writing;
            scope.spawn(move || {
                for n in 0..EACH {
                    node.apply(thread, vec![text(&n.to_string())]).unwrap();
                }
                writing.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            });
        }
        let mut seen = Vec::new();
        let mut position = 0;
        // Follows while the nodes write, then once more after the last write: a message that
        // committed behind the follower's position would never be read.
        loop {
            let done = writing.load(std::sync::atomic::Ordering::SeqCst) == 0;
            for (_, message) in follower.messages_since(position, 1000).unwrap() {
                assert!(message.seq > position);
                position = message.seq;
                seen.push(message.id);
            }
            if done {
                break seen;
            }
        }
    });
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), seen.len(), "a message was seen twice");
    assert_eq!(
        seen.len(),
        EACH * nodes.len(),
        "the follower missed messages that committed behind its position"
    );
}

#[test]
fn concurrent_batches_share_commits_and_fail_alone() {
    let database = FreshDatabase::new();
    toolhost_store::conformance::concurrent_batches_share_commits_and_fail_alone(
        &database.store(),
        20,
    );
}

#[test]
fn an_unreachable_server_or_a_bad_address_is_one_sentence_without_the_password() {
    let refused = PostgresStore::connect("postgres://bob:hunter2@127.0.0.1:1/db").unwrap_err();
    let text = refused.to_string();
    assert!(
        text.contains("could not connect to PostgreSQL at bob@127.0.0.1:1/db"),
        "{text}"
    );
    assert!(text.contains("refused"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    let bad = PostgresStore::connect("postgres://bob:hunter2@host:notaport/db").unwrap_err();
    let text = bad.to_string();
    assert!(
        text.contains("not a PostgreSQL connection string"),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
    let database = FreshDatabase::new();
    let missing = database.url() + "_missing";
    let text = PostgresStore::connect(&missing).unwrap_err().to_string();
    assert!(text.contains("does not exist"), "{text}");
}

#[test]
fn a_node_hears_which_threads_another_commits_to() {
    let database = FreshDatabase::new();
    let (a, b) = (database.store(), database.store());
    let mut heard = b.commits().expect("PostgreSQL tells its nodes of commits");
    let thread = a.create_thread(NewThread::default()).unwrap().id;
    a.apply(&thread, vec![text("hello")]).unwrap();
    // The notices come in commit order; node b reads what they name.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let notice = runtime.block_on(heard.recv()).unwrap();
    assert_eq!(notice.threads.as_deref(), Some(&[thread.clone()][..]));
    assert!(notice.touches(&thread) && !notice.touches("another"));
    assert!(runtime.block_on(heard.recv()).unwrap().touches(&thread));
    assert_eq!(b.messages(&thread).unwrap().len(), 1);
}

#[test]
fn a_node_hears_another_offer_work_and_takes_it() {
    let database = FreshDatabase::new();
    let (a, b) = (database.store(), database.store());
    let mut offers = b
        .work_offers()
        .expect("PostgreSQL tells its nodes of offers");
    let seen = *offers.borrow_and_update();
    let thread = a.create_thread(NewThread::default()).unwrap().id;
    a.apply(&thread, vec![text("hello")]).unwrap();
    a.offer_work(&thread).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(offers.changed()).unwrap();
    assert!(*offers.borrow_and_update() > seen);
    assert_eq!(b.take_offered_work(5).unwrap(), vec![thread]);
    assert_eq!(a.take_offered_work(5).unwrap(), Vec::<String>::new());
}

#[test]
fn reads_and_writes_go_on_when_the_server_ends_every_connection() {
    let database = FreshDatabase::new();
    let store = database.store();
    let thread = store.create_thread(NewThread::default()).unwrap().id;
    store.apply(&thread, vec![text("hello")]).unwrap();
    // The server ends every connection of the store (a restart, an administrator): each is
    // known to be closed only once it is used.
    let mut admin = database.client();
    admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
            &[],
        )
        .unwrap();
    wait_for_no_other_connection(&mut admin);
    // Every reader meets its closed connection at most once, and no read fails for it.
    for _ in 0..16 {
        assert_eq!(store.messages(&thread).unwrap().len(), 1);
        assert_eq!(store.thread(&thread).unwrap().id, thread);
    }
    store.apply(&thread, vec![text("again")]).unwrap();
    assert_eq!(store.messages(&thread).unwrap().len(), 2);
}

/// Waits until the server has ended every other connection to the database (ending one is not
/// instant); the limit is a guard against a hang.
fn wait_for_no_other_connection(admin: &mut postgres::Client) {
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let others: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity
                 WHERE datname = current_database() AND pid <> pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get(0);
        if others == 0 {
            return;
        }
        assert!(std::time::Instant::now() < give_up, "connections not ended");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

//! Work a server accepted and stored is taken up when a server starts, whatever the status of
//! its thread: a message queued on a `done` or `failed` thread just before the process died is
//! answered, once. (The store's conformance suite covers every status, paused ones whose
//! decision was stored included.)

mod common;

use common::*;
use std::sync::Arc;
use std::time::Duration;
use toolhost_runtime::engine::Runtime;
use toolhost_store::{QueueItem, Role, SqliteStore, Store, ThreadStatus, Write};

/// Messages of `thread` with `role` and `content`.
fn count(store: &dyn Store, thread: &str, role: Role, content: &str) -> usize {
    store
        .messages(thread)
        .unwrap()
        .iter()
        .filter(|m| m.role == role && m.content.as_deref() == Some(content))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_messages_of_finished_threads_are_answered_once_after_a_restart() {
    let project = echo_project(
        // The turn played is the number of answers the thread has: each thread's first message
        // gets the first, the queued one the second.
        "{\"text\": \"first answer\"}\n{\"text\": \"later answer\"}\n",
    );
    let data = temp_dir();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&data.join("toolhost.db")).unwrap());
    let runtime = Runtime::load(&project, store.clone()).await.unwrap();
    let mut threads = Vec::new();
    for status in [ThreadStatus::Done, ThreadStatus::Failed] {
        let thread = runtime.start_thread("echo", "hello").await.unwrap();
        runtime.run(&thread.id).await.unwrap();
        // What a process leaves behind when it dies between storing a message (its 202) and
        // running the thread: the message queued, the thread's status as it was.
        store
            .apply(
                &thread.id,
                vec![
                    Write::SetStatus(status),
                    Write::Enqueue(QueueItem::Message {
                        role: Role::User,
                        content: "are you there?".into(),
                    }),
                ],
            )
            .unwrap();
        assert_eq!(store.thread(&thread.id).unwrap().status, status);
        threads.push(thread.id);
    }
    drop(runtime);

    let runtime = Runtime::load(&project, store.clone()).await.unwrap();
    let server =
        toolhost_server::Server::new(Arc::new(runtime), toolhost_server::ServerConfig::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(server.run(listener, async {
        let _ = stopped.await;
    }));
    for thread in &threads {
        // A guard against a hang, not a measure.
        let mut waited = 0;
        while count(store.as_ref(), thread, Role::Assistant, "later answer") == 0 {
            assert!(
                waited < 6000,
                "the queued message of {thread} was not taken up"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
            waited += 1;
        }
        assert!(store.queued(thread).unwrap().is_empty());
        assert_eq!(
            count(store.as_ref(), thread, Role::User, "are you there?"),
            1
        );
    }
    let _ = stop.send(());
    served.await.unwrap().unwrap();
    for thread in &threads {
        assert_eq!(
            count(store.as_ref(), thread, Role::User, "are you there?"),
            1
        );
        assert_eq!(
            count(store.as_ref(), thread, Role::Assistant, "later answer"),
            1
        );
    }
    let _ = std::fs::remove_dir_all(data);
    let _ = std::fs::remove_dir_all(project);
}

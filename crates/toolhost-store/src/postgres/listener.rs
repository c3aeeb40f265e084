//! Hearing other nodes commit: a connection of its own that `LISTEN`s on the channel every
//! writer notifies when its group commits (with the threads it wrote to), and a broadcast of
//! each notice, for followers of what is stored (event streams) to read again at once instead
//! of polling.

use super::conn::Conn;
use super::Target;
use crate::error::StoreResult;
use crate::Committed;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

/// How long one wait for notifications lasts: how soon the listener sees it should end.
const WAIT: Duration = Duration::from_millis(250);

/// `conn`, listening on the writers' channel.
pub(super) fn listen_on(mut conn: Conn) -> StoreResult<Conn> {
    conn.batch("LISTEN toolhost_commits")?;
    Ok(conn)
}

/// Passes notices on until `stopping`; a connection the server closed is replaced (and a notice
/// that anything may have changed goes out then, since a commit may have been missed meanwhile).
pub(super) fn run(
    mut conn: Conn,
    target: &Target,
    commits: &broadcast::Sender<Arc<Committed>>,
    stopping: &AtomicBool,
) {
    while !stopping.load(Ordering::SeqCst) {
        match conn.notifications(WAIT) {
            Ok(payloads) => {
                for payload in payloads {
                    let threads = (!payload.is_empty())
                        .then(|| payload.split('\n').map(str::to_owned).collect());
                    // Nobody listening is no error: the notice is for whoever follows.
                    let _ = commits.send(Arc::new(Committed { threads }));
                }
            }
            Err(_) => loop {
                if stopping.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(WAIT);
                if let Ok(fresh) = target.connect().and_then(listen_on) {
                    conn = fresh;
                    let _ = commits.send(Arc::new(Committed { threads: None }));
                    break;
                }
            },
        }
    }
}

//! Hearing other nodes: a connection of its own that `LISTEN`s on the channel every writer
//! notifies when its group commits (with the threads it wrote to), passing each notice on in a
//! broadcast, for followers of what is stored (event streams) to read again at once instead of
//! polling; and on the channel of work offered to any node, counting the offers heard, for a
//! node with room to take them at once.

use super::conn::Conn;
use super::Target;
use crate::error::StoreResult;
use crate::Committed;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;
use tokio::sync::watch;

/// How long one wait for notifications lasts: how soon the listener sees it should end.
const WAIT: Duration = Duration::from_millis(250);

/// The channel every writer notifies as its group commits.
pub(super) const COMMITS: &str = "toolhost_commits";

/// Where what is heard goes.
pub(super) struct Hearers {
    /// Each commit's notice.
    pub commits: broadcast::Sender<Arc<Committed>>,
    /// The count of offers of work heard.
    pub offers: watch::Sender<u64>,
}

impl Hearers {
    /// Anything may have changed, and work may be on offer (a notice may have been missed).
    fn missed_some(&self) {
        // Nobody listening is no error: the notices are for whoever follows.
        let _ = self.commits.send(Arc::new(Committed { threads: None }));
        self.offers.send_modify(|n| *n += 1);
    }
}

/// `conn`, listening on the writers' channel and on the channel of offered work.
pub(super) fn listen_on(mut conn: Conn) -> StoreResult<Conn> {
    conn.batch(&format!(
        "LISTEN {COMMITS}; LISTEN {}",
        super::work::CHANNEL
    ))?;
    Ok(conn)
}

/// Passes notices on until `stopping`; a connection the server closed is replaced (and a notice
/// that anything may have changed goes out then, since a commit may have been missed meanwhile).
pub(super) fn run(mut conn: Conn, target: &Target, hearers: &Hearers, stopping: &AtomicBool) {
    while !stopping.load(Ordering::SeqCst) {
        match conn.notifications(WAIT) {
            Ok(notices) => {
                for (channel, payload) in notices {
                    if channel != COMMITS {
                        hearers.offers.send_modify(|n| *n += 1);
                        continue;
                    }
                    let threads = (!payload.is_empty())
                        .then(|| payload.split('\n').map(str::to_owned).collect());
                    // Nobody listening is no error: the notice is for whoever follows.
                    let _ = hearers.commits.send(Arc::new(Committed { threads }));
                }
            }
            Err(_) => loop {
                if stopping.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(WAIT);
                if let Ok(fresh) = target.connect().and_then(listen_on) {
                    conn = fresh;
                    hearers.missed_some();
                    break;
                }
            },
        }
    }
}

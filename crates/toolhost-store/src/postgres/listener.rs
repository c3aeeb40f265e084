//! Hearing other nodes commit: a connection of its own that `LISTEN`s on the channel every
//! writer notifies when its group commits, and a counter that grows with each wake-up, for
//! followers of what is stored (event streams) to read again at once instead of polling.

use super::conn::Conn;
use super::Target;
use crate::error::StoreResult;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::watch;

/// How long one wait for notifications lasts: how soon the listener sees it should end.
const WAIT: Duration = Duration::from_millis(250);

/// `conn`, listening on the writers' channel.
pub(super) fn listen_on(mut conn: Conn) -> StoreResult<Conn> {
    conn.batch("LISTEN toolhost_commits")?;
    Ok(conn)
}

/// Counts notifications until `stopping`; a connection the server closed is replaced (and the
/// count grows then too, since a commit may have been missed meanwhile).
pub(super) fn run(
    mut conn: Conn,
    target: &Target,
    commits: &watch::Sender<u64>,
    stopping: &AtomicBool,
) {
    while !stopping.load(Ordering::SeqCst) {
        match conn.notifications(WAIT) {
            Ok(0) => {}
            Ok(_) => commits.send_modify(|n| *n += 1),
            Err(_) => loop {
                if stopping.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(WAIT);
                if let Ok(fresh) = target.connect().and_then(listen_on) {
                    conn = fresh;
                    commits.send_modify(|n| *n += 1);
                    break;
                }
            },
        }
    }
}

//! Making commits durable beside the writer. With `synchronous=FULL`, SQLite flushes the
//! write-ahead log inside `COMMIT`, while it holds the database's write lock: the writer could
//! not apply the next group until the disk had answered, so a flush and the work of a group
//! took turns. The write connection runs `synchronous=NORMAL` instead (SQLite writes the log but
//! does not flush it at each commit), and the flusher, a thread of its own, flushes the log
//! (`fdatasync`) after each commit, while the writer applies the next group. A write hears that
//! it committed only after a flush that began after its commit: what a caller is told is stored
//! is on the disk, as with `FULL`. Commits that wait together share one flush. A lone write with
//! nothing behind it (one thread at work) is flushed by the writer itself, sparing the hand-over.
//!
//! What changes is only when a commit becomes visible: other connections may read it a moment
//! before its flush ends. A power cut in that moment loses it (with everything after it) before
//! any writer heard it was stored; a killed process loses nothing, the log being in the
//! operating system's hands.

use super::writer::{Counters, Job};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

/// A committed group whose writes wait to hear of it.
pub(super) struct Committed {
    jobs: Vec<Box<dyn Job>>,
}

impl Committed {
    pub(super) fn new(jobs: Vec<Box<dyn Job>>) -> Self {
        Self { jobs }
    }

    /// Tells each write of the group how its commit ended.
    pub(super) fn deliver(self, outcome: Result<(), String>) {
        for job in self.jobs {
            job.finish(outcome.clone());
        }
    }
}

/// Where the writer hands its committed groups.
pub(super) enum Flusher {
    /// Nothing to flush (in memory): the writes hear at once.
    None,
    /// A thread that flushes the database's log, then tells the writes.
    Log {
        log: Arc<Log>,
        groups: Option<Sender<Committed>>,
        thread: Option<std::thread::JoinHandle<()>>,
    },
}

impl Flusher {
    /// A flusher of the log of the database at `database`.
    pub(super) fn for_log_of(database: &Path, counters: Arc<Counters>) -> std::io::Result<Self> {
        let mut path = database.as_os_str().to_owned();
        path.push("-wal");
        let log = Arc::new(Log {
            path: PathBuf::from(path),
            file: OnceLock::new(),
            failed: Mutex::new(None),
            counters,
        });
        let (groups, arrive) = channel();
        let flushed = log.clone();
        let thread = std::thread::Builder::new()
            .name("toolhost-store-flush".to_owned())
            .spawn(move || run(&flushed, arrive))?;
        Ok(Self::Log {
            log,
            groups: Some(groups),
            thread: Some(thread),
        })
    }

    /// Hands over a committed group: its writes hear of it once it is durable, while the
    /// caller goes on.
    pub(super) fn flush(&self, committed: Committed) {
        match self {
            Self::None => committed.deliver(Ok(())),
            Self::Log { groups, .. } => {
                if let Some(Err(std::sync::mpsc::SendError(committed))) =
                    groups.as_ref().map(|g| g.send(committed))
                {
                    committed.deliver(Err("the store's flusher has stopped".to_owned()));
                }
            }
        }
    }

    /// Flushes on the caller's thread, then tells the group's writes: for a writer with
    /// nothing else to do.
    pub(super) fn flush_here(&self, committed: Committed) {
        match self {
            Self::None => committed.deliver(Ok(())),
            Self::Log { log, .. } => committed.deliver(log.flush()),
        }
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        if let Self::Log { groups, thread, .. } = self {
            // The flusher ends after the groups already handed over.
            drop(groups.take());
            if let Some(thread) = thread.take() {
                let _ = thread.join();
            }
        }
    }
}

fn run(log: &Log, groups: Receiver<Committed>) {
    while let Ok(first) = groups.recv() {
        let mut waiting = vec![first];
        waiting.extend(groups.try_iter());
        let flushed = log.flush();
        for committed in waiting {
            committed.deliver(flushed.clone());
        }
    }
}

/// The database's write-ahead log, as the flushes see it.
pub(super) struct Log {
    path: PathBuf,
    /// Opened at the first flush: the log exists once a commit has been written to it, and
    /// stays while the store's connections are open.
    file: OnceLock<File>,
    /// Once a flush fails, nothing written before it is known to be on the disk (the kernel may
    /// have dropped the pages it could not write): no later flush can say otherwise.
    failed: Mutex<Option<String>>,
    counters: Arc<Counters>,
}

impl Log {
    /// Flushes the log's data to the disk.
    fn flush(&self) -> Result<(), String> {
        let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(why) = &*failed {
            return Err(why.clone());
        }
        // Under the lock: a flush that fails is seen by every flush after it.
        let flushed = match self.file.get() {
            Some(file) => file.sync_data(),
            None => File::open(&self.path).and_then(|file| {
                let file = self.file.get_or_init(|| file);
                file.sync_data()
            }),
        };
        if flushed.is_ok() {
            self.counters.flushes.fetch_add(1, Ordering::Relaxed);
        }
        flushed.map_err(|e| {
            let why = format!(
                "the commit was written but could not be flushed to the disk ({}): {e}",
                self.path.display()
            );
            *failed = Some(why.clone());
            why
        })
    }
}

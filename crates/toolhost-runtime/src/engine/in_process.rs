//! What the runs of one process share, whichever load of the project started them: a server
//! that loads its project again hands it to the new load (`Runtime::carry_over_from`), so it
//! keeps streaming, stopping, answering and limiting the runs the previous load started.

use super::{ask, call_results, histories, live, ownership, RunRequest};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// How many releases of threads a waiting run may fall behind by before it looks at the store
/// again anyway.
const RELEASES_KEPT: usize = 1024;

/// The runs under way in this process and what travels between them and their callers. Cheap
/// to clone: every part is shared.
#[derive(Clone)]
pub(crate) struct InProcess {
    /// The run of each thread that a run of this process owns: its owner id and abort signal.
    pub(crate) running: Arc<Mutex<HashMap<String, ownership::RunEntry>>>,
    /// The threads the runs let go of, as they do: what wakes a run that waits to claim one
    /// (see `ownership`).
    pub(crate) released: tokio::sync::broadcast::Sender<Arc<str>>,
    /// Live events (streamed answers) of every thread the process runs.
    pub(crate) live: live::LiveHub,
    /// Who answers what the calls of served threads ask while they run.
    pub(crate) answerers: ask::Answerers,
    /// The messages of threads recently run by this process, kept between runs (see
    /// `histories`).
    pub(crate) histories: Arc<histories::Histories>,
    /// Where a call of a sub-agent that does not block hands its child to the run of the
    /// calling thread, by thread id (see `subagent`).
    pub(crate) detached: Arc<Mutex<HashMap<String, tokio::sync::mpsc::UnboundedSender<String>>>>,
    /// Who waits for the result of which call, as a value (see `call_results`).
    pub(crate) call_results: call_results::CallResults,
    /// The settings of the requests under way that brought some, by thread (see `request`).
    pub(crate) requests: Arc<Mutex<HashMap<String, Arc<RunRequest>>>>,
}

impl InProcess {
    /// Nothing under way yet.
    pub(crate) fn new() -> Self {
        Self {
            running: Default::default(),
            released: tokio::sync::broadcast::channel(RELEASES_KEPT).0,
            live: live::LiveHub::new(),
            answerers: ask::Answerers::default(),
            histories: Arc::default(),
            detached: Default::default(),
            call_results: Default::default(),
            requests: Default::default(),
        }
    }
}

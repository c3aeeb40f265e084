//! What a tool may ask of the run it is called in (catalogue SA-7, SA-31): `stop()` stops the run
//! after the operation under way and records which side asked (`stoppedBy`); `forceTurn(side)`
//! ends the current turn of a `dual_ai` session once the call's step is done and gives the next
//! turn to `side`; `setEnv(name, value)` gives the thread (and its active descendants) a
//! variable value when the call's step is stored.
//!
//! These are requests to the run, shared by the calls of one run and read by its step cycle;
//! the run's control also carries the settings its request brought ([`super::request`]) and
//! why the run stops after the call under way ([`super::stop`]).
//! `stoppedBy` is also stored as the thread's value [`STOPPED_BY_KEY`] when the run stops, so
//! it outlives the run. A forced turn takes effect when the step's calls are stored; a crash
//! before that loses it (the turn it was to end goes on), as it loses the step's calls' effects.

use super::ownership::OwnerId;
use super::request::RunRequest;
use super::state::ThreadState;
use super::state_error::StateError;
use super::stop::Stop;
use super::turns::Side;
use super::{Runtime, RuntimeError};
use crate::variables::VariableValue;
use std::sync::{Arc, Mutex};
use toolhost_core::variables::VariableKind;
use toolhost_store::Write;

/// The thread value holding the side that stopped the last run (`"a"` or `"b"`).
pub const STOPPED_BY_KEY: &str = "toolhost.stoppedBy";

/// The requests of one run's calls to the run.
#[derive(Default)]
pub(crate) struct RunControl {
    dual: bool,
    requests: Mutex<Requests>,
    /// The settings the request brought (see [`super::request`]).
    request: Arc<RunRequest>,
}

impl std::fmt::Debug for RunControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunControl")
            .field("dual", &self.dual)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Requests {
    forced: Option<Side>,
    stopped_by: Option<Side>,
    /// Values set and not yet stored.
    env: Vec<VariableValue>,
    /// The secrets set in this run, by name: what the run's results are redacted of besides
    /// the thread's resolved secrets.
    env_secrets: Vec<(String, String)>,
    /// Why the run stops after the call under way (a tool's output middleware failed, or an
    /// after-failure hook ended the run), with the tool.
    failure: Option<(Stop, String)>,
}

impl RunControl {
    /// The control of a run of a thread with two sides (`dual`) or one, made for `request`.
    pub(crate) fn new(dual: bool, request: Arc<RunRequest>) -> Self {
        Self {
            dual,
            requests: Mutex::default(),
            request,
        }
    }

    /// The settings the request brought.
    pub(crate) fn request(&self) -> Arc<RunRequest> {
        self.request.clone()
    }

    fn requests(&self) -> std::sync::MutexGuard<'_, Requests> {
        self.requests.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks for the next turn to be `side`'s; refused on a thread with one side.
    pub(crate) fn force_turn(&self, side: Side) -> Result<(), StateError> {
        if !self.dual {
            return Err(StateError::OneSide);
        }
        self.requests().forced = Some(side);
        Ok(())
    }

    /// Records that `side` stopped the run (the first stop counts).
    pub(crate) fn stopped_by(&self, side: Side) {
        self.requests().stopped_by.get_or_insert(side);
    }

    /// The side a turn was forced to, taken (it applies once).
    pub(crate) fn take_forced(&self) -> Option<Side> {
        self.requests().forced.take()
    }

    /// The side whose call stopped the run, if one did.
    pub(crate) fn stopper(&self) -> Option<Side> {
        self.requests().stopped_by
    }

    /// Asks for `value` to be stored as the thread's (and its active descendants') when the
    /// call's step is stored.
    pub(crate) fn set_env(&self, value: VariableValue) {
        let mut requests = self.requests();
        if value.secret {
            requests
                .env_secrets
                .push((value.name.clone(), value.value.clone()));
        }
        requests.env.push(value);
    }

    /// The values set and not yet stored, taken.
    pub(crate) fn take_env(&self) -> Vec<VariableValue> {
        std::mem::take(&mut self.requests().env)
    }

    /// The secrets set in this run so far.
    pub(crate) fn env_secrets(&self) -> Vec<(String, String)> {
        self.requests().env_secrets.clone()
    }

    /// Records that the run stops after the call of `tool` under way; the first cause counts.
    pub(super) fn stop_after_call(&self, stop: Stop, tool: &str) {
        self.requests()
            .failure
            .get_or_insert((stop, tool.to_owned()));
    }

    /// Why the run stops after the call under way, taken.
    pub(super) fn take_failure(&self) -> Option<(Stop, String)> {
        self.requests().failure.take()
    }

    /// The turn forced and not yet taken.
    pub(crate) fn forced(&self) -> Option<Side> {
        self.requests().forced
    }
}

impl Runtime {
    /// Stores the side whose call stopped the run, if one did, as [`STOPPED_BY_KEY`].
    pub(super) async fn record_stopper(
        &self,
        thread_id: &str,
        owner: &OwnerId,
        control: &RunControl,
    ) -> Result<(), RuntimeError> {
        let Some(side) = control.stopper() else {
            return Ok(());
        };
        let write = Write::SetValue {
            key: STOPPED_BY_KEY.to_owned(),
            value: Some(side.as_str().into()),
        };
        self.commit(thread_id, owner, vec![write]).await?;
        Ok(())
    }
}

/// What a tool asks of its run, through its [`ThreadState`].
impl ThreadState {
    /// Stops the run after the operation under way (the spec's `stop()`): the calls after this
    /// one are answered "not run" and the model is not asked again, while calls already
    /// running finish. Records this call's side as the one that stopped it (`stoppedBy`).
    pub fn stop(&self) {
        self.control().stopped_by(self.side());
        self.execution().abort_signal.abort_gracefully();
    }

    /// Sets a variable of the thread (the spec's `setEnv`): a secret unless `value` is empty
    /// (an empty value is a blank visible entry, catalogue SA-31). It is stored, for this thread
    /// and each of its active descendants that does not declare the name `scoped`, when this
    /// call's step is stored, and is seen by the calls of later steps; this call's result is
    /// already redacted of it. A name that is not a variable name is refused.
    pub fn set_env(&self, name: &str, value: &str) -> Result<(), StateError> {
        let kind = if value.is_empty() {
            VariableKind::Text
        } else {
            VariableKind::Secret
        };
        self.set_env_as(name, value, kind)
    }

    /// [`ThreadState::set_env`] with the variable's kind given (a text value is visible to
    /// prompts; a name any definition declares secret is stored as a secret whatever is given).
    pub fn set_env_as(
        &self,
        name: &str,
        value: &str,
        kind: VariableKind,
    ) -> Result<(), StateError> {
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(StateError::NotAVariableName(name.to_owned()));
        }
        self.control().set_env(VariableValue {
            name: name.to_owned(),
            value: value.to_owned(),
            secret: kind == VariableKind::Secret,
        });
        Ok(())
    }

    /// Ends the current turn of a `dual_ai` session once this call's step is done, and gives
    /// the next turn to `side` (the spec's `forceTurn`); refused on a thread with one side.
    pub fn force_turn(&self, side: Side) -> Result<(), StateError> {
        self.control().force_turn(side)
    }
}

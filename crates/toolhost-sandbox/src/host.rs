//! The one door a run may be given to its host ([`Host`]): a global function
//! `__toolhost(op, text)` that hands an operation's name and its JSON text to the host and
//! returns the host's JSON text, or throws an `Error` with the host's message. Only runs started
//! with [`crate::Sandbox::run_with_host`] have it; `runCode` runs never do.
//!
//! The run lives in a process of its own and its host in toolhost's: the door sends the call
//! over the run's socket ([`Channel`]) and blocks the run until the supervisor answers. The
//! deadline keeps counting meanwhile, except while the host waits for someone else to answer
//! ([`Host::waits_for_someone`]: a person's form, a model's completion), whose time is added to
//! the deadline.

use crate::ipc::{self, FromRun, ToRun};
use crate::result::Execute;
use rquickjs::{Ctx, Exception, Function};
use std::cell::{Cell, RefCell};
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// What a hosted run may ask of its host. Called on the run's supervising thread, in toolhost's
/// process; it may block (the run waits for the answer).
pub trait Host: Send + Sync {
    /// Carries out `op` with the JSON text `args`; returns JSON text, or a message the code
    /// gets as a thrown `Error`.
    fn call(&self, op: &str, args: &str) -> Result<String, String>;

    /// Whether `op` waits for someone outside the run to answer (a person, a model): its time
    /// does not count against the run's deadline, which is for the run's own work.
    fn waits_for_someone(&self, op: &str) -> bool {
        let _ = op;
        false
    }
}

/// The global's name.
pub const HOST_FUNCTION: &str = "__toolhost";

/// The run's end of its socket, in the run's process.
pub(crate) struct Channel {
    stream: RefCell<UnixStream>,
}

impl Channel {
    pub(crate) fn new(stream: UnixStream) -> Self {
        Channel {
            stream: RefCell::new(stream),
        }
    }

    /// Sends a frame that needs no answer.
    pub(crate) fn tell(&self, frame: &FromRun) -> std::io::Result<()> {
        ipc::send(&mut *self.stream.borrow_mut(), frame)
    }

    /// Waits for a prepared run's call; `None` when the supervisor is gone.
    pub(crate) fn job(&self) -> Option<(Execute, bool)> {
        match ipc::receive(&mut *self.stream.borrow_mut(), usize::MAX) {
            Ok(ToRun::Job { execute, hosted }) => Some((execute, hosted)),
            _ => None,
        }
    }

    /// Asks the host for `op` and waits for its answer and the time it spent waiting for
    /// someone else.
    fn ask(&self, op: &str, args: &str) -> Result<(Result<String, String>, Duration), String> {
        let lost = |e: std::io::Error| format!("the host could not be reached: {e}");
        self.tell(&FromRun::Call {
            op: op.to_owned(),
            args: args.to_owned(),
        })
        .map_err(lost)?;
        // The supervisor's frames are its own: no cap.
        match ipc::receive(&mut *self.stream.borrow_mut(), usize::MAX).map_err(lost)? {
            ToRun::Answer { answer, waited_ms } => Ok((
                answer,
                Duration::try_from_secs_f64(waited_ms / 1000.0).unwrap_or_default(),
            )),
            ToRun::Job { .. } => Err("the host answered a call with a job".to_owned()),
        }
    }
}

/// Installs [`HOST_FUNCTION`] on the context's global object. Until `hosted` is set (a warm
/// run gets its host only with its call) the door says there is none.
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    channel: Rc<Channel>,
    hosted: Rc<Cell<bool>>,
    deadline: Rc<Cell<Option<Instant>>>,
) -> rquickjs::Result<()> {
    let function = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, op: String, args: String| -> rquickjs::Result<String> {
            if !hosted.get() {
                return Err(Exception::throw_message(
                    &ctx,
                    "the host is not reachable before the call",
                ));
            }
            let (answer, waited) = channel
                .ask(&op, &args)
                .map_err(|message| Exception::throw_message(&ctx, &message))?;
            if let Some(until) = deadline.get() {
                deadline.set(Some(until + waited));
            }
            answer.map_err(|message| Exception::throw_message(&ctx, &message))
        },
    )?;
    function.set_name(HOST_FUNCTION)?;
    ctx.globals().set(HOST_FUNCTION, function)
}

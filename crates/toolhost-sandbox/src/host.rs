//! The one door a run may be given to its host ([`Host`]): a global function
//! `__toolhost(op, text)` that hands an operation's name and its JSON text to the host, which
//! reads them into an operation of its own type, and returns the host's answer as JSON text, or
//! throws an `Error` with the text of the host's error. Only runs started
//! with [`crate::Sandbox::run_with_host`] have it; `runCode` runs never do.
//!
//! The run lives in a process of its own and its host in toolhost's: the door sends the call
//! over the run's socket ([`Channel`]) and blocks the run until the supervisor answers. The
//! deadline keeps counting meanwhile, except while the host waits for someone else to answer
//! ([`Host::waits_for_someone`]: a person's form, a model's completion), whose time is added to
//! the deadline.

use crate::ipc::{self, FromRun, ToRun};
use crate::result::{Execute, LogEntry};
use rquickjs::{Ctx, Exception, Function};
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::os::unix::net::UnixStream;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a hosted run may ask of its host: the operations of its door, each read into the host's
/// own type (`Op`) before the host sees it, and the console entries the run writes. Called on
/// the run's supervising thread, in toolhost's process; it may block (the run waits for the
/// answer).
pub trait Host: Send + Sync + 'static {
    /// One operation the run may ask for, with its arguments.
    type Op: Send;
    /// Why an operation was not understood, refused or failed: the code gets its text as a
    /// thrown `Error`.
    type Error: std::fmt::Display;

    /// Reads the operation `name` with the JSON arguments the code passed.
    fn parse(&self, name: &str, args: Value) -> Result<Self::Op, Self::Error>;

    /// Carries out `op`; its answer is what the code's call returns.
    fn call(&self, op: Self::Op) -> Result<Value, Self::Error>;

    /// Whether `op` waits for someone outside the run to answer (a person, a model): its time
    /// does not count against the run's deadline, which is for the run's own work.
    fn waits_for_someone(&self, op: &Self::Op) -> bool {
        let _ = op;
        false
    }

    /// A `console` entry the code wrote during its call, as it writes it (an entry cut at the
    /// log cap, and anything past it, is kept with the result only). The run does not wait for
    /// it to be shown.
    fn log(&self, entry: &LogEntry) {
        let _ = entry;
    }
}

/// A host's door as a run is given it: the host, whatever its types, behind the text the run
/// and its supervisor exchange.
#[derive(Clone)]
pub struct HostDoor(Arc<dyn Door>);

impl HostDoor {
    /// The door to `host`.
    pub fn new<H: Host>(host: Arc<H>) -> Self {
        HostDoor(host)
    }

    /// Answers one call of the code: the JSON text of the answer or the text of the error, and
    /// how long the host waited for someone else.
    pub(crate) fn answer(&self, name: &str, args: &str) -> (Result<String, String>, Duration) {
        self.0.answer(name, args)
    }

    /// Hands a console entry to the host.
    pub(crate) fn log(&self, entry: &LogEntry) {
        self.0.log(entry);
    }
}

/// [`Host`] with its types erased: what the supervisor calls.
trait Door: Send + Sync {
    fn answer(&self, name: &str, args: &str) -> (Result<String, String>, Duration);
    fn log(&self, entry: &LogEntry);
}

impl<H: Host> Door for H {
    fn answer(&self, name: &str, args: &str) -> (Result<String, String>, Duration) {
        // The door's own JavaScript sends `JSON.stringify` of the arguments: text that is not
        // JSON comes from code that called the global itself.
        let args: Value = match serde_json::from_str(args) {
            Ok(args) => args,
            Err(e) => {
                return (
                    Err(format!("{name}: the arguments are not JSON: {e}")),
                    Duration::ZERO,
                )
            }
        };
        let op = match self.parse(name, args) {
            Ok(op) => op,
            Err(e) => return (Err(e.to_string()), Duration::ZERO),
        };
        let since = self.waits_for_someone(&op).then(Instant::now);
        let answer = self
            .call(op)
            .map(|value| value.to_string())
            .map_err(|e| e.to_string());
        (answer, since.map(|s| s.elapsed()).unwrap_or_default())
    }

    fn log(&self, entry: &LogEntry) {
        Host::log(self, entry);
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

//! The one door a run may be given to its host ([`Host`]): a global function
//! `__toolhost(op, text)` that hands an operation's name and its JSON text to the host and
//! returns the host's JSON text, or throws an `Error` with the host's message. Only runs started
//! with [`crate::Sandbox::run_with_host`] have it; `runCode` runs never do.
//!
//! The call blocks the run's thread while the host works (the run has that thread to itself);
//! the deadline keeps counting meanwhile, except while the host waits for someone else to answer
//! ([`Host::waits_for_someone`]: a person's form, a model's completion), whose time is added to
//! the deadline; termination is seen when the call returns.

use rquickjs::{Ctx, Exception, Function};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// What a hosted run may ask of its host. Called on the run's own thread; it may block.
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

/// Installs [`HOST_FUNCTION`] on the context's global object, calling the host in `slot` (a
/// warm run gets its host only with its call; until then the door says there is none).
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    slot: Rc<RefCell<Option<Arc<dyn Host>>>>,
    deadline: Rc<std::cell::Cell<Option<std::time::Instant>>>,
) -> rquickjs::Result<()> {
    let function = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, op: String, args: String| -> rquickjs::Result<String> {
            let host = slot.borrow().clone();
            let Some(host) = host else {
                return Err(Exception::throw_message(
                    &ctx,
                    "the host is not reachable before the call",
                ));
            };
            let waited = host.waits_for_someone(&op).then(std::time::Instant::now);
            let answer = host.call(&op, &args);
            if let (Some(since), Some(until)) = (waited, deadline.get()) {
                deadline.set(Some(until + since.elapsed()));
            }
            answer.map_err(|message| Exception::throw_message(&ctx, &message))
        },
    )?;
    function.set_name(HOST_FUNCTION)?;
    ctx.globals().set(HOST_FUNCTION, function)
}

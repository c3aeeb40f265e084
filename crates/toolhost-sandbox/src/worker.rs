//! One run, start to result, in the run's own process (see [`crate::process`]): a fresh runtime
//! and context, the limits, the module, the call, the job queue, the result.

use crate::console::{self, LogBuffer};
use crate::convert::{self, FromJsError};
use crate::host::Channel;
use crate::imports::{Imports, Sources};
use crate::ipc::FromRun;
use crate::result::{Execute, RunCode, RunError, RunResult};
use crate::SandboxLimits;
use rquickjs::context::intrinsic;
use rquickjs::function::Args;
use rquickjs::promise::PromiseState;
use rquickjs::FromJs as _;
use rquickjs::{Context, Ctx, Module, Object, Persistent, Promise, Runtime, Type, Value};
use serde_json::Value as Json;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Instant;

/// How much of a thrown value that is not an Error its message shows.
const SHOWN_THROWN_CHARS: usize = 1_000;

/// The name of the main module (in stacks and in import errors); no import may take it.
pub(crate) const MAIN: &str = "<main>";

/// The ECMAScript built-ins a context gets besides the base objects. Left out on purpose: the
/// web's `performance` and `DOMException`. QuickJS's `std` and `os` modules are not built at all.
type Intrinsics = (
    intrinsic::Date,
    intrinsic::Eval,
    intrinsic::RegExpCompiler,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::Proxy,
    intrinsic::MapSet,
    intrinsic::TypedArrays,
    intrinsic::Promise,
    intrinsic::WeakRef,
);

/// Rejected promises that nothing handled yet, each with its reason.
type Rejections = Rc<RefCell<Vec<(Persistent<Value<'static>>, Persistent<Value<'static>>)>>>;

/// When a run makes its call.
pub(crate) enum Start {
    /// As soon as its module is evaluated: the code's own `execute`, with the host's door when
    /// `hosted`.
    Now {
        /// Whether `__toolhost` reaches a host.
        hosted: bool,
    },
    /// Once a job arrives over the channel (a warm run, prepared in advance); no job, no call.
    Later,
}

/// Runs `code` under `limits` in the run's own process, talking to its supervisor over
/// `channel`; the result, or `None` when it was to wait for a job and none came.
pub(crate) fn run(
    limits: &SandboxLimits,
    code: RunCode,
    channel: Rc<Channel>,
    start: Start,
) -> Option<RunResult> {
    let logs = Rc::new(RefCell::new(LogBuffer::new(limits.max_log_bytes)));
    let began = Rc::new(Cell::new(Instant::now()));
    let outcome = execute(limits, code, &channel, &began, &logs, start)?;
    let logs = logs.replace(LogBuffer::new(0)).finish();
    let duration_ms = began.get().elapsed().as_secs_f64() * 1000.0;
    Some(match outcome {
        Ok(result) => RunResult::Success {
            result,
            logs,
            duration_ms,
        },
        Err(error) => RunResult::Error {
            error,
            logs,
            duration_ms,
        },
    })
}

/// A fresh runtime with the limits set, and a context with the built-ins and `console`.
pub(crate) fn fresh(
    limits: &SandboxLimits,
    logs: &Rc<RefCell<LogBuffer>>,
) -> Result<(Runtime, Context), RunError> {
    let engine = |_| RunError::new(RunError::SANDBOX, "QuickJS could not create a runtime");
    let rt = Runtime::new().map_err(engine)?;
    rt.set_memory_limit(limits.memory_bytes);
    rt.set_max_stack_size(limits.max_stack_bytes);
    let context = Context::custom::<Intrinsics>(&rt).map_err(|_| {
        RunError::new(
            RunError::MEMORY,
            format!(
                "a fresh context does not fit in the memory cap of {} bytes",
                limits.memory_bytes
            ),
        )
    })?;
    context
        .with(|ctx| console::install(&ctx, logs))
        .map_err(|_| RunError::new(RunError::MEMORY, "`console` does not fit in the memory cap"))?;
    Ok((rt, context))
}

/// The run: `None` when it was to wait for a job and none came.
fn execute(
    limits: &SandboxLimits,
    mut code: RunCode,
    channel: &Rc<Channel>,
    began: &Rc<Cell<Instant>>,
    logs: &Rc<RefCell<LogBuffer>>,
    start: Start,
) -> Option<Result<Json, RunError>> {
    let (rt, context) = match fresh(limits, logs) {
        Ok(fresh) => fresh,
        Err(e) => return wait_then(start, channel, began, Err(e)),
    };
    let hosted = Rc::new(Cell::new(false));
    // The deadline counts from the start of the preparation, then again from the call.
    let deadline: Rc<Cell<Option<Instant>>> =
        Rc::new(Cell::new(limits.deadline.map(|d| began.get() + d)));
    // `runCode` runs have no door at all; a warm run learns with its call whether its door
    // reaches a host.
    let door = !matches!(start, Start::Now { hosted: false });
    let installed = !door
        || context
            .with(|ctx| {
                crate::host::install(
                    &ctx,
                    Rc::clone(channel),
                    Rc::clone(&hosted),
                    Rc::clone(&deadline),
                )
            })
            .is_ok();
    if !installed {
        let e = RunError::new(
            RunError::MEMORY,
            "the host's door does not fit in the memory cap",
        );
        return wait_then(start, channel, began, Err(e));
    }
    // Set by the interrupt handler once it stopped the code at the deadline.
    let stop = Rc::new(Cell::new(false));
    let seen = Rc::clone(&stop);
    let until = Rc::clone(&deadline);
    // Termination is the supervisor's: it kills the process. The deadline is seen here first,
    // so that the error can say where the code was; the supervisor kills what does not stop.
    rt.set_interrupt_handler(Some(Box::new(move || {
        if until.get().is_some_and(|d| Instant::now() >= d) {
            seen.set(true);
        }
        seen.get()
    })));
    let names: Vec<String> = code.imports.keys().cloned().collect();
    rt.set_loader(
        Imports::new(names),
        Sources(std::mem::take(&mut code.imports)),
    );
    let rejections: Rejections = Rc::default();
    let tracked = Rc::clone(&rejections);
    rt.set_host_promise_rejection_tracker(Some(Box::new(
        move |ctx: Ctx<'_>, promise: Value<'_>, reason: Value<'_>, handled: bool| {
            let mut list = tracked.borrow_mut();
            if handled {
                list.retain(|(p, _)| p.clone().restore(&ctx).map_or(true, |p| p != promise));
            } else {
                list.push((
                    Persistent::save(&ctx, promise),
                    Persistent::save(&ctx, reason),
                ));
            }
        },
    )));
    let outcome = context.with(|ctx| {
        let mut run = Run {
            ctx: ctx.clone(),
            limits,
            stop: &stop,
        };
        let prepared = run.prepare(&code);
        // The call: now, or when a job comes.
        let call = match start {
            Start::Now { hosted } => Some((code.execute.clone(), hosted)),
            Start::Later => channel.job(),
        };
        let outcome = call.map(|(execute, with_host)| {
            // Entries are sent as they are written from the call on: a warm run's supervisor
            // reads nothing while it waits for the job (the preparation's are in the buffer).
            logs.borrow_mut().relay_to(Rc::clone(channel));
            hosted.set(with_host);
            began.set(Instant::now());
            deadline.set(limits.deadline.map(|d| began.get() + d));
            let _ = channel.tell(&FromRun::Started);
            prepared.and_then(|(namespace, evaluated)| {
                run.call(namespace, evaluated, &execute, &rejections)
            })
        });
        // Persistent values must be gone before the runtime is freed, whatever happened.
        rejections.borrow_mut().clear();
        outcome
    });
    rt.set_host_promise_rejection_tracker(None);
    drop(context);
    drop(rt);
    outcome
}

/// A run that failed before its module could be prepared: it still waits for its job (a warm
/// run's caller learns why from the result), then ends with `failed`.
fn wait_then(
    start: Start,
    channel: &Channel,
    began: &Rc<Cell<Instant>>,
    failed: Result<Json, RunError>,
) -> Option<Result<Json, RunError>> {
    if let Start::Later = start {
        channel.job()?;
        began.set(Instant::now());
    }
    let _ = channel.tell(&FromRun::Started);
    Some(failed)
}

struct Run<'a, 'js> {
    ctx: Ctx<'js>,
    limits: &'a SandboxLimits,
    /// Whether the interrupt handler stopped the code at its deadline.
    stop: &'a Cell<bool>,
}

impl<'js> Run<'_, 'js> {
    /// Sets the globals, evaluates the module and finds the export the code asks for; returns
    /// the export and the promise of the module's evaluation.
    fn prepare(&mut self, code: &RunCode) -> Result<(Value<'js>, Promise<'js>), RunError> {
        let ctx = self.ctx.clone();
        for (name, value) in &code.globals {
            let value = convert::to_js(&ctx, value).map_err(|e| self.failed(e))?;
            ctx.globals()
                .set(name.as_str(), value)
                .map_err(|e| self.failed(e))?;
        }
        let declared =
            Module::declare(ctx.clone(), MAIN, code.source.as_str()).map_err(|e| self.failed(e))?;
        let (module, evaluated) = declared.eval().map_err(|e| self.failed(e))?;
        self.settle(&evaluated, "the module's top-level code")?;
        let namespace = module.namespace().map_err(|e| self.failed(e))?;
        let name = code.execute.fn_name.as_str();
        let export: Value<'js> = namespace.get(name).map_err(|e| self.failed(e))?;
        if export.as_function().is_none() {
            return Err(self.no_export(&namespace, name, &export));
        }
        Ok((Value::from_object(namespace), evaluated))
    }

    /// Calls the export `execute` names (of the module's namespace) with its arguments and
    /// reads the result.
    fn call(
        &mut self,
        namespace: Value<'js>,
        evaluated: Promise<'js>,
        execute: &Execute,
        rejections: &Rejections,
    ) -> Result<Json, RunError> {
        let ctx = self.ctx.clone();
        let object_prototype: Object<'js> = ctx
            .globals()
            .get::<_, Object<'js>>("Object")
            .and_then(|o| o.get("prototype"))
            .map_err(|e| self.failed(e))?;
        let namespace = namespace
            .into_object()
            .ok_or_else(|| RunError::new(RunError::SANDBOX, "the module has no namespace"))?;
        let name = execute.fn_name.as_str();
        let export: Value<'js> = namespace.get(name).map_err(|e| self.failed(e))?;
        let Some(function) = export.as_function().cloned() else {
            return Err(self.no_export(&namespace, name, &export));
        };
        let mut args = Args::new(ctx.clone(), execute.args.len());
        for arg in &execute.args {
            let value = convert::to_js(&ctx, arg).map_err(|e| self.failed(e))?;
            args.push_arg(value).map_err(|e| self.failed(e))?;
        }
        let returned: Value<'js> = function.call_arg(args).map_err(|e| self.failed(e))?;
        let result = match returned.as_promise() {
            Some(promise) => self.settle(promise, &format!("the promise `{name}` returned"))?,
            None => returned.clone(),
        };
        // Jobs still queued run now, so that their rejections are seen.
        while ctx.execute_pending_job() {}
        if self.stop.get() {
            return Err(self.stopped(None));
        }
        self.unhandled(rejections, &[evaluated.into_value(), returned])?;
        self.json(&object_prototype, result)
    }

    /// Runs jobs until `promise` settles; its value, or what it was rejected with as an error.
    fn settle(&self, promise: &Promise<'js>, what: &str) -> Result<Value<'js>, RunError> {
        loop {
            match promise.state() {
                PromiseState::Pending => {
                    if !self.ctx.execute_pending_job() {
                        if self.stop.get() {
                            return Err(self.stopped(None));
                        }
                        return Err(RunError::new(
                            RunError::NEVER_SETTLED,
                            format!(
                                "{what} never settled: nothing is left to run, and the sandbox \
                                 has no timers or I/O that could settle it later"
                            ),
                        ));
                    }
                }
                PromiseState::Resolved | PromiseState::Rejected => {
                    return match promise.result::<Value<'js>>() {
                        Some(Ok(value)) => Ok(value),
                        Some(Err(e)) => Err(self.failed(e)),
                        None => Err(RunError::new(
                            RunError::SANDBOX,
                            "a settled promise had no result",
                        )),
                    };
                }
            }
        }
    }

    /// The first rejection nothing handled, other than those of `own` (promises the sandbox
    /// itself reads), as an error.
    fn unhandled(&self, rejections: &Rejections, own: &[Value<'js>]) -> Result<(), RunError> {
        let list = std::mem::take(&mut *rejections.borrow_mut());
        for (promise, reason) in list {
            let promise = promise.restore(&self.ctx).ok();
            let reason = reason.restore(&self.ctx).ok();
            if promise.is_some_and(|p| own.contains(&p)) {
                continue;
            }
            let mut error =
                self.thrown(reason.unwrap_or_else(|| Value::new_undefined(self.ctx.clone())));
            if error.name != RunError::MEMORY && error.name != RunError::STACK {
                error.message = format!(
                    "a promise was rejected and nothing handled the rejection: {}: {}",
                    error.name, error.message
                );
                error.name = RunError::UNHANDLED_REJECTION.to_owned();
            }
            return Err(error);
        }
        Ok(())
    }

    fn json(&self, object_prototype: &Object<'js>, result: Value<'js>) -> Result<Json, RunError> {
        match convert::from_js(
            &self.ctx,
            object_prototype,
            result,
            self.limits.max_result_bytes,
        ) {
            Ok(json) => Ok(json),
            Err(FromJsError::NotJson(why)) => Err(RunError::new(
                RunError::NOT_JSON,
                format!("the result cannot be expressed as JSON: {why}"),
            )),
            Err(FromJsError::TooLarge(cap)) => Err(RunError::new(
                RunError::RESULT_SIZE,
                format!("the result's JSON is larger than the result cap of {cap} bytes"),
            )),
            Err(FromJsError::Thrown) => Err(self.failed(rquickjs::Error::Exception)),
        }
    }

    fn no_export(&self, namespace: &Object<'js>, name: &str, export: &Value<'js>) -> RunError {
        let exports: Vec<String> = namespace.keys::<String>().filter_map(Result::ok).collect();
        let found = if export.is_undefined() {
            "no such export".to_owned()
        } else {
            format!("it is a {}", export.type_name())
        };
        RunError::new(
            RunError::NO_EXPORT,
            format!(
                "the module has no function export `{name}` to call ({found}); its exports: {}",
                if exports.is_empty() {
                    "none".to_owned()
                } else {
                    exports.join(", ")
                }
            ),
        )
    }

    /// The error for a failed engine call: the pending exception when there is one.
    fn failed(&self, error: rquickjs::Error) -> RunError {
        match error {
            rquickjs::Error::Exception => self.thrown(self.ctx.catch()),
            rquickjs::Error::Allocation => self.thrown(Value::new_uninitialized(self.ctx.clone())),
            _ if self.stop.get() => self.stopped(None),
            other => RunError::new(RunError::SANDBOX, other.to_string()),
        }
    }

    /// What a thrown value means: a stop of the sandbox's, a limit, or the code's own error.
    fn thrown(&self, value: Value<'js>) -> RunError {
        let stack = value
            .as_object()
            .and_then(|o| o.get::<_, String>("stack").ok())
            .filter(|s| !s.trim().is_empty());
        if self.stop.get() {
            return self.stopped(stack);
        }
        let Some(object) = value.as_object().filter(|_| value.is_error()) else {
            if value.type_of() == Type::Uninitialized {
                // QuickJS throws nothing at all when it cannot even allocate the error.
                return self.memory(None);
            }
            let text = self.shown(&value);
            if self.stop.get() {
                return self.stopped(stack);
            }
            return RunError::new(
                "Error",
                format!("the code threw a value that is not an Error: {text}"),
            );
        };
        let name = object
            .get::<_, String>("name")
            .unwrap_or_else(|_| "Error".to_owned());
        let message = object.get::<_, String>("message").unwrap_or_default();
        let _ = self.ctx.catch();
        // A getter of the error's own (its name or message) may have run into the deadline.
        if self.stop.get() {
            return self.stopped(stack);
        }
        match (name.as_str(), message.as_str()) {
            ("InternalError", "out of memory") => self.memory(stack),
            ("RangeError", "Maximum call stack size exceeded") => RunError {
                name: RunError::STACK.to_owned(),
                message: format!(
                    "the run went over its stack cap of {} bytes (too deep a recursion)",
                    self.limits.max_stack_bytes
                ),
                stack,
            },
            _ => RunError {
                name,
                message,
                stack,
            },
        }
    }

    /// A thrown value that is not an Error, as a person reads it: objects and arrays as JSON,
    /// the rest as text, cut to [`SHOWN_THROWN_CHARS`] characters.
    fn shown(&self, value: &Value<'js>) -> String {
        let text = if value.is_object() {
            self.ctx
                .json_stringify(value.clone())
                .ok()
                .flatten()
                .and_then(|s| s.to_string().ok())
        } else {
            None
        };
        let text = text.unwrap_or_else(|| {
            rquickjs::Coerced::<String>::from_js(&self.ctx, value.clone())
                .map(|c| c.0)
                .unwrap_or_else(|_| value.type_name().to_owned())
        });
        let _ = self.ctx.catch();
        match text.char_indices().nth(SHOWN_THROWN_CHARS) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text,
        }
    }

    fn memory(&self, stack: Option<String>) -> RunError {
        RunError {
            name: RunError::MEMORY.to_owned(),
            message: format!(
                "the run went over its memory cap of {} bytes and was stopped",
                self.limits.memory_bytes
            ),
            stack,
        }
    }

    /// The error of a run its deadline stopped (termination is the supervisor's: it kills).
    fn stopped(&self, stack: Option<String>) -> RunError {
        RunError {
            name: RunError::DEADLINE.to_owned(),
            message: format!(
                "the run passed its deadline of {} ms and was stopped",
                self.limits.deadline.unwrap_or_default().as_millis()
            ),
            stack,
        }
    }
}

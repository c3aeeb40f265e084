//! `toolhost run` and `toolhost resume`: run an agent on a thread, decide what it waits for,
//! continue it.

use super::data::DataArg;
use super::executor::block_on;
use super::open::{check_agent_first, open_checked, open_project};
use super::output::{self, errln, BAD_INPUT, BUSY, INVALID, PAUSED};
use super::progress;
use super::transcript::{print_messages, thread_json};
use super::values::ValueArgs;
use super::waiting::{pending_json, print_how_to_continue, print_pending};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_runtime::engine::{
    describe_owner, RunOutcome, Runtime, RuntimeError, SessionEnd, StopReason, Verdict, Waiting,
};
use toolhost_store::Store;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The project folder.
    dir: PathBuf,
    /// The agent to run (a file in agents/agents/).
    #[arg(long)]
    agent: String,
    #[command(flatten)]
    data: DataArg,
    /// Print the whole thread record as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    values: ValueArgs,
    /// Use this model definition (a file in agents/models/) for every prompt.
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// The user's message.
    message: String,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The project folder.
    dir: PathBuf,
    /// The thread to continue.
    thread_id: String,
    #[command(flatten)]
    data: DataArg,
    /// Print the whole thread record as JSON.
    #[arg(long)]
    json: bool,
    /// Approve the call with this id, which waits for approval.
    #[arg(long, value_name = "CALL_ID", conflicts_with = "deny")]
    approve: Option<String>,
    /// Deny the call with this id; the model is told `--message`.
    #[arg(long, value_name = "CALL_ID")]
    deny: Option<String>,
    /// With --deny: what the model is told.
    #[arg(long, requires = "deny")]
    message: Option<String>,
    /// With --approve: run the call with these arguments instead (validated again).
    #[arg(long, value_name = "JSON", requires = "approve")]
    args: Option<String>,
    /// The decision also holds for later calls of the same tool in this thread.
    #[arg(long)]
    always: bool,
    #[command(flatten)]
    values: ValueArgs,
    /// Use this model definition (a file in agents/models/) for every prompt.
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// When another run owns the thread, wait until it is free and then continue it (without
    /// this, the decision and variables are stored for the owner and the command exits 4).
    #[arg(long)]
    wait: bool,
}

/// How a command runs a thread and what it says when another run owns it.
pub(super) struct Drive<'a> {
    /// Print the whole thread record as JSON.
    pub json: bool,
    /// Wait while another run owns the thread.
    pub wait: bool,
    /// What was stored for the owner, said when another run owns the thread.
    pub stored: &'a str,
    /// The data folder, named in the commands that continue the thread.
    pub data: &'a Path,
}

pub fn run(args: RunArgs) -> ExitCode {
    let checked = match check_agent_first(
        &args.dir,
        &args.data.data,
        &args.agent,
        args.model.as_deref(),
    ) {
        Ok(checked) => checked,
        Err(code) => return code,
    };
    let (store, runtime) = match open_checked(&args.dir, &args.data.data, checked) {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let values = match args.values.read() {
        Ok(v) => v,
        Err(sentence) => {
            output::error(&sentence, None);
            return output::exit(BAD_INPUT);
        }
    };
    match block_on(runtime.start_thread_with(&args.agent, &args.message, values)) {
        Ok(thread) => drive(
            &runtime,
            &store,
            &args.dir,
            &thread.id,
            &Drive {
                json: args.json,
                wait: false,
                stored: "nothing was run",
                data: &args.data.data,
            },
        ),
        Err(e) => {
            output::error("the thread could not be started.", Some(&e));
            output::exit(BAD_INPUT)
        }
    }
}

/// `toolhost resume`: continues a thread from what is stored (after a crash, for example).
pub fn resume(args: ResumeArgs) -> ExitCode {
    let opened = open_project(
        &args.dir,
        &args.data.data,
        Some(&args.thread_id),
        args.model.as_deref(),
    );
    let (store, runtime) = match opened {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    if !args.values.is_empty() {
        let given = args
            .values
            .read()
            .map_err(|sentence| output::error(&sentence, None))
            .and_then(|values| {
                block_on(runtime.set_variables(&args.thread_id, values))
                    .map_err(|e| output::error("the variables were not stored.", Some(&e)))
            });
        if given.is_err() {
            return output::exit(BAD_INPUT);
        }
    }
    if let Err(code) = decide(&runtime, &args) {
        return code;
    }
    let decided = args.approve.is_some() || args.deny.is_some();
    let stored = match (decided, !args.values.is_empty()) {
        (true, true) => "the decision and the variables are stored; the owner takes them up",
        (true, false) => "the decision is stored; the owner takes it up",
        (false, true) => "the variables are stored; the owner takes them up",
        (false, false) => "nothing was run",
    };
    drive(
        &runtime,
        &store,
        &args.dir,
        &args.thread_id,
        &Drive {
            json: args.json,
            wait: args.wait,
            stored,
            data: &args.data.data,
        },
    )
}

/// Records the decision the flags give, if any.
fn decide(runtime: &Runtime, args: &ResumeArgs) -> Result<(), ExitCode> {
    let (call_id, mut verdict) = match (&args.approve, &args.deny) {
        (Some(call), _) => (call, Verdict::approve("cli")),
        (None, Some(call)) => (call, Verdict::deny("cli", args.message.clone())),
        (None, None) => return Ok(()),
    };
    verdict.always = args.always;
    if let Some(text) = &args.args {
        // Read as a model's arguments are: no duplicate keys, no integer rounded.
        let edited = toolhost::parse_tool_args(text).map_err(|e| {
            output::error("--args could not be read.", Some(&e));
            output::exit(BAD_INPUT)
        })?;
        verdict.edited_arguments = Some(edited);
    }
    block_on(runtime.decide(&args.thread_id, call_id, verdict))
        .map(|_| ())
        .map_err(|e| {
            output::error(
                &format!("the decision on call {call_id} was not recorded."),
                Some(&e),
            );
            output::exit(INVALID)
        })
}

/// Runs a thread until its turn ends and prints it.
pub(super) fn drive(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    dir: &Path,
    thread_id: &str,
    how: &Drive<'_>,
) -> ExitCode {
    let as_json = how.json;
    let outcome = block_on(async {
        let shown = tokio::spawn(progress::show(runtime.subscribe()));
        let outcome = if how.wait {
            runtime.run_when_free(thread_id).await
        } else {
            runtime.run(thread_id).await
        };
        shown.abort();
        outcome
    });
    progress::clear();
    if let Err(RuntimeError::ThreadBusy { lease, .. }) = &outcome {
        output::error(
            &format!(
                "thread {thread_id} is running in another process; {}.",
                how.stored
            ),
            Some(&format!(
                "{}; add --wait to wait for it",
                describe_owner(lease)
            )),
        );
        return output::exit(BUSY);
    }
    if as_json {
        if let (Ok(t), Ok(m), Ok(c)) = (
            store.thread(thread_id),
            store.messages(thread_id),
            store.calls(thread_id),
        ) {
            let mut record = thread_json(&t, &m, &c);
            record["pending"] = pending_json(store.as_ref(), thread_id);
            output::json(&record);
        }
    } else if let Ok(messages) = store.messages(thread_id) {
        print_messages(&messages);
    }
    match outcome {
        Ok(RunOutcome::Done(reason)) => {
            // A session ended by its `sessionFail` tool is a failed run.
            let failed = matches!(reason, StopReason::SessionFail(_));
            if !as_json {
                let why = match reason {
                    StopReason::Response => "the agent replied".to_owned(),
                    StopReason::StopTool(t) => format!("stop tool {t} was called"),
                    StopReason::MaxSteps(n) => format!("the step budget of {n} was used up"),
                    StopReason::MaxSessionTurns(n) => {
                        format!("the session had its {n} turns")
                    }
                    StopReason::Stopped => "it was stopped".to_owned(),
                    StopReason::SessionStop(end) | StopReason::SessionFail(end) => {
                        session_words(&end)
                    }
                };
                let how = if failed { "failed" } else { "done" };
                errln!("thread {thread_id} {how}: {why}");
            }
            if failed {
                output::exit(INVALID)
            } else {
                ExitCode::SUCCESS
            }
        }
        Ok(RunOutcome::Paused(waiting)) => {
            if !as_json {
                print_pending(store.as_ref(), thread_id);
                let what = match waiting {
                    Waiting::Approval(r) => {
                        format!("call {} to {} needs approval", r.call_id, r.tool)
                    }
                    Waiting::Variables { names, .. } => {
                        format!("it needs the variables {}", names.join(", "))
                    }
                };
                errln!("thread {thread_id} paused: {what}");
                let secrets = runtime.secret_names();
                print_how_to_continue(store.as_ref(), dir, how.data, thread_id, &secrets);
            }
            output::exit(PAUSED)
        }
        // Its agent cannot run: nothing was run or stored.
        Err(e @ (RuntimeError::Unsound { .. } | RuntimeError::UnknownAgent { .. })) => {
            output::error(&format!("thread {thread_id} cannot run."), Some(&e));
            output::exit(BAD_INPUT)
        }
        Err(e) => {
            output::error(&format!("thread {thread_id} failed."), Some(&e));
            output::exit(INVALID)
        }
    }
}

/// "session tool T was called: MESSAGE (attachments: ...)", for a session binding's end.
pub(super) fn session_words(end: &SessionEnd) -> String {
    let mut words = format!("session tool {} was called", end.tool);
    if let Some(message) = &end.message {
        words.push_str(&format!(": {message}"));
    }
    if !end.attachments.is_empty() {
        words.push_str(&format!(" (attachments: {})", end.attachments.join(", ")));
    }
    words
}

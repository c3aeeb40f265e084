//! `toolhost run` and `toolhost resume`: run an agent on a thread, decide what it waits for,
//! continue it.

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
use toolhost_runtime::mcp::Vault;
use toolhost_runtime::variables::secrets::SecretKey;
use toolhost_store::{SqliteStore, Store};

/// Where threads are kept unless `--data` says otherwise.
pub const DEFAULT_DATA_DIR: &str = ".toolhost";

#[derive(Debug, Args)]
pub struct DataArg {
    /// The data folder (created if missing); its toolhost.db holds every thread. `:memory:`
    /// keeps everything in memory for this one command: the same semantics, nothing on disk.
    #[arg(long, default_value = DEFAULT_DATA_DIR)]
    pub(super) data: PathBuf,
}

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

/// `--data :memory:`: an ephemeral store that lives as long as the command.
pub const EPHEMERAL: &str = ":memory:";

fn is_ephemeral(data: &Path) -> bool {
    data == Path::new(EPHEMERAL)
}

pub(super) fn open_store(data: &Path) -> Result<Arc<dyn Store>, ExitCode> {
    if is_ephemeral(data) {
        return SqliteStore::in_memory()
            .map(|s| Arc::new(s) as Arc<dyn Store>)
            .map_err(|e| {
                output::error("the in-memory store could not be created.", Some(&e));
                output::exit(INVALID)
            });
    }
    std::fs::create_dir_all(data).map_err(|e| {
        output::error(
            &format!("the data folder {} could not be created.", data.display()),
            Some(&e),
        );
        output::exit(BAD_INPUT)
    })?;
    let store = SqliteStore::open(&data.join("toolhost.db")).map_err(|e| {
        output::error(
            &format!("the store in {} could not be opened.", data.display()),
            Some(&e),
        );
        output::exit(INVALID)
    })?;
    Ok(Arc::new(store))
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

/// Refuses an agent that cannot run (a definition it reaches is missing or did not load, see
/// `Runtime::check_agent`) before the data folder is touched: the project is checked on a
/// scratch in-memory store, so a refused run creates no folder, database or key. The checked
/// runtime (with `--model` applied) is returned for [`open_checked`], so that the project, and
/// the MCP servers it starts, load once.
pub(super) fn check_agent_first(
    dir: &Path,
    data: &Path,
    agent: &str,
    model: Option<&str>,
) -> Result<Runtime, ExitCode> {
    let scratch = SqliteStore::in_memory().map_err(|e| {
        output::error("the in-memory store could not be created.", Some(&e));
        output::exit(INVALID)
    })?;
    let mut runtime = block_on(load_networked(dir, Arc::new(scratch), mcp_vault(data)))?;
    if let Some(model) = model {
        runtime.override_model(model).map_err(|e| {
            output::error(&format!("--model {model} cannot be used."), Some(&e));
            output::exit(BAD_INPUT)
        })?;
    }
    if let Err(e) = runtime.check_agent(agent) {
        // What did not load is often why (an MCP server that could not be reached).
        print_problems(&runtime);
        output::error("the thread could not be started.", Some(&e));
        return Err(output::exit(BAD_INPUT));
    }
    Ok(runtime)
}

/// [`open_project`] for a runtime [`check_agent_first`] loaded: it moves onto the data folder's
/// store instead of loading the project again.
pub(super) fn open_checked(
    dir: &Path,
    data: &Path,
    mut checked: Runtime,
) -> Result<(Arc<dyn Store>, Runtime), ExitCode> {
    let store = open_store(data)?;
    checked.set_store(store.clone());
    let runtime = prepare_runtime(dir, data, checked).ok_or_else(|| output::exit(BAD_INPUT))?;
    Ok((store, runtime))
}

/// What every command that runs a thread starts with: the store (with `thread` in it, when one
/// is named) and the project's runtime on it, with `--model` applied.
pub(super) fn open_project(
    dir: &Path,
    data: &Path,
    thread: Option<&str>,
    model: Option<&str>,
) -> Result<(Arc<dyn Store>, Runtime), ExitCode> {
    let store = open_store(data)?;
    if let Some(id) = thread {
        match store.thread(id) {
            Ok(_) => {}
            Err(toolhost_store::StoreError::ThreadNotFound(_)) => {
                return Err(super::threads::missing_thread(store.as_ref(), id, data));
            }
            Err(e) => {
                output::error(&format!("thread {id} could not be read."), Some(&e));
                return Err(output::exit(INVALID));
            }
        }
    }
    let Some(mut runtime) = block_on(load_runtime(dir, data, store.clone())) else {
        return Err(output::exit(BAD_INPUT));
    };
    if let Some(model) = model {
        if let Err(e) = runtime.override_model(model) {
            output::error(&format!("--model {model} cannot be used."), Some(&e));
            return Err(output::exit(BAD_INPUT));
        }
    }
    Ok((store, runtime))
}

/// Loads and prepares the project on `store`, saying why when it cannot.
pub(super) async fn load_runtime(
    dir: &Path,
    data: &Path,
    store: Arc<dyn Store>,
) -> Option<Runtime> {
    let runtime = load_networked(dir, store, mcp_vault(data)).await.ok()?;
    prepare_runtime(dir, data, runtime)
}

/// The HTTP client that reaches MCP servers at a URL (the environment's proxies apply), or an
/// error already said.
pub(super) fn mcp_http() -> Result<Arc<dyn toolhost_providers::fetch::Fetcher>, ExitCode> {
    toolhost_providers::Network::from_env()
        .map_err(|e| e.to_string())
        .and_then(|network| {
            toolhost_providers::fetch::HttpFetcher::new(
                &network,
                MCP_HTTP_TIMEOUT,
                MCP_HTTP_MAX_BODY,
            )
        })
        .map(|http| Arc::new(http) as Arc<dyn toolhost_providers::fetch::Fetcher>)
        .map_err(|e| {
            output::error("the HTTP client cannot be set up.", Some(&e));
            output::exit(BAD_INPUT)
        })
}

/// Where MCP servers' OAuth grants are kept: the data folder's store, sealed with its secrets
/// key; nothing is opened or created until a grant is kept (a run refused before it starts
/// leaves no folder); none for an ephemeral store.
pub(super) fn mcp_vault(data: &Path) -> Option<Arc<Vault>> {
    if is_ephemeral(data) {
        return None;
    }
    let (folder, db) = (data.to_owned(), data.join("toolhost.db"));
    let exists = db.clone();
    let open = move || {
        std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        let store = SqliteStore::open(&db).map_err(|e| e.to_string())?;
        let key = SecretKey::load_or_create(&folder).map_err(|e| e.to_string())?;
        Ok((Arc::new(store) as Arc<dyn Store>, key))
    };
    Some(Arc::new(Vault::deferred(open, move || exists.is_file())))
}

/// How long an MCP server at a URL may take to send the head of an answer.
const MCP_HTTP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
/// The largest JSON answer read from an MCP server at a URL.
const MCP_HTTP_MAX_BODY: usize = 16 * 1024 * 1024;

/// Loads the project on `store`: HTTP models from the providers' adapters (keys from the process
/// environment), and MCP servers at a URL through the same HTTP client (the environment's
/// proxies apply). Says why when it cannot.
async fn load_networked(
    dir: &Path,
    store: Arc<dyn Store>,
    vault: Option<Arc<Vault>>,
) -> Result<Runtime, ExitCode> {
    let factory = &toolhost_providers::model_from_env;
    // Only a project with MCP servers needs the HTTP client set up for them.
    let loaded = if dir.join("agents").join("mcp").is_dir() {
        Runtime::load_networked(dir, store, factory, mcp_http()?, vault).await
    } else {
        Runtime::load_with(dir, store, factory).await
    };
    loaded.map_err(|e| {
        output::error("the project could not be loaded.", Some(&e));
        output::exit(BAD_INPUT)
    })
}

/// Gives a loaded runtime the data folder's secrets key, the lease length of
/// `TOOLHOST_LEASE_MS` and the project's toolhost.toml settings, and prints its problems.
fn prepare_runtime(dir: &Path, data: &Path, mut runtime: Runtime) -> Option<Runtime> {
    // An ephemeral store's secrets die with it: a key of its own, never written down.
    let key = if is_ephemeral(data) {
        SecretKey::generate()
    } else {
        SecretKey::load_or_create(data)
    };
    let key = match key {
        Ok(key) => key,
        Err(e) => {
            output::error("the secrets key could not be loaded.", Some(&e));
            return None;
        }
    };
    let lease = match std::env::var("TOOLHOST_LEASE_MS") {
        Err(_) => None,
        Ok(text) => match text.trim().parse::<u64>() {
            Ok(ms) if ms >= 30 => Some(std::time::Duration::from_millis(ms)),
            _ => {
                output::error(
                    &format!("TOOLHOST_LEASE_MS is {text:?}; it must be a whole number of milliseconds, at least 30."),
                    None,
                );
                return None;
            }
        },
    };
    runtime.set_secret_key(key);
    if let Some(ttl) = lease {
        runtime.set_lease_ttl(ttl);
    }
    if !apply_project_settings(dir, &mut runtime) {
        return None;
    }
    print_problems(&runtime);
    Some(runtime)
}

/// Says on stderr what of the project did not load, file by file.
fn print_problems(runtime: &Runtime) {
    for problem in runtime.problems() {
        if problem.loaded {
            output::note("warning", &problem.to_string());
        } else {
            output::note("warning", &format!("{problem} (the file was not loaded)"));
        }
    }
}

/// Applies the `[code]`, `[quotas]` and `[fetch]` tables of the project's toolhost.toml, if
/// any; says why and returns false when the file or a setting is wrong.
fn apply_project_settings(dir: &Path, runtime: &mut Runtime) -> bool {
    let config = match super::project_config::load(dir) {
        Ok(config) => config,
        Err(e) => {
            output::error("the project's toolhost.toml could not be read.", Some(&e));
            return false;
        }
    };
    runtime.set_write_quotas(config.quotas.quotas());
    apply_fetch(dir, &config.fetch, runtime) && apply_code_limits(dir, &config.code, runtime)
}

/// Lets tool files fetch from the hosts of the `[fetch]` table, through the providers' HTTP
/// client (the proxies of the environment apply).
fn apply_fetch(
    dir: &Path,
    fetch: &super::project_config::FetchSection,
    runtime: &mut Runtime,
) -> bool {
    if fetch.hosts.is_empty() {
        return true;
    }
    let timeout = std::time::Duration::from_millis(
        fetch
            .timeout_ms
            .unwrap_or(super::project_config::FetchSection::DEFAULT_TIMEOUT_MS),
    );
    let max = fetch
        .max_body_bytes
        .unwrap_or(super::project_config::FetchSection::DEFAULT_MAX_BODY_BYTES);
    let fetcher = toolhost_providers::Network::from_env()
        .map_err(|e| e.to_string())
        .and_then(|network| {
            toolhost_providers::fetch::HttpFetcher::public_only(&network, timeout, max)
        });
    match fetcher {
        Ok(fetcher) => {
            runtime.set_fetch(fetch.hosts.clone(), Arc::new(fetcher));
            true
        }
        Err(e) => {
            output::error(
                &format!(
                    "the [fetch] table of {} cannot be used.",
                    dir.join(super::project_config::FILE_NAME).display()
                ),
                Some(&e),
            );
            false
        }
    }
}

/// Sets the `runCode` limits of the `[code]` table, if any.
fn apply_code_limits(
    dir: &Path,
    code: &super::project_config::CodeSection,
    runtime: &mut Runtime,
) -> bool {
    if !code.is_set() {
        return true;
    }
    if let Some(warm) = code.warm_runtimes {
        runtime.set_warm_runtimes(warm);
    }
    let applied = code.limits().and_then(|(limits, in_flight)| {
        runtime
            .set_code_limits(limits, in_flight)
            .map_err(|e| e.to_string())
    });
    match applied {
        Ok(()) => true,
        Err(e) => {
            output::error(
                &format!(
                    "the [code] limits of {} cannot be used.",
                    dir.join(super::project_config::FILE_NAME).display()
                ),
                Some(&e),
            );
            false
        }
    }
}

/// The command line's one async runtime, made on first use: every part of a command runs its
/// async work there, so what one part starts (a project's MCP connections, the keeper of its
/// leases) lives on for the next, whatever command runs.
pub(super) fn async_runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RUNTIME.get_or_init(|| {
        match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            // Without an I/O driver the runtime cannot start at all: nothing can run.
            Err(e) => {
                output::error("the async runtime could not start.", Some(&e));
                std::process::exit(i32::from(INVALID))
            }
        }
    })
}

/// Runs a future to its end on the command line's runtime, from synchronous code.
pub(super) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    async_runtime().block_on(future)
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

//! Opening a project for a command: its definitions, its models and MCP servers (over the
//! environment's network), its `toolhost.toml` settings, on the data folder's store; every
//! refusal said once, with what to do.

use super::data::{is_ephemeral, is_postgres, mcp_vault, open_store, shared_secret_key};
use super::executor::block_on;
use super::output::{self, BAD_INPUT, INVALID};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use toolhost_runtime::engine::Runtime;
use toolhost_runtime::mcp::Vault;
use toolhost_runtime::variables::secrets::SecretKey;
use toolhost_store::{SqliteStore, Store};

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
            .map_err(|e| e.to_string())
        })
        .map(|http| Arc::new(http) as Arc<dyn toolhost_providers::fetch::Fetcher>)
        .map_err(|e| {
            output::error("the HTTP client cannot be set up.", Some(&e));
            output::exit(BAD_INPUT)
        })
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
        SecretKey::generate().map_err(|e| e.to_string())
    } else if is_postgres(data) {
        shared_secret_key()
    } else {
        SecretKey::load_or_create(data).map_err(|e| e.to_string())
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
                .map_err(|e| e.to_string())
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

//! Tools written in JavaScript or TypeScript (`agents/tools/NAME.js`, `.mjs`, `.ts`), as the
//! spec writes them: `export default defineTool({ description, args: z.object({...}), execute })`.
//!
//! **Loading.** The file (TypeScript stripped of its types, see the `strip` module) and the project
//! files it imports run once in the sandbox with toolhost's own `@standardagents/spec`,
//! `@standardagents/builder` and `zod` (exactly the spec's subset, see `modules/zod.js`); what
//! it declares becomes a blueprint (the JSON Schema of its arguments, description and tenvs at
//! the root) and is checked like any blueprint file: the subset, 7 levels, names. Anything
//! outside the subset, a missing default export or an unknown `defineTool` field is a problem
//! of the file, naming the line where the stack says it happened.
//!
//! **Calls.** Each call runs the tool's module in a fresh sandbox run (QuickJS, the runtime's
//! `runCode` limits, no host capability) and calls `execute(state, args)` with the validated
//! arguments. The runtime keeps runs of each tool prepared in advance (a warm pool,
//! [`crate::engine::Runtime::set_warm_runtimes`]): a call takes one whose modules are already
//! evaluated, and it is used once and replaced, so isolation is that of a fresh run. The `state` reaches the thread through one door (the sandbox's
//! [`Host`](toolhost_sandbox::Host)): storage, files, events, queued tools, `runCode` and the abort signal, with the
//! checks and redaction of every tool's `ThreadState`. A returned string is a successful result;
//! a throw is an error result with the error's name, message and stack.

mod host;
mod imports;
mod strip;

use crate::engine::ThreadState;
use host::serve_while;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use toolhost_core::tool::ToolContext;
use toolhost_core::ToolResult;
use toolhost_sandbox::{Execute, RunCode, RunResult, Sandbox, SandboxLimits, WarmPool};

/// What a call runs: the tool through toolhost's glue.
const CALL: &str = "runTool(tool, args, info)";
const CALL_PARAMS: &str = "args, info";

/// The file extensions of tool files written in JavaScript or TypeScript.
pub const EXTENSIONS: [&str; 3] = ["js", "mjs", "ts"];

/// A loaded JavaScript tool: the modules it runs with, what it declared, and its runs
/// prepared in advance.
#[derive(Debug, Clone)]
pub struct JsTool {
    name: String,
    entry: String,
    modules: Arc<BTreeMap<String, String>>,
    has_args: bool,
    sandbox: Sandbox,
    warm: Arc<Mutex<Option<Arc<WarmPool>>>>,
}

/// What loading a tool file gives: the tool and the blueprint it declared.
pub struct Declared {
    /// The tool, ready to call.
    pub tool: JsTool,
    /// The blueprint (a JSON Schema object with description and tenvs at the root).
    pub blueprint: Value,
}

/// Why a JavaScript or TypeScript tool file does not load.
#[derive(Debug, thiserror::Error)]
pub enum JsLoadError {
    /// The file, or a module it imports, cannot be read or transpiled (what and where).
    #[error("{0}")]
    Modules(String),
    /// The sandbox refused to run it.
    #[error(transparent)]
    Sandbox(#[from] toolhost_sandbox::SandboxError),
    /// Its code threw while it declared the tool (the error, located in the file).
    #[error("{0}")]
    Threw(String),
}

impl JsTool {
    /// Loads the tool file at `path` of the project at `root` as the tool `name`.
    pub fn load(root: &Path, path: &Path, name: &str) -> Result<Declared, JsLoadError> {
        let (modules, entry) = imports::gather(root, path).map_err(JsLoadError::Modules)?;
        let sandbox = Sandbox::new(SandboxLimits::default())?;
        let tool = JsTool {
            name: name.to_owned(),
            entry,
            modules: Arc::new(modules),
            has_args: false,
            sandbox,
            warm: Arc::default(),
        };
        let described = tool
            .sandbox
            .run_to_end(tool.code("describeTool(tool)", "", Vec::new()), None)?;
        let declared = match described {
            RunResult::Success { result, .. } => result,
            RunResult::Error { error, .. } => {
                return Err(JsLoadError::Threw(tool.located(
                    &error.name,
                    &error.message,
                    error.stack.as_deref(),
                )))
            }
        };
        let has_args = declared.get("hasArgs").and_then(Value::as_bool) == Some(true);
        let blueprint = declared.get("blueprint").cloned().unwrap_or(Value::Null);
        Ok(Declared {
            tool: JsTool { has_args, ..tool },
            blueprint,
        })
    }

    /// The sandbox run that evaluates the tool's module and calls `call` (an expression over
    /// `tool`, `args` and `info`).
    fn code(&self, call: &str, params: &str, args: Vec<Value>) -> RunCode {
        // The entry's name is a path of the project, quoted as a JSON (and so JavaScript) string.
        let entry = Value::String(self.entry.clone()).to_string();
        let source = format!(
            "import {{ describeTool, runTool }} from 'toolhost:internal';\nimport tool from {entry};\nexport default ({params}) => {call};\n"
        );
        RunCode {
            source,
            imports: (*self.modules).clone(),
            globals: serde_json::Map::new(),
            execute: Execute {
                fn_name: "default".to_owned(),
                args,
            },
        }
    }

    /// A load error, with the file and line where the stack says it was thrown.
    fn located(&self, name: &str, message: &str, stack: Option<&str>) -> String {
        // The first frame in a file of the project (named from the project folder, so
        // `agents/...`), not one of toolhost's modules (`@standardagents/spec` ends in
        // `agents/` too).
        let at = stack.and_then(|s| {
            s.lines()
                .map(|l| {
                    let inner = l.trim().trim_start_matches("at ");
                    let open = inner.rfind('(').map_or(0, |i| i + 1);
                    inner[open..].trim_end_matches(')').to_owned()
                })
                .find(|at| at.starts_with("agents/"))
        });
        match at {
            Some(at) => format!("{name}: {message} (at {at})"),
            None => format!("{name}: {message}"),
        }
    }

    /// The tool's warm pool under the runtime's sandbox and setting (the defaults for a call
    /// made outside a thread), made on first use; `None` when no run is to be kept prepared.
    fn pool(&self, state: Option<&ThreadState>) -> Option<Arc<WarmPool>> {
        let (sandbox, size) = match state {
            Some(s) => (s.code_runner().sandbox(), s.code_runner().warm()),
            None => (&self.sandbox, crate::engine::DEFAULT_WARM_RUNTIMES),
        };
        if size == 0 {
            return None;
        }
        let mut slot = self.warm.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(pool) = slot.as_ref().filter(|p| p.size() == size) {
            return Some(pool.clone());
        }
        let code = self.code(CALL, CALL_PARAMS, Vec::new());
        let pool = Arc::new(sandbox.warm(code, size).ok()?);
        *slot = Some(pool.clone());
        Some(pool)
    }

    /// Runs one call: `execute(state, args)` with the call's thread behind `state`.
    pub async fn call(&self, args: Value, ctx: ToolContext) -> ToolResult {
        let state = ctx.get::<ThreadState>().cloned();
        let mut info = info_of(state.as_ref(), self.has_args);
        info["idempotencyKey"] = Value::String(ctx.idempotency_key());
        let (door, requests) = host::door();
        let started = match self.pool(state.as_ref()) {
            Some(pool) => pool.run(
                Execute {
                    fn_name: "default".to_owned(),
                    args: vec![args, info],
                },
                Some(door),
            ),
            None => {
                let sandbox = state
                    .as_ref()
                    .map_or(&self.sandbox, |s| s.code_runner().sandbox());
                let code = self.code(CALL, CALL_PARAMS, vec![args, info]);
                sandbox.run_with_host(code, door)
            }
        };
        let handle = match started {
            Ok(handle) => handle,
            Err(e) => return ToolResult::error(format!("tool \"{}\": {e}", self.name)),
        };
        let outcome = serve_while(handle, requests, state.as_ref(), ctx.abort_signal()).await;
        match outcome {
            RunResult::Success { result, .. } => serde_json::from_value::<ToolResult>(result)
                .unwrap_or_else(|e| {
                    ToolResult::error(format!(
                        "tool \"{}\" returned something that is not a ToolResult: {e}",
                        self.name
                    ))
                }),
            RunResult::Error { error, .. } => {
                let mut result = ToolResult::error(format!("{}: {}", error.name, error.message));
                result.stack = error.stack;
                result
            }
        }
    }
}

/// What the tool's `state` knows without asking the host.
fn info_of(state: Option<&ThreadState>, has_args: bool) -> Value {
    match state {
        Some(s) => {
            let execution = s.execution();
            json!({
                "threadId": s.thread_id(),
                "agent": s.agent(),
                "side": execution.side.as_str(),
                "turn": execution.turn,
                "step": execution.step_count,
                "promptPath": execution.prompt_path,
                "env": s.env_all(),
                "hasArgs": has_args,
            })
        }
        None => json!({"threadId": null, "agent": null, "side": "a", "turn": 0, "step": 0,
            "promptPath": [], "env": {}, "hasArgs": has_args}),
    }
}

/// Whether `path` is a tool file written in JavaScript or TypeScript.
pub fn is_js_tool(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.contains(&e))
}

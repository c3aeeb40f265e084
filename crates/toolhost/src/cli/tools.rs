//! `toolhost tools ...`: list, lower, check and combine the tools of a project.

use super::output::{self, outln, BAD_INPUT, INVALID};
use clap::Subcommand;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use toolhost::blueprint::{request_schema, Binding};
use toolhost::names::NameMap;
use toolhost::project::{load_definitions, load_tools, LoadedTool, ProjectError, ProjectTools};
use toolhost::schema::compile_schema;
use toolhost::schema::lower::{lower_response_format, lower_tool, Provider};
use toolhost::tool::CallFailure;
use toolhost::{parse_tool_args, ToolDefinition};
use toolhost_providers::keys::KeyMap;
use toolhost_runtime::engine::process_activities;

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// One line per tool: name, kind, description.
    List {
        /// The project folder (it holds agents/tools/).
        dir: PathBuf,
        /// Print an array of definitions as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The provider declarations of the tools, as a JSON array; dropped guarantees on stderr.
    Schema {
        /// The project folder.
        dir: PathBuf,
        /// openai, openai-strict, anthropic or gemini.
        #[arg(long)]
        provider: Provider,
        /// Only this tool.
        #[arg(long)]
        tool: Option<String>,
    },
    /// Validate arguments for a tool: prints them with defaults applied, or every violation.
    Check {
        /// The project folder.
        dir: PathBuf,
        /// The tool's name.
        name: String,
        /// The arguments, as JSON text.
        args_json: String,
        /// Print the outcome as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The combined request schema {meta, output, calls} of all tools.
    Request {
        /// The project folder.
        dir: PathBuf,
        /// A JSON Schema file for the final output.
        #[arg(long)]
        output_schema: Option<PathBuf>,
        /// The schema as this provider is sent it for a structured reply (openai,
        /// openai-strict, anthropic or gemini); dropped guarantees on stderr.
        #[arg(long)]
        provider: Option<Provider>,
    },
}

pub fn run(cmd: ToolsCommand) -> ExitCode {
    match cmd {
        ToolsCommand::List { dir, json } => list(&dir, json),
        ToolsCommand::Schema {
            dir,
            provider,
            tool,
        } => schema(&dir, provider, tool.as_deref()),
        ToolsCommand::Check {
            dir,
            name,
            args_json,
            json,
        } => check(&dir, &name, &args_json, json),
        ToolsCommand::Request {
            dir,
            output_schema,
            provider,
        } => request(&dir, output_schema.as_deref(), provider),
    }
}

/// Loads the project's tools, bound to its activities, printing problems and notes on stderr.
fn load(dir: &Path) -> Result<ProjectTools, ExitCode> {
    // Blueprints bind to the project's activities: one whose `_activity` is missing is a
    // problem of its file, reported like any other.
    let activities = process_activities(&load_definitions(dir));
    let project = match load_tools(dir, &activities) {
        // A project whose tools all come from MCP servers needs no agents/tools/ folder.
        Err(ProjectError::NoToolsFolder { .. }) if dir.join("agents/mcp").is_dir() => {
            ProjectTools::default()
        }
        loaded => loaded.map_err(|e| {
            output::error("the project's tools could not be read.", Some(&e));
            output::exit(BAD_INPUT)
        })?,
    };
    for tool in &project.tools {
        for w in tool.tool.warnings() {
            output::note("warning", &format!("{}: {w}", tool.path.display()));
        }
    }
    for problem in &project.problems {
        output::error(
            &format!("tool file {} was not loaded.", problem.path.display()),
            Some(&problem.message),
        );
    }
    Ok(project)
}

/// The tools of the project's MCP servers (`agents/mcp/`), with each file or server that did
/// not load said on stderr.
fn load_imported(dir: &Path) -> Result<toolhost_runtime::mcp::McpImport, ExitCode> {
    if !dir.join("agents").join("mcp").is_dir() {
        return Ok(Default::default());
    }
    let http = super::open::mcp_http()?;
    let vault = super::mcp::project_vault(dir, None);
    let mcp = super::executor::block_on(toolhost_runtime::mcp::load_mcp(dir, Some(http), vault));
    for problem in &mcp.problems {
        output::error(
            &format!("MCP server file {} was not loaded.", problem.path.display()),
            Some(&problem.message),
        );
    }
    Ok(mcp)
}

/// Exit 0 when every file loaded, 2 when some did not (the good ones were still printed).
fn status(project: &ProjectTools) -> ExitCode {
    if project.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        output::exit(BAD_INPUT)
    }
}

fn kind(tool: &LoadedTool) -> String {
    let def = tool.tool.definition();
    if def.execution_mode == toolhost::tool::ExecutionMode::Provider {
        return format!(
            "provider ({})",
            def.execution_provider.as_deref().unwrap_or("unnamed")
        );
    }
    if toolhost_runtime::js::is_js_tool(&tool.path) {
        return "javascript".to_owned();
    }
    match &tool.binding {
        Binding::Latent => "latent".to_owned(),
        Binding::Explicit { activity } => format!("explicit (activity {activity})"),
    }
}

fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// One row of `tools list`: a tool's name, kind and description.
struct Row {
    name: String,
    kind: String,
    description: String,
}

fn list(dir: &Path, as_json: bool) -> ExitCode {
    let project = match load(dir) {
        Ok(p) => p,
        Err(code) => return code,
    };
    // Tools of the project's MCP servers, imported as SERVER.TOOL.
    let mcp = match load_imported(dir) {
        Ok(mcp) => mcp,
        Err(code) => return code,
    };
    let imported: Vec<(&str, &toolhost::AnyTool)> = mcp
        .servers
        .iter()
        .flat_map(|s| {
            mcp.tools
                .iter()
                .filter(move |t| t.name().starts_with(&format!("{}.", s.def.name)))
                .map(move |t| (s.def.name.as_str(), t))
        })
        .collect();
    let code = if mcp.problems.is_empty() {
        status(&project)
    } else {
        output::exit(BAD_INPUT)
    };
    if as_json {
        let imported = imported.iter().map(|(server, t)| {
            let mut v = serde_json::to_value(t.definition()).unwrap_or(Value::Null);
            v["kind"] = json!("mcp");
            v["server"] = json!(server);
            v["approval"] = json!(t.approval().is_some());
            v
        });
        let defs: Vec<Value> = project
            .tools
            .iter()
            .map(|t| {
                let mut v = serde_json::to_value(t.tool.definition()).unwrap_or(Value::Null);
                v["kind"] = json!(match &t.binding {
                    Binding::Latent => "latent",
                    Binding::Explicit { .. } => "explicit",
                });
                if let Binding::Explicit { activity } = &t.binding {
                    v["activity"] = json!(activity);
                }
                v["file"] = json!(t.path.display().to_string());
                v
            })
            .chain(imported)
            .collect();
        output::json(&Value::Array(defs));
        return code;
    }
    let rows: Vec<Row> = project
        .tools
        .iter()
        .map(|t| Row {
            name: t.tool.name().to_owned(),
            kind: kind(t),
            description: t.tool.definition().description.clone(),
        })
        .chain(imported.iter().map(|(server, t)| Row {
            name: t.name().to_owned(),
            kind: format!("mcp (server {server})"),
            description: t.definition().description.clone(),
        }))
        .collect();
    if rows.is_empty() {
        outln!("no tools in {}", dir.join("agents/tools").display());
        return code;
    }
    let name_w = rows.iter().map(|r| r.name.len()).max().unwrap_or(4).max(4);
    let kind_w = rows.iter().map(|r| r.kind.len()).max().unwrap_or(4).max(4);
    outln!("{:name_w$}  {:kind_w$}  DESCRIPTION", "NAME", "KIND");
    for r in &rows {
        outln!(
            "{:name_w$}  {:kind_w$}  {}",
            r.name,
            r.kind,
            first_line(&r.description, 72)
        );
    }
    code
}

fn schema(dir: &Path, provider: Provider, only: Option<&str>) -> ExitCode {
    let project = match load(dir) {
        Ok(p) => p,
        Err(code) => return code,
    };
    // Tools of the project's MCP servers are lowered the same way.
    let mcp = match load_imported(dir) {
        Ok(mcp) => mcp,
        Err(code) => return code,
    };
    let imported = mcp.tools.iter().find(|t| Some(t.name()) == only);
    let selected: Vec<&toolhost::AnyTool> = match (only, imported) {
        (Some(_), Some(tool)) => vec![tool],
        (Some(name), None) => match find(&project, dir, name) {
            Ok(t) => vec![&t.tool],
            Err(code) => return code,
        },
        (None, _) => project
            .tools
            .iter()
            .map(|t| &t.tool)
            .chain(&mcp.tools)
            .collect(),
    };
    let names = NameMap::new(provider, selected.iter().map(|t| t.name()));
    for (name, wire) in names.renamed() {
        output::note("note", &format!("{provider} does not accept the name \"{name}\"; it is sent as \"{wire}\" and mapped back"));
    }
    let mut declarations = Vec::new();
    for t in selected {
        let def = t.definition();
        let mut lowered = lower_tool(
            provider,
            names.wire_name(&def.name),
            &def.description,
            &def.parameters,
        );
        for d in &lowered.dropped {
            output::note("note", &format!("{}: {d}", def.name));
        }
        // The same renaming of refused property keys the model adapters apply.
        let keys = KeyMap::new(provider, &def.parameters);
        for r in keys.renamings() {
            output::note("note", &format!("{}: {provider} does not accept the property key \"{}\" at {}; it is sent as \"{}\" and mapped back", def.name, r.key, r.pointer, r.wire));
        }
        keys.rename_declaration(&mut lowered.declaration);
        declarations.push(lowered.declaration);
    }
    output::json(&Value::Array(declarations));
    if mcp.problems.is_empty() {
        status(&project)
    } else {
        output::exit(BAD_INPUT)
    }
}

/// The loaded tool `name`, or an error (exit 2) that says why it is not there.
fn find<'a>(project: &'a ProjectTools, dir: &Path, name: &str) -> Result<&'a LoadedTool, ExitCode> {
    if let Some(t) = project.get(name) {
        return Ok(t);
    }
    if project.problem_for(name).is_some() {
        // The file's own problem was printed by `load`.
        output::error(
            &format!("tool \"{name}\" is defined by a file that did not load."),
            None,
        );
    } else {
        let available: Vec<&str> = project.tools.iter().map(|t| t.tool.name()).collect();
        output::error(
            &format!(
                "there is no tool named \"{name}\" in {}.",
                dir.join("agents/tools").display()
            ),
            Some(&format!(
                "available tools: {}",
                if available.is_empty() {
                    "none".to_owned()
                } else {
                    available.join(", ")
                }
            )),
        );
    }
    Err(output::exit(BAD_INPUT))
}

fn check(dir: &Path, name: &str, args_json: &str, as_json: bool) -> ExitCode {
    let project = match load(dir) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let tool = match find(&project, dir, name) {
        Ok(t) => &t.tool,
        Err(code) => return code,
    };
    let parsed = match parse_tool_args(args_json) {
        Ok(v) => v,
        Err(e) => {
            if as_json {
                output::json(&json!({"valid": false, "error": e.to_string()}));
            } else {
                output::error(
                    &format!("the arguments for \"{name}\" are not valid JSON."),
                    Some(&e.reason),
                );
            }
            return output::exit(INVALID);
        }
    };
    match tool.validate(parsed) {
        Ok(args) => {
            if as_json {
                output::json(&json!({"valid": true, "arguments": args}));
            } else {
                output::json(&args);
            }
            ExitCode::SUCCESS
        }
        Err(CallFailure::InvalidArguments { violations, .. }) => {
            if as_json {
                output::json(&json!({"valid": false, "violations": violations}));
            } else {
                let count = violations.items.len() + violations.more;
                outln!(
                    "{count} violation{} of the arguments for \"{name}\":",
                    if count == 1 { "" } else { "s" }
                );
                for v in &violations.items {
                    let at = if v.pointer.is_empty() {
                        "/"
                    } else {
                        &v.pointer
                    };
                    outln!("  at {at}: {}", v.message);
                }
                if violations.more > 0 {
                    outln!("  and {} more", violations.more);
                }
            }
            output::exit(INVALID)
        }
        Err(other) => {
            output::error(
                &format!("the arguments for \"{name}\" could not be checked."),
                Some(&other),
            );
            output::exit(BAD_INPUT)
        }
    }
}

fn request(dir: &Path, output_schema: Option<&Path>, provider: Option<Provider>) -> ExitCode {
    let project = match load(dir) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let output = match output_schema.map(read_output_schema).transpose() {
        Ok(o) => o,
        Err(code) => return code,
    };
    // Each tool's compiled schema: its `$ref`s inlined, so every call item stands alone.
    let defs: Vec<ToolDefinition> = project
        .tools
        .iter()
        .map(|t| {
            let mut definition = t.tool.definition().clone();
            definition.parameters = t.tool.arguments().schema().clone();
            definition
        })
        .collect();
    let combined = request_schema(&defs, output.as_ref());
    let Some(provider) = provider else {
        output::json(&combined);
        return status(&project);
    };
    // Lowered as the model adapters lower a structured reply's schema.
    let lowered = lower_response_format(provider, "reply", &combined);
    for d in &lowered.dropped {
        output::note("note", &format!("the combined request: {d}"));
    }
    output::json(lowered.parameters().unwrap_or(&combined));
    status(&project)
}

fn read_output_schema(path: &Path) -> Result<Value, ExitCode> {
    let fail = |sentence: String, cause: &dyn std::fmt::Display| {
        output::error(&sentence, Some(cause));
        output::exit(BAD_INPUT)
    };
    let text = toolhost_runtime::files::read_text(path, toolhost_runtime::files::MAX_FILE_BYTES)
        .map_err(|e| {
            fail(
                format!("the output schema {} could not be read.", path.display()),
                &e.reason(),
            )
        })?;
    // Read exactly, as tool files are: a bound past 64 bits is refused, not rounded.
    let raw: Value = toolhost::exact::from_str(&text).map_err(|e| {
        fail(
            format!(
                "the output schema {} could not be read as JSON.",
                path.display()
            ),
            &e,
        )
    })?;
    let compiled = compile_schema("output", "output", &raw).map_err(|e| {
        let issues: Vec<String> = e
            .issues
            .iter()
            .map(|i| format!("at {}: {}", i.pointer, i.reason))
            .collect();
        fail(
            format!(
                "the output schema {} is outside the supported subset.",
                path.display()
            ),
            &issues.join("; "),
        )
    })?;
    Ok(compiled.schema().clone())
}

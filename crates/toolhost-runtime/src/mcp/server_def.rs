//! A configured MCP server: `agents/mcp/NAME.json`.
//!
//! ```json
//! {"command": ["python3", "servers/notes.py"], "env": ["NOTES_DIR"], "cwd": ".",
//!  "trusted": false, "connectTimeoutMs": 10000, "callTimeoutMs": 60000,
//!  "maxCallTimeoutMs": 600000}
//! ```
//! As for process activities, `command` is the program and its arguments as a list (a bare name
//! is looked up on `PATH`, a path with a separator is relative to the project), `env` names the
//! variables of toolhost's own environment the server may see (it sees no others, except
//! `PATH` so that interpreters are found), and `cwd` is a folder inside the project.
//! `trusted` says whether the server's annotations may waive approval (see
//! [`super::imported`]). A field this version does not know is an error naming it.

use serde::Deserialize;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// How long connecting (starting the program and the protocol's handshake) may take.
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 10_000;
/// How long a call may go without an answer or a progress notification.
pub const DEFAULT_CALL_TIMEOUT_MS: u64 = 60_000;
/// How long a call may take at most, progress or not.
pub const DEFAULT_MAX_CALL_TIMEOUT_MS: u64 = 600_000;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Written {
    #[serde(default)]
    command: Option<Vec<String>>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    env: Vec<String>,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    trusted: bool,
    #[serde(default)]
    connect_timeout_ms: Option<u64>,
    #[serde(default)]
    call_timeout_ms: Option<u64>,
    #[serde(default)]
    max_call_timeout_ms: Option<u64>,
}

/// A loaded, checked MCP server definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerDef {
    /// The server's name (its file stem): its tools are imported as `NAME.tool`.
    pub name: String,
    /// The file it came from.
    pub path: PathBuf,
    /// The program (absolute, or a bare name looked up on `PATH`).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Names of variables of toolhost's environment passed through.
    pub env: Vec<String>,
    /// The working folder (absolute).
    pub cwd: PathBuf,
    /// Whether the server's annotations may waive approval.
    pub trusted: bool,
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// How long a call may go without an answer or progress.
    pub call_timeout: Duration,
    /// How long a call may take at most.
    pub max_call_timeout: Duration,
}

impl McpServerDef {
    /// Reads `agents/mcp/NAME.json` (its text); `project` is the root that `cwd` and relative
    /// program paths are resolved against. The error says what is wrong, without the path.
    pub fn parse(name: &str, path: &Path, text: &str, project: &Path) -> Result<Self, String> {
        let written: Written = serde_json::from_str(text)
            .map_err(|e| format!("not a valid MCP server definition: {e}"))?;
        if written.url.is_some() {
            return Err(
                "`url`: MCP servers over HTTP are not supported by this version; give `command` to run the server over standard input and output".to_owned(),
            );
        }
        let command = written.command.ok_or(
            "`command` is missing: the program that runs the server, and its arguments, as a list",
        )?;
        let Some((program, args)) = command.split_first() else {
            return Err("`command` must list the program and its arguments".to_owned());
        };
        if program.trim().is_empty() {
            return Err("`command` starts with an empty program name".to_owned());
        }
        let cwd_rel = written.cwd.as_deref().unwrap_or(".");
        let cwd_path = Path::new(cwd_rel);
        if cwd_path.is_absolute()
            || cwd_path
                .components()
                .any(|c| matches!(c, Component::ParentDir))
        {
            return Err(format!(
                "`cwd` {cwd_rel:?} must be a folder inside the project"
            ));
        }
        let project = std::path::absolute(project).map_err(|e| {
            format!(
                "the project folder {} has no absolute path: {e}",
                project.display()
            )
        })?;
        let program_path = Path::new(program);
        let program = if program_path.components().count() > 1 && !program_path.is_absolute() {
            project.join(program_path)
        } else {
            program_path.to_owned()
        };
        let millis = |field: &str, value: Option<u64>, default: u64| match value {
            Some(0) => Err(format!("`{field}` must be greater than 0")),
            v => Ok(Duration::from_millis(v.unwrap_or(default))),
        };
        let connect_timeout = millis(
            "connectTimeoutMs",
            written.connect_timeout_ms,
            DEFAULT_CONNECT_TIMEOUT_MS,
        )?;
        let call_timeout = millis(
            "callTimeoutMs",
            written.call_timeout_ms,
            DEFAULT_CALL_TIMEOUT_MS,
        )?;
        let max_call_timeout = millis(
            "maxCallTimeoutMs",
            written.max_call_timeout_ms,
            DEFAULT_MAX_CALL_TIMEOUT_MS.max(written.call_timeout_ms.unwrap_or(0)),
        )?;
        if max_call_timeout < call_timeout {
            return Err("`maxCallTimeoutMs` must not be shorter than `callTimeoutMs`".to_owned());
        }
        Ok(Self {
            name: name.to_owned(),
            path: path.to_owned(),
            program,
            args: args.to_vec(),
            env: written.env,
            cwd: project.join(cwd_path),
            trusted: written.trusted,
            connect_timeout,
            call_timeout,
            max_call_timeout,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<McpServerDef, String> {
        McpServerDef::parse(
            "notes",
            Path::new("agents/mcp/notes.json"),
            text,
            Path::new("/p"),
        )
    }

    #[test]
    fn a_command_with_defaults_loads() {
        let def = parse(r#"{"command": ["python3", "servers/notes.py"]}"#).unwrap();
        assert_eq!(def.program, PathBuf::from("python3"));
        assert_eq!(def.args, ["servers/notes.py"]);
        assert_eq!(def.cwd, PathBuf::from("/p/."));
        assert!(!def.trusted);
        assert_eq!(def.call_timeout, Duration::from_secs(60));
        let local = parse(r#"{"command": ["bin/server"], "trusted": true}"#).unwrap();
        assert_eq!(local.program, PathBuf::from("/p/bin/server"));
        assert!(local.trusted);
    }

    #[test]
    fn what_cannot_be_run_is_refused_naming_the_field() {
        let cases = [
            (r#"{"command": []}"#, "`command`"),
            (r#"{}"#, "`command` is missing"),
            (r#"{"command": ["x"], "cwd": "../up"}"#, "`cwd`"),
            (
                r#"{"command": ["x"], "shell": "sh"}"#,
                "unknown field `shell`",
            ),
            (
                r#"{"command": ["x"], "callTimeoutMs": 0}"#,
                "`callTimeoutMs`",
            ),
            (
                r#"{"command": ["x"], "callTimeoutMs": 5000, "maxCallTimeoutMs": 10}"#,
                "`maxCallTimeoutMs`",
            ),
            (r#"{"url": "http://127.0.0.1:1/mcp"}"#, "`url`"),
        ];
        for (text, expected) in cases {
            let err = parse(text).unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }
}

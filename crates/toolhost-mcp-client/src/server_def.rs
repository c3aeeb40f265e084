//! A configured MCP server: `agents/mcp/NAME.json`, run as a program or reached at a URL.
//!
//! ```json
//! {"command": ["python3", "servers/notes.py"], "env": ["NOTES_DIR"], "cwd": ".",
//!  "trusted": false, "connectTimeoutMs": 10000, "callTimeoutMs": 60000,
//!  "maxCallTimeoutMs": 600000}
//! {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}
//! {"url": "https://mcp.example.com/mcp", "oauth": {"scope": "docs:read"}}
//! {"url": "https://mcp.example.com/mcp", "oauth": {"grant": "client_credentials",
//!  "clientId": "toolhost-ci", "clientSecret": "${DOCS_CLIENT_SECRET}",
//!  "issuer": "https://auth.example.com"}}
//! ```
//! As for process activities, `command` is the program and its arguments as a list (a bare name
//! is looked up on `PATH`, a path with a separator is relative to the project), `env` names the
//! variables of toolhost's own environment the server may see (it sees no others, except
//! `PATH` so that interpreters are found), and `cwd` is a folder inside the project. A `url`
//! (http or https, no credentials in it) is reached over MCP's streamable HTTP, with `headers`
//! whose values may name variables as `${NAME}`: a call takes them from its thread's variables
//! (secrets included) and else from toolhost's environment, the listing at load from toolhost's
//! environment. `oauth` has toolhost get OAuth tokens for a server at a URL (see
//! [`super::oauth`]): `grant` (`authorization_code`, the default, or `client_credentials`),
//! `clientId` and `clientSecret` or `privateKey` (`${NAME}` of toolhost's environment; a PKCS#8
//! PEM key signs a JWT instead of sending a secret) of a client registered beforehand with
//! `issuer` (required with a secret or key, which go to that authorization server only),
//! `clientMetadataUrl` (a client ID metadata document), `scope`. `trusted` says whether the
//! server's annotations may waive approval (see the runtime's imported tools). A field this version does
//! not know is an error naming it.

use super::oauth::{GrantType, OAuthDef};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolhost_programs::Located;

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
    headers: BTreeMap<String, String>,
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
    #[serde(default)]
    oauth: Option<WrittenOAuth>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WrittenOAuth {
    #[serde(default)]
    grant: Option<GrantType>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    private_key: Option<String>,
    #[serde(default)]
    client_metadata_url: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    issuer: Option<String>,
}

/// Where a server is: a program toolhost runs, or a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A child process speaking MCP over standard input and output.
    Command {
        /// The program (absolute, or a bare name looked up on `PATH`).
        program: PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// Names of variables of toolhost's environment passed through.
        env: Vec<String>,
        /// The working folder (absolute).
        cwd: PathBuf,
    },
    /// A server reached over MCP's streamable HTTP.
    Url {
        /// The server's MCP endpoint.
        url: String,
        /// Header names and values as written (`${NAME}` stands for a variable's value).
        headers: Vec<(String, String)>,
    },
}

/// A loaded, checked MCP server definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerDef {
    /// The server's name (its file stem): its tools are imported as `NAME.tool`.
    pub name: String,
    /// The file it came from.
    pub path: PathBuf,
    /// Where the server is.
    pub endpoint: Endpoint,
    /// Whether the server's annotations may waive approval.
    pub trusted: bool,
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// How long a call may go without an answer or progress.
    pub call_timeout: Duration,
    /// How long a call may take at most.
    pub max_call_timeout: Duration,
    /// How toolhost gets OAuth tokens for a server at a URL, if it does.
    pub oauth: Option<OAuthDef>,
}

/// The names `${NAME}` in a header value stands for, in order; an unclosed `${` or a name that
/// is not one is an error.
fn placeholders(value: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        let after = &rest[at + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("{value:?} opens `${{` without closing it"))?;
        let name = &after[..end];
        let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!("`${{{name}}}` does not name a variable"));
        }
        names.push(name.to_owned());
        rest = &after[end + 1..];
    }
    Ok(names)
}

/// A `${NAME}` whose variable has no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the variable {name} is not set")]
pub struct MissingVariable {
    /// The variable's name.
    pub name: String,
}

/// `value` (checked by [`McpServerDef::parse`]) with each `${NAME}` replaced by
/// `lookup(NAME)`, or the first name that has no value.
pub fn fill(
    value: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, MissingVariable> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after.find('}').unwrap_or(after.len());
        let name = &after[..end];
        out.push_str(&lookup(name).ok_or_else(|| MissingVariable {
            name: name.to_owned(),
        })?);
        rest = after.get(end + 1..).unwrap_or("");
    }
    out.push_str(rest);
    Ok(out)
}

/// Why an MCP server's definition file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ServerDefError {
    /// Not JSON of a definition's shape.
    #[error("not a valid MCP server definition: {0}")]
    NotADefinition(serde_json::Error),
    /// Both a program and a URL.
    #[error("give `command` (a program toolhost runs) or `url` (a server it reaches), not both")]
    CommandAndUrl,
    /// Neither a program nor a URL.
    #[error("`command` or `url` is missing: the program that runs the server and its arguments as a list, or the URL of its MCP endpoint")]
    NoEndpoint,
    /// `env` or `cwd` for a server at a URL.
    #[error("`env` and `cwd` are for a server toolhost runs (`command`); a server at a `url` gets `headers`")]
    ProgramSettingsForUrl,
    /// `headers` for a program.
    #[error("`headers` are for a server at a `url`; a program gets `env`")]
    HeadersForProgram,
    /// The program or the URL, or what goes with it, cannot be used.
    #[error("{0}")]
    Endpoint(String),
    /// A time limit of 0.
    #[error("`{0}` must be greater than 0")]
    Zero(&'static str),
    /// A longest call shorter than the default call.
    #[error("`maxCallTimeoutMs` must not be shorter than `callTimeoutMs`")]
    MaxBelowCall,
    /// `oauth` for a program.
    #[error("`oauth` is for a server at a `url`")]
    OAuthForProgram,
    /// `oauth` with a URL that is not https (nor to this machine).
    #[error("{0}: with `oauth`, tokens would travel in clear")]
    InsecureForOAuth(String),
    /// The `oauth` settings cannot be used.
    #[error("{0}")]
    OAuth(String),
}

impl McpServerDef {
    /// Reads `agents/mcp/NAME.json` (its text); `project` is the root that `cwd` and relative
    /// program paths are resolved against. The error says what is wrong, without the path.
    pub fn parse(
        name: &str,
        path: &Path,
        text: &str,
        project: &Path,
    ) -> Result<Self, ServerDefError> {
        let written: Written =
            serde_json::from_str(text).map_err(ServerDefError::NotADefinition)?;
        let endpoint = match (written.command, written.url) {
            (Some(_), Some(_)) => {
                return Err(ServerDefError::CommandAndUrl);
            }
            (None, None) => {
                return Err(ServerDefError::NoEndpoint);
            }
            (None, Some(url)) => {
                if !written.env.is_empty() || written.cwd.is_some() {
                    return Err(ServerDefError::ProgramSettingsForUrl);
                }
                url_endpoint(url, written.headers).map_err(ServerDefError::Endpoint)?
            }
            (Some(command), None) => {
                if !written.headers.is_empty() {
                    return Err(ServerDefError::HeadersForProgram);
                }
                command_endpoint(command, written.env, written.cwd.as_deref(), project)
                    .map_err(ServerDefError::Endpoint)?
            }
        };
        let millis = |field: &'static str, value: Option<u64>, default: u64| match value {
            Some(0) => Err(ServerDefError::Zero(field)),
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
            return Err(ServerDefError::MaxBelowCall);
        }
        let oauth = match written.oauth {
            None => None,
            Some(_) if matches!(endpoint, Endpoint::Command { .. }) => {
                return Err(ServerDefError::OAuthForProgram)
            }
            Some(o) => {
                if let Endpoint::Url { url, .. } = &endpoint {
                    super::oauth::discovery::secure("`url`", url)
                        .map_err(ServerDefError::InsecureForOAuth)?;
                }
                Some(oauth_def(o).map_err(ServerDefError::OAuth)?)
            }
        };
        Ok(Self {
            name: name.to_owned(),
            path: path.to_owned(),
            endpoint,
            oauth,
            trusted: written.trusted,
            connect_timeout,
            call_timeout,
            max_call_timeout,
        })
    }

    /// The variables the server's headers name, in order, each once.
    pub fn header_variables(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        if let Endpoint::Url { headers, .. } = &self.endpoint {
            for name in headers
                .iter()
                .flat_map(|(_, v)| placeholders(v).unwrap_or_default())
            {
                if !names.contains(&name) {
                    names.push(name);
                }
            }
        }
        names
    }
}

/// Whether `value` is one `${NAME}` and nothing else.
fn only_a_variable(value: &str) -> bool {
    matches!(placeholders(value).as_deref(), Ok([name]) if value == format!("${{{name}}}"))
}

/// The `oauth` table, checked: a secret only with a client id and only from a variable, a
/// client ID metadata document at an https URL, client credentials only with a client id.
fn oauth_def(written: WrittenOAuth) -> Result<OAuthDef, String> {
    let grant = written.grant.unwrap_or(GrantType::AuthorizationCode);
    if let Some(secret) = &written.client_secret {
        if written.client_id.is_none() {
            return Err("`oauth.clientSecret` needs `oauth.clientId`".to_owned());
        }
        if !only_a_variable(secret) {
            return Err("`oauth.clientSecret` must be a variable of toolhost's environment (`${NAME}`) and nothing else, never hold the secret or part of it".to_owned());
        }
    }
    if let Some(key) = &written.private_key {
        if written.client_id.is_none() || written.client_secret.is_some() {
            return Err(
                "`oauth.privateKey` needs `oauth.clientId`, and no `clientSecret` with it"
                    .to_owned(),
            );
        }
        if !only_a_variable(key) {
            return Err("`oauth.privateKey` must be a variable of toolhost's environment (`${NAME}`) that holds the PEM key, never hold the key itself".to_owned());
        }
    }
    if let Some(url) = &written.client_metadata_url {
        if !url.starts_with("https://") || url.len() <= "https://".len() {
            return Err(format!(
                "`oauth.clientMetadataUrl` {url:?} must be an https URL"
            ));
        }
    }
    let confidential = written.client_secret.is_some() || written.private_key.is_some();
    match &written.issuer {
        Some(issuer) => super::oauth::discovery::secure("`oauth.issuer`", issuer)?,
        None if confidential => {
            return Err("`oauth.issuer` must name the authorization server the client is registered with: its secret or key goes nowhere else".to_owned())
        }
        None => {}
    }
    if grant == GrantType::ClientCredentials && written.client_id.is_none() {
        return Err(
            "`oauth.grant` \"client_credentials\" needs `oauth.clientId`, and `oauth.clientSecret` or `oauth.privateKey`"
                .to_owned(),
        );
    }
    Ok(OAuthDef {
        grant,
        client_id: written.client_id,
        client_secret: written.client_secret,
        private_key: written.private_key,
        client_metadata_url: written.client_metadata_url,
        scope: written.scope,
        issuer: written.issuer,
    })
}

/// A program toolhost runs, found as a process activity's program is.
fn command_endpoint(
    command: Vec<String>,
    env: Vec<String>,
    cwd: Option<&str>,
    project: &Path,
) -> Result<Endpoint, String> {
    let located = Located::of(&command, cwd, project).map_err(|e| e.to_string())?;
    Ok(Endpoint::Command {
        program: located.program,
        args: located.args,
        env,
        cwd: located.cwd,
    })
}

/// A server at a URL: http or https, no credentials in it, headers whose names are header names
/// and whose `${NAME}`s name variables.
fn url_endpoint(url: String, headers: BTreeMap<String, String>) -> Result<Endpoint, String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(format!(
            "`url` {url:?} is not an absolute http or https URL"
        ));
    };
    if !matches!(scheme, "http" | "https") {
        return Err(format!("`url` {url:?}: only http and https are spoken"));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() {
        return Err(format!("`url` {url:?} names no host"));
    }
    if authority.contains('@') {
        return Err(
            "`url` holds credentials; give them in `headers`, from a variable (`${NAME}`)"
                .to_owned(),
        );
    }
    let mut checked = Vec::with_capacity(headers.len());
    for (name, value) in headers {
        if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(format!("`headers`: {name:?} is not a header name"));
        }
        placeholders(&value).map_err(|e| format!("`headers.{name}`: {e}"))?;
        checked.push((name, value));
    }
    Ok(Endpoint::Url {
        url,
        headers: checked,
    })
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
        .map_err(|e| e.to_string())
    }

    #[test]
    fn a_command_with_defaults_loads() {
        let def = parse(r#"{"command": ["python3", "servers/notes.py"]}"#).unwrap();
        assert_eq!(
            def.endpoint,
            Endpoint::Command {
                program: PathBuf::from("python3"),
                args: vec!["servers/notes.py".to_owned()],
                env: vec![],
                cwd: PathBuf::from("/p/."),
            }
        );
        assert!(!def.trusted);
        assert_eq!(def.call_timeout, Duration::from_secs(60));
        let local = parse(r#"{"command": ["bin/server"], "trusted": true}"#).unwrap();
        assert!(
            matches!(&local.endpoint, Endpoint::Command { program, .. } if program == Path::new("/p/bin/server"))
        );
        assert!(local.trusted);
    }

    #[test]
    fn what_cannot_be_run_is_refused_naming_the_field() {
        let cases = [
            (r#"{"command": []}"#, "`command`"),
            (r#"{}"#, "`command` or `url` is missing"),
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
            (r#"{"url": "ftp://h/mcp"}"#, "only http and https"),
            (r#"{"url": "https://me:pw@h/mcp"}"#, "credentials"),
            (
                r#"{"url": "https://h/mcp", "env": ["X"]}"#,
                "`env` and `cwd`",
            ),
            (
                r#"{"command": ["x"], "headers": {"A": "b"}}"#,
                "`headers` are for",
            ),
            (r#"{"url": "https://h/mcp", "command": ["x"]}"#, "not both"),
            (
                r#"{"url": "https://h/mcp", "headers": {"A": "${B"}}"#,
                "without closing",
            ),
            (
                r#"{"url": "https://h/mcp", "headers": {"A": "${1B}"}}"#,
                "does not name",
            ),
            (
                r#"{"url": "https://h/mcp", "headers": {"A b": "c"}}"#,
                "not a header name",
            ),
        ];
        for (text, expected) in cases {
            let err = parse(text).unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn a_url_with_headers_names_the_variables_they_take() {
        let def = McpServerDef::parse(
            "docs",
            Path::new("agents/mcp/docs.json"),
            r#"{"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}", "X-Team": "${TEAM}-${TOKEN}"}}"#,
            Path::new("/p"),
        )
        .unwrap();
        assert_eq!(def.header_variables(), ["TOKEN", "TEAM"]);
        let values = |name: &str| (name == "TOKEN").then(|| "t0k".to_owned());
        assert_eq!(fill("Bearer ${TOKEN}", &values).unwrap(), "Bearer t0k");
        assert_eq!(fill("${TEAM}-x", &values).unwrap_err().name, "TEAM");
        assert_eq!(fill("no vars $ here", &values).unwrap(), "no vars $ here");
    }

    #[test]
    fn oauth_is_checked_and_secrets_come_only_from_variables() {
        let url = |oauth: &str| format!(r#"{{"url": "https://a.example/mcp", "oauth": {oauth}}}"#);
        let plain = parse(&url("{}")).unwrap();
        assert_eq!(plain.oauth.unwrap().grant, GrantType::AuthorizationCode);
        let cc = parse(&url(
            r#"{"grant": "client_credentials", "clientId": "ci", "privateKey": "${KEY_PEM}", "issuer": "https://as.example"}"#,
        ))
        .unwrap()
        .oauth
        .unwrap();
        assert_eq!(cc.grant, GrantType::ClientCredentials);
        assert_eq!(cc.private_key.as_deref(), Some("${KEY_PEM}"));
        let refused = [
            (r#"{"clientSecret": "${S}"}"#, "needs `oauth.clientId`"),
            (
                r#"{"clientId": "ci", "clientSecret": "hunter2"}"#,
                "never hold the secret",
            ),
            (
                r#"{"clientId": "ci", "privateKey": "-----BEGIN"}"#,
                "never hold the key",
            ),
            (
                r#"{"clientId": "ci", "clientSecret": "${S}", "privateKey": "${K}", "issuer": "https://as.example"}"#,
                "no `clientSecret` with it",
            ),
            (
                r#"{"grant": "client_credentials"}"#,
                "needs `oauth.clientId`",
            ),
            (
                r#"{"clientMetadataUrl": "http://a.example/c.json"}"#,
                "https URL",
            ),
            (r#"{"grant": "implicit"}"#, "unknown variant"),
            (r#"{"scopes": "a"}"#, "unknown field `scopes`"),
        ];
        for (oauth, why) in refused {
            let e = parse(&url(oauth)).unwrap_err();
            assert!(e.contains(why), "{oauth}: {e}");
        }
        let e = parse(r#"{"command": ["x"], "oauth": {}}"#).unwrap_err();
        assert!(e.contains("`oauth` is for a server at a `url`"), "{e}");
        let e = parse(r#"{"url": "http://a.example/mcp", "oauth": {}}"#).unwrap_err();
        assert!(e.contains("tokens would travel in clear"), "{e}");
        assert!(parse(r#"{"url": "http://127.0.0.1:9/mcp", "oauth": {}}"#).is_ok());
    }
}

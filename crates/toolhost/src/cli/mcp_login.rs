//! `toolhost mcp login DIR SERVER` and `toolhost mcp logout DIR SERVER`: a person authorizes
//! toolhost for an MCP server that asks for OAuth (or toolhost gets a client credentials
//! grant), and the grant is kept in the data folder's store, sealed with its secrets key, for
//! every later run; logout forgets it.

use super::data::open_store;
use super::executor::block_on;
use super::open::mcp_http;
use super::output::{self, outln, BAD_INPUT, INVALID};
use serde_json::json;
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use toolhost_mcp_client::oauth::login::login;
use toolhost_runtime::files::{read_text, MAX_FILE_BYTES};
use toolhost_runtime::mcp::{McpServerDef, Vault};
use toolhost_runtime::variables::secrets::SecretKey;

/// How long login waits for the person to authorize.
const PATIENCE: Duration = Duration::from_secs(600);

/// The server `name` of the project in `dir`, as its file defines it.
fn server(dir: &Path, name: &str) -> Result<McpServerDef, ExitCode> {
    let path = dir.join("agents").join("mcp").join(format!("{name}.json"));
    if !path.is_file() {
        output::error(
            &format!("the project has no MCP server named \"{name}\"."),
            Some(&format!(
                "its servers are the files of {}",
                dir.join("agents/mcp").display()
            )),
        );
        return Err(output::exit(BAD_INPUT));
    }
    read_text(&path, MAX_FILE_BYTES)
        .map_err(|e| e.reason())
        .and_then(|text| McpServerDef::parse(name, &path, &text, dir).map_err(|e| e.to_string()))
        .map_err(|why| {
            output::error(&format!("{} cannot be used.", path.display()), Some(&why));
            output::exit(BAD_INPUT)
        })
}

/// The vault of the data folder `data`, created with it if need be.
fn vault(data: &Path) -> Result<Vault, ExitCode> {
    let store = open_store(data)?;
    let key = if super::data::is_postgres(data) {
        super::data::shared_secret_key()
    } else {
        SecretKey::load_or_create(data).map_err(|e| e.to_string())
    };
    let key = key.map_err(|e| {
        output::error("the secrets key could not be loaded.", Some(&e));
        output::exit(INVALID)
    })?;
    Ok(Vault::new(store, key))
}

/// Authorizes toolhost for server `name`; with `as_json` the authorization URL and the result
/// are JSON lines on standard output.
pub(super) fn login_command(dir: &Path, name: &str, data: &Path, as_json: bool) -> ExitCode {
    let (def, vault) = match (server(dir, name), vault(data)) {
        (Ok(def), Ok(vault)) => (def, vault),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let http = match mcp_http() {
        Ok(http) => http,
        Err(code) => return code,
    };
    let mut open = |url: &str| {
        if as_json {
            outln!("{}", json!({"authorize": url}));
        } else {
            outln!("Open this address in a browser to let toolhost use MCP server \"{name}\":");
            outln!("  {url}");
            outln!(
                "(waiting up to {} minutes for the answer)",
                PATIENCE.as_secs() / 60
            );
        }
        let _ = std::io::stdout().flush();
    };
    let vault = Arc::new(vault);
    let done = block_on(login(&def, Arc::clone(&http), &vault, &mut open, PATIENCE));
    match done {
        Ok(grant) => {
            if as_json {
                outln!(
                    "{}",
                    json!({"server": name, "issuer": grant.issuer, "resource": grant.resource,
                           "scope": grant.scope, "expires_at": grant.expires_at,
                           "refreshable": grant.refresh_token.is_some()})
                );
            } else {
                let scope = grant.scope.as_deref().unwrap_or("(none named)");
                outln!(
                    "toolhost may now use MCP server \"{name}\" (authorized by {}, scope {scope}{}).",
                    grant.issuer,
                    if grant.refresh_token.is_some() { ", renewed as needed" } else { "" }
                );
            }
            ExitCode::SUCCESS
        }
        Err(why) => {
            output::error(
                &format!("toolhost could not be authorized for MCP server \"{name}\"."),
                Some(&why),
            );
            output::exit(INVALID)
        }
    }
}

/// Forgets the kept authorization of server `name`.
pub(super) fn logout_command(dir: &Path, name: &str, data: &Path) -> ExitCode {
    if let Err(code) = server(dir, name) {
        return code;
    }
    let vault = match vault(data) {
        Ok(vault) => vault,
        Err(code) => return code,
    };
    match vault.forget(name) {
        Ok(true) => {
            outln!("the authorization of MCP server \"{name}\" is forgotten");
            ExitCode::SUCCESS
        }
        Ok(false) => {
            output::error(
                &format!("no authorization of MCP server \"{name}\" is kept."),
                None,
            );
            output::exit(BAD_INPUT)
        }
        Err(why) => {
            output::error("the store could not be changed.", Some(&why));
            output::exit(INVALID)
        }
    }
}

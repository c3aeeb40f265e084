//! `toolhost.toml` in a project folder: settings for `toolhost serve` that flags override.
//!
//! ```toml
//! data = ".toolhost"                  # the data folder, relative to the project folder
//!
//! [server]
//! listen = "127.0.0.1:7878"
//! allowed_origins = ["https://app.example.com"]
//! request_timeout_ms = 30000
//! max_body_bytes = 1048576
//! ```
//!
//! Every key is optional; an unknown key or a wrong type is an error naming the file and the
//! key, never ignored.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The file's name in a project folder.
pub const FILE_NAME: &str = "toolhost.toml";

/// What `toolhost.toml` holds.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectConfig {
    /// The data folder, relative to the project folder.
    pub data: Option<PathBuf>,
    /// Settings of `toolhost serve`.
    #[serde(default)]
    pub server: ServerSection,
}

/// The `[server]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// Where to listen.
    pub listen: Option<String>,
    /// Browser origins allowed to call the API.
    pub allowed_origins: Option<Vec<String>>,
    /// The time limit of a request until its answer starts, in milliseconds.
    pub request_timeout_ms: Option<u64>,
    /// The largest request body, in bytes.
    pub max_body_bytes: Option<usize>,
}

/// Reads `dir/toolhost.toml`; no file is the same as an empty one.
pub fn load(dir: &Path) -> Result<ProjectConfig, String> {
    let path = dir.join(FILE_NAME);
    if !path.exists() {
        return Ok(ProjectConfig::default());
    }
    let text = toolhost_runtime::files::read_text(&path, 1024 * 1024).map_err(|e| e.to_string())?;
    toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), e.to_string().trim()))
}

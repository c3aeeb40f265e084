//! Files a served prompt or resource names beside its definition, checked under the
//! definition's folder at load and again at each read, and their media types.

use std::path::{Component, Path, PathBuf};

/// Why a file a definition names cannot be read now. The text names no path: it may reach a
/// client.
#[derive(Debug, thiserror::Error)]
pub enum DefinitionFileError {
    /// The file (or a link on the way) cannot be resolved.
    #[error("cannot be read: {0}")]
    Unreadable(std::io::Error),
    /// The file is, or leads through a link to, something outside the definition's folder.
    #[error("leads out of the definition's folder")]
    OutsideFolder,
    /// The file is a folder, a device or the like.
    #[error("is not a regular file")]
    NotRegular,
    /// Reading it failed, or it is larger than the limit (the reason, without the path).
    #[error("{0}")]
    Read(String),
}

/// A file a definition names, beside it: a plain relative path (no `..`, not absolute) under
/// the definition's folder. The folder is checked again at each read, links followed, so a file
/// swapped for a link out of it after the project loaded is refused, not served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionFile {
    /// The path as written, joined to the definition's folder.
    pub path: PathBuf,
    /// The definition's folder, links resolved.
    folder: PathBuf,
}

impl DefinitionFile {
    /// The file `relative` names beside a definition in `folder`, if it is a regular file there.
    pub(super) fn beside(folder: &Path, relative: &str) -> Result<Self, String> {
        let given = Path::new(relative);
        if relative.is_empty()
            || !given
                .components()
                .all(|c| matches!(c, Component::Normal(_)))
        {
            return Err(format!(
                "{relative:?} must be a plain path relative to the definition's folder (no `..`, not absolute)"
            ));
        }
        let folder = folder
            .canonicalize()
            .map_err(|e| format!("the definition's folder cannot be read: {e}"))?;
        let file = Self {
            path: folder.join(given),
            folder,
        };
        file.resolved().map_err(|e| format!("{relative} {e}"))?;
        Ok(file)
    }

    /// Where the file is now, links followed, if that is a regular file in the folder.
    fn resolved(&self) -> Result<PathBuf, DefinitionFileError> {
        let real = self
            .path
            .canonicalize()
            .map_err(DefinitionFileError::Unreadable)?;
        if !real.starts_with(&self.folder) {
            return Err(DefinitionFileError::OutsideFolder);
        }
        if !real.is_file() {
            return Err(DefinitionFileError::NotRegular);
        }
        Ok(real)
    }

    /// The file's bytes, at most `limit` of them; an error says why not, without the path (it
    /// may reach a client).
    pub fn read(&self, limit: u64) -> Result<Vec<u8>, DefinitionFileError> {
        let real = self.resolved()?;
        crate::files::read_bytes(&real, limit).map_err(|e| DefinitionFileError::Read(e.reason()))
    }

    /// The file's size and modification time, when it can be resolved.
    pub fn version(&self) -> Option<(u64, Option<std::time::SystemTime>)> {
        let meta = std::fs::metadata(self.resolved().ok()?).ok()?;
        Some((meta.len(), meta.modified().ok()))
    }
}

/// The media type of a file, from its extension.
pub fn media_type(path: &Path) -> Option<&'static str> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match extension.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "txt" => "text/plain",
        "md" => "text/markdown",
        "json" => "application/json",
        "csv" => "text/csv",
        "html" => "text/html",
        "pdf" => "application/pdf",
        _ => return None,
    })
}

//! Reading the files toolhost is given: regular files only, and never more than a size cap.
//!
//! Every file of a project (definitions, tool files, model scripts) and of the data folder goes
//! through [`read_text`] or [`read_bytes`]. A FIFO would block the read (and every run with it)
//! until something writes to it; a device such as `/dev/zero` never ends; a huge file fills
//! memory. So the file is opened without blocking, the *opened* file is checked to be a regular
//! one (a link to a regular file is fine; checking the handle, not the name, leaves no window in
//! which the name could be swapped), and at most the cap plus one byte is read. Each refusal is
//! a [`FileError`] naming the file and the reason.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The largest project file read (a definition, a tool file, a model script).
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Why a file was not read.
#[derive(Debug)]
pub enum FileError {
    /// The path names something other than a regular file.
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is instead ("a FIFO (named pipe)", "a character device", ...).
        kind: &'static str,
    },
    /// The file is larger than the cap.
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The cap, in bytes.
        limit: u64,
    },
    /// The file could not be opened or read.
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The file is not UTF-8 text.
    NotText {
        /// The file.
        path: PathBuf,
    },
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path().display(), self.reason())
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Unreadable { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl FileError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            Self::NotRegular { path, .. }
            | Self::TooLarge { path, .. }
            | Self::Unreadable { path, .. }
            | Self::NotText { path } => path,
        }
    }

    /// What is wrong, without the file's name (for messages that name it already).
    pub fn reason(&self) -> String {
        match self {
            Self::NotRegular { kind, .. } => format!(
                "it is {kind}, not a regular file; only regular files (or links to them) are read"
            ),
            Self::TooLarge { limit, .. } => {
                format!("the file is larger than {limit} bytes, the limit for this file")
            }
            Self::Unreadable { source, .. } => format!("cannot read the file: {source}"),
            Self::NotText { .. } => "the file is not UTF-8 text".to_owned(),
        }
    }

    /// Whether the file does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Unreadable { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

/// Reads the regular file at `path` as UTF-8 text, refusing one larger than `limit` bytes.
pub fn read_text(path: &Path, limit: u64) -> Result<String, FileError> {
    let bytes = read_bytes(path, limit)?;
    String::from_utf8(bytes).map_err(|_| FileError::NotText {
        path: path.to_owned(),
    })
}

/// Reads the regular file at `path`, refusing one larger than `limit` bytes.
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    let unreadable = |source| FileError::Unreadable {
        path: path.to_owned(),
        source,
    };
    let file = open_without_blocking(path).map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(FileError::NotRegular {
            path: path.to_owned(),
            kind: kind_of(&meta.file_type()),
        });
    }
    // The size on record may be wrong (files under /proc say 0), so the cap is on what is read.
    let mut bytes = Vec::with_capacity(meta.len().min(limit) as usize);
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > limit {
        return Err(FileError::TooLarge {
            path: path.to_owned(),
            limit,
        });
    }
    Ok(bytes)
}

/// Opens for reading; on Unix without blocking, so that opening a FIFO returns at once.
fn open_without_blocking(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        // O_NONBLOCK changes nothing for a regular file; O_NOCTTY keeps a terminal device
        // from becoming this process's controlling terminal.
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    options.open(path)
}

/// Words for a file type that is not a regular file.
fn kind_of(file_type: &std::fs::FileType) -> &'static str {
    if file_type.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if file_type.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    "something else"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_folders_are_refused_by_kind() {
        let err = read_bytes(Path::new("/dev/zero"), 16).unwrap_err();
        assert!(err.reason().contains("a character device"), "{err}");
        assert!(err.to_string().starts_with("/dev/zero: "), "{err}");
        let dir = std::env::temp_dir();
        let err = read_bytes(&dir, 16).unwrap_err();
        assert!(err.reason().contains("a folder"), "{err}");
    }

    #[test]
    fn the_cap_is_on_what_is_read() {
        let path = std::env::temp_dir().join(format!("toolhost-files-{}", std::process::id()));
        std::fs::write(&path, b"12345").unwrap();
        assert_eq!(read_text(&path, 5).unwrap(), "12345");
        let err = read_text(&path, 4).unwrap_err();
        assert!(matches!(err, FileError::TooLarge { limit: 4, .. }), "{err}");
        std::fs::remove_file(&path).unwrap();
        assert!(read_text(&path, 4).unwrap_err().is_not_found());
    }
}

//! Secrets at rest: sealed with ChaCha20-Poly1305 under a 32-byte key, bound to the thread and
//! the variable's name, so a sealed value copied to another thread or name does not open.
//!
//! The key comes from the environment variable [`SECRET_KEY_ENV`] (64 hex digits) or from the
//! file `secret.key` in the data folder, created with mode 0600 on first use. Neither the key nor
//! a secret value is ever printed by `Debug`.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use std::fmt;
use std::path::Path;

/// The environment variable that may hold the secrets key (64 hex digits).
pub const SECRET_KEY_ENV: &str = "TOOLHOST_SECRET_KEY";

/// The key file's name in the data folder.
pub const SECRET_KEY_FILE: &str = "secret.key";

const PREFIX: &str = "sealed:v1:";

/// Why a secret could not be sealed or opened, or the key not loaded. Never holds a secret.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// No key is configured.
    #[error("no secrets key: set {SECRET_KEY_ENV} or give the runtime a data folder")]
    NoKey,
    /// The key is malformed.
    #[error("the secrets key in {0} must be 64 hexadecimal digits")]
    BadKey(String),
    /// The key file could not be read or created.
    #[error("the secrets key file {path} could not be used: {source}")]
    KeyFile {
        /// The file.
        path: String,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// The system's random source failed.
    #[error("no randomness for a nonce: {0}")]
    Random(String),
    /// A sealed value did not open (another key, another thread or name, or damaged).
    #[error("secret {0} could not be opened with this key (was the key changed?)")]
    Open(String),
}

/// The key secrets are sealed with.
#[derive(Clone)]
pub struct SecretKey([u8; 32]);

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretKey([redacted])")
    }
}

/// Reads the key file: a regular file (never a FIFO or device, which could block or never end)
/// of at most 1 KiB (a key is 64 hex digits; the cap keeps a wrong file from being read whole).
fn read_key_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    if !std::fs::metadata(path)?.is_file() {
        return Err(std::io::Error::other("it is not a regular file"));
    }
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(1025)
        .read_to_string(&mut text)?;
    if text.len() > 1024 {
        return Err(std::io::Error::other("it is larger than 1 KiB"));
    }
    Ok(text)
}

fn parse_hex(text: &str) -> Option<[u8; 32]> {
    let text = text.trim();
    if text.len() != 64 {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(key)
}

fn random<const N: usize>() -> Result<[u8; N], SecretError> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|e| SecretError::Random(e.to_string()))?;
    Ok(bytes)
}

impl SecretKey {
    /// A new random key.
    pub fn generate() -> Result<Self, SecretError> {
        Ok(Self(random()?))
    }

    /// The key from [`SECRET_KEY_ENV`] when it is set, else from `secret.key` in `data_dir`,
    /// creating that file (mode 0600) when it does not exist.
    pub fn load_or_create(data_dir: &Path) -> Result<Self, SecretError> {
        if let Ok(text) = std::env::var(SECRET_KEY_ENV) {
            return parse_hex(&text)
                .map(Self)
                .ok_or_else(|| SecretError::BadKey(SECRET_KEY_ENV.to_owned()));
        }
        let path = data_dir.join(SECRET_KEY_FILE);
        let file_error = |source| SecretError::KeyFile {
            path: path.display().to_string(),
            source,
        };
        // A key is 64 hex digits; the cap only keeps a wrong file from being read whole.
        match read_key_file(&path) {
            Ok(text) => parse_hex(&text)
                .map(Self)
                .ok_or_else(|| SecretError::BadKey(path.display().to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = Self::generate()?;
                let hex: String = key.0.iter().map(|b| format!("{b:02x}")).collect();
                write_private(&path, hex.as_bytes()).map_err(file_error)?;
                Ok(key)
            }
            Err(e) => Err(file_error(e)),
        }
    }

    fn cipher(&self) -> ChaCha20Poly1305 {
        ChaCha20Poly1305::new(Key::from_slice(&self.0))
    }

    /// Seals `value` of variable `name` in `thread`.
    pub fn seal(&self, thread: &str, name: &str, value: &str) -> Result<String, SecretError> {
        let nonce: [u8; 12] = random()?;
        let aad = format!("{thread}\n{name}");
        let sealed = self
            .cipher()
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: value.as_bytes(),
                    aad: aad.as_bytes(),
                },
            )
            .map_err(|_| SecretError::Open(name.to_owned()))?;
        let mut bytes = nonce.to_vec();
        bytes.extend(sealed);
        Ok(format!("{PREFIX}{}", base64_encode(&bytes)))
    }

    /// Opens a value sealed by [`SecretKey::seal`] for the same thread and name.
    pub fn open(&self, thread: &str, name: &str, sealed: &str) -> Result<String, SecretError> {
        let fail = || SecretError::Open(name.to_owned());
        let bytes = sealed
            .strip_prefix(PREFIX)
            .and_then(base64_decode)
            .ok_or_else(fail)?;
        if bytes.len() < 12 {
            return Err(fail());
        }
        let (nonce, body) = bytes.split_at(12);
        let aad = format!("{thread}\n{name}");
        let plain = self
            .cipher()
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: body,
                    aad: aad.as_bytes(),
                },
            )
            .map_err(|_| fail())?;
        String::from_utf8(plain).map_err(|_| fail())
    }
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// Writes a file only its owner can read, failing if it already exists.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_value_opens_only_in_its_place_and_with_its_key() {
        let key = SecretKey::generate().unwrap();
        let sealed = key.seal("t1", "TOKEN", "s3cr3t-value").unwrap();
        assert!(!sealed.contains("s3cr3t"));
        assert_eq!(key.open("t1", "TOKEN", &sealed).unwrap(), "s3cr3t-value");
        assert!(key.open("t2", "TOKEN", &sealed).is_err());
        assert!(key.open("t1", "OTHER", &sealed).is_err());
        let other = SecretKey::generate().unwrap();
        assert!(other.open("t1", "TOKEN", &sealed).is_err());
        assert_ne!(sealed, key.seal("t1", "TOKEN", "s3cr3t-value").unwrap());
        assert_eq!(format!("{key:?}"), "SecretKey([redacted])");
    }

    #[test]
    fn the_key_file_is_created_private_and_read_back() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = std::env::temp_dir().join(format!("toolhost-key-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let first = SecretKey::load_or_create(&dir).unwrap();
        let mode = std::fs::metadata(dir.join(SECRET_KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = SecretKey::load_or_create(&dir).unwrap();
        assert_eq!(first.0, again.0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

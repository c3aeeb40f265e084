//! [`Network`]: how a model's requests reach their server — the proxies they go through, and
//! the certificate authorities trusted besides the built-in (webpki) ones, as a network whose
//! proxy inspects TLS, or a private model server, needs.

use crate::{ConfigError, ProxyConfig};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use std::fmt;
use std::io::Read;
use std::path::Path;

/// The largest certificate file read (a whole CA bundle is a few hundred KB).
pub(crate) const MAX_CERT_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// How a model's requests reach the network. [`Network::from_env`] is what
/// [`crate::HttpModel::new`] uses; a program that keeps its own settings builds one itself and
/// passes it to [`crate::HttpModel::with_network`].
#[derive(Clone, Default)]
pub struct Network {
    proxy: ProxyConfig,
    extra_roots: Vec<CertificateDer<'static>>,
}

impl fmt::Debug for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Network")
            .field("proxy", &self.proxy)
            .field("extra_roots", &self.extra_roots.len())
            .finish()
    }
}

impl Network {
    /// Direct connections, trusting the built-in roots only.
    pub fn direct() -> Self {
        Self::default()
    }

    /// What the process environment says (see [`Network::from_vars`]).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// What the variables `get` names say: the proxies ([`ProxyConfig::from_vars`]), and the
    /// certificate authorities in the PEM file `SSL_CERT_FILE` names, trusted besides the
    /// built-in roots (a network whose proxy inspects TLS needs its own). A file that cannot be
    /// used fails here, naming the variable and the file.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let network = Self::default().with_proxy(ProxyConfig::from_vars(&get)?);
        match get("SSL_CERT_FILE").filter(|p| !p.trim().is_empty()) {
            None => Ok(network),
            Some(path) => {
                let source = format!("SSL_CERT_FILE ({path})");
                let pem = read_bounded(Path::new(&path)).map_err(|reason| {
                    ConfigError::BadCertificates {
                        origin: source.clone(),
                        reason,
                    }
                })?;
                network.trusting_pem(&source, &pem)
            }
        }
    }

    /// The same, through the proxies of `proxy`.
    pub fn with_proxy(mut self, proxy: ProxyConfig) -> Self {
        self.proxy = proxy;
        self
    }

    /// The same, also trusting the certificate authorities in `pem` (one or more `CERTIFICATE`
    /// blocks; other blocks are skipped). `source` names where the text came from in errors.
    pub fn trusting_pem(mut self, source: &str, pem: &[u8]) -> Result<Self, ConfigError> {
        let bad = |reason: String| ConfigError::BadCertificates {
            origin: source.to_owned(),
            reason,
        };
        let mut found = Vec::new();
        for cert in CertificateDer::pem_slice_iter(pem) {
            found.push(cert.map_err(|e| bad(format!("not readable PEM: {e}")))?);
        }
        if found.is_empty() {
            return Err(bad("it holds no CERTIFICATE block".to_owned()));
        }
        self.extra_roots.extend(found);
        Ok(self)
    }

    /// The proxies.
    pub fn proxy(&self) -> &ProxyConfig {
        &self.proxy
    }

    /// The certificate authorities trusted besides the built-in ones.
    pub(crate) fn extra_roots(&self) -> &[CertificateDer<'static>] {
        &self.extra_roots
    }
}

/// A regular file of at most `MAX_CERT_FILE_BYTES`, or why not.
fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot be read: {e}"))?;
    if !meta.is_file() {
        return Err("is not a regular file".to_owned());
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CERT_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot be read: {e}"))?;
    if bytes.len() as u64 > MAX_CERT_FILE_BYTES {
        return Err(format!(
            "is larger than the limit of {MAX_CERT_FILE_BYTES} bytes"
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_without_a_certificate_is_refused_naming_its_source() {
        let e = Network::direct()
            .trusting_pem("corp-ca.pem", b"just text")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "certificates from corp-ca.pem: it holds no CERTIFICATE block"
        );
        let broken = b"-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n";
        let e = Network::direct()
            .trusting_pem("corp-ca.pem", broken)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("certificates from corp-ca.pem: not readable PEM"),
            "{e}"
        );
    }

    #[test]
    fn ssl_cert_file_adds_its_authorities_or_names_what_is_wrong() {
        let dir = std::env::temp_dir().join(format!("toolhost-certs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("ca.pem");
        let ca = format!(
            "{}/tests/fixtures/tls/ca.pem",
            std::env::var("CARGO_MANIFEST_DIR").unwrap()
        );
        std::fs::copy(ca, &file).unwrap();
        let vars = |path: String| move |name: &str| (name == "SSL_CERT_FILE").then(|| path.clone());
        let network = Network::from_vars(vars(file.display().to_string())).unwrap();
        assert_eq!(network.extra_roots().len(), 1);
        let e = Network::from_vars(vars(dir.display().to_string()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("SSL_CERT_FILE") && e.contains("is not a regular file"),
            "{e}"
        );
        let missing = dir.join("none.pem").display().to_string();
        let e = Network::from_vars(vars(missing.clone()))
            .unwrap_err()
            .to_string();
        assert!(e.contains(&missing) && e.contains("cannot be read"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(Network::from_vars(|_| None)
            .unwrap()
            .extra_roots()
            .is_empty());
    }
}

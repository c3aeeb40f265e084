//! [`Network`]: how a model's requests reach their server — the proxies they go through, and
//! the certificate authorities trusted besides the built-in (webpki) ones, as a network whose
//! proxy inspects TLS, or a private model server, needs.

use crate::{ConfigError, ProxyConfig};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use std::fmt;

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

    /// The proxies the process environment names ([`ProxyConfig::from_env`]), trusting the
    /// built-in roots.
    pub fn from_env() -> Result<Self, ConfigError> {
        Ok(Self::default().with_proxy(ProxyConfig::from_env()?))
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
}

//! TLS to the database server. A connection over TCP is encrypted as the address's `sslmode`
//! says (`disable`; `prefer`, the default: when the server offers it; `require`), and the
//! server's certificate is always verified, chain and host name, whatever the mode names
//! (`verify-ca` and `verify-full` are taken as `require`): against the authorities in the PEM
//! file `sslrootcert` names when it names one, else against the Mozilla roots. A Unix socket is
//! never encrypted.
//!
//! The client's TLS traits are implemented here over rustls, so the TLS stack is the one the
//! model clients use. SCRAM channel binding is not offered.

use crate::error::{StoreError, StoreResult};
use postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use postgres::Socket;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What the address says of TLS beyond what the client parses itself.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct TlsOptions {
    /// The PEM file of the authorities that sign the server's certificate.
    pub root_cert: Option<String>,
}

/// Takes out of `url` the options the client does not know (`sslrootcert`; `sslmode`
/// `verify-ca` and `verify-full`, which become `require`), for a `postgres://` URL's query and
/// for a `key=value` connection string.
pub(super) fn take_options(url: &str) -> (String, TlsOptions) {
    let mut options = TlsOptions::default();
    let mut keep = |key: &str, value: &str| -> Option<String> {
        match (key, value) {
            ("sslrootcert", path) => {
                options.root_cert = Some(path.to_owned());
                None
            }
            ("sslmode", "verify-ca" | "verify-full") => Some("require".to_owned()),
            (_, value) => Some(value.to_owned()),
        }
    };
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let Some((base, query)) = url.split_once('?') else {
            return (url.to_owned(), options);
        };
        let kept: Vec<String> = query
            .split('&')
            .filter_map(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                keep(key, &percent_decoded(value)).map(|v| {
                    if v == percent_decoded(value) {
                        pair.to_owned()
                    } else {
                        format!("{key}={v}")
                    }
                })
            })
            .collect();
        let rest = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return (rest, options);
    }
    // A `key=value` string is rebuilt only when it names an option taken out; one that quotes
    // its values is passed on as it is (the client reads it whole).
    let pairs: Vec<&str> = url.split_whitespace().collect();
    let names_one = pairs.iter().any(|pair| {
        pair.starts_with("sslrootcert=")
            || *pair == "sslmode=verify-ca"
            || *pair == "sslmode=verify-full"
    });
    if !names_one || url.contains('\'') {
        return (url.to_owned(), options);
    }
    let kept: Vec<String> = pairs
        .into_iter()
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            keep(key, value).map(|v| {
                if v == value {
                    pair.to_owned()
                } else {
                    format!("{key}={v}")
                }
            })
        })
        .collect();
    (kept.join(" "), options)
}

/// `text` with its `%XX` escapes decoded (bytes that do not make UTF-8 are replaced).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The client side of TLS to the database server: verifies as the module's page says.
#[derive(Clone)]
pub(super) struct Tls(Arc<rustls::ClientConfig>);

impl Tls {
    /// TLS trusting the authorities of `options.root_cert`, else the Mozilla roots.
    pub(super) fn new(options: &TlsOptions) -> StoreResult<Self> {
        let mut roots = rustls::RootCertStore::empty();
        match &options.root_cert {
            Some(file) => {
                let unreadable = |why: String| {
                    StoreError::Backend(
                        format!("the store address's sslrootcert {file} {why}").into(),
                    )
                };
                let certs = CertificateDer::pem_file_iter(file)
                    .map_err(|e| unreadable(format!("cannot be read: {e}")))?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| unreadable(format!("is not a PEM file of certificates: {e}")))?;
                if certs.is_empty() {
                    return Err(unreadable("holds no certificate".to_owned()));
                }
                for cert in certs {
                    roots.add(cert).map_err(|e| {
                        unreadable(format!("holds a certificate that cannot be used: {e}"))
                    })?;
                }
            }
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::Backend(format!("TLS cannot be set up: {e}").into()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        Ok(Self(Arc::new(config)))
    }
}

impl MakeTlsConnect<Socket> for Tls {
    type Stream = Encrypted;
    type TlsConnect = Handshake;
    type Error = io::Error;

    /// `host` is empty for a Unix socket, whose server declines TLS before any handshake.
    fn make_tls_connect(&mut self, host: &str) -> io::Result<Handshake> {
        let name = if host.is_empty() {
            None
        } else {
            Some(ServerName::try_from(host.to_owned()).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{host} cannot name a TLS server: {e}"),
                )
            })?)
        };
        Ok(Handshake {
            config: self.0.clone(),
            name,
        })
    }
}

/// One connection's handshake, for the server named `name` (none: a Unix socket).
pub(super) struct Handshake {
    config: Arc<rustls::ClientConfig>,
    name: Option<ServerName<'static>>,
}

impl TlsConnect<Socket> for Handshake {
    type Stream = Encrypted;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<Encrypted>> + Send>>;

    fn connect(self, socket: Socket) -> Self::Future {
        Box::pin(async move {
            let name = self.name.ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "TLS needs the server's host name, and a Unix socket has none",
                )
            })?;
            let connector = tokio_rustls::TlsConnector::from(self.config);
            Ok(Encrypted(connector.connect(name, socket).await?))
        })
    }
}

/// A connection to the server, encrypted.
pub(super) struct Encrypted(tokio_rustls::client::TlsStream<Socket>);

impl TlsStream for Encrypted {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl AsyncRead for Encrypted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for Encrypted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_the_client_does_not_know_are_taken_out_of_the_address() {
        let (rest, options) = take_options(
            "postgres://u:p@db.example.com:5432/app?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&application_name=x",
        );
        assert_eq!(
            rest,
            "postgres://u:p@db.example.com:5432/app?sslmode=require&application_name=x"
        );
        assert_eq!(options.root_cert.as_deref(), Some("/etc/ca.pem"));
        let (rest, options) =
            take_options("host=db.example.com sslrootcert=/etc/ca.pem sslmode=verify-ca user=u");
        assert_eq!(rest, "host=db.example.com sslmode=require user=u");
        assert_eq!(options.root_cert.as_deref(), Some("/etc/ca.pem"));
        let plain = "postgres://u@%2Fvar%2Frun%2Fpostgresql/app";
        assert_eq!(
            take_options(plain),
            (plain.to_owned(), TlsOptions::default())
        );
        let (rest, _) = take_options("postgres://u@h/app?sslrootcert=/ca.pem");
        assert_eq!(rest, "postgres://u@h/app");
    }

    #[test]
    fn an_unusable_root_certificate_file_is_named() {
        let missing = TlsOptions {
            root_cert: Some("/no/such/ca.pem".to_owned()),
        };
        let e = Tls::new(&missing).err().unwrap().to_string();
        assert!(
            e.contains("/no/such/ca.pem") && e.contains("cannot be read"),
            "{e}"
        );
    }
}

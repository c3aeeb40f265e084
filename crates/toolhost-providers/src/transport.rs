//! The HTTP exchange: one POST over hyper, TLS by rustls with the webpki roots, directly or
//! through the proxy the environment names (see the `proxy` module).

use crate::network::Network;
use crate::proxy::{forwarding_auth, ProxyConnector};
use crate::reach::{Reach, Resolver};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue, PROXY_AUTHORIZATION};
use hyper::{HeaderMap, Request, Response};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioExecutor;
use std::sync::Arc;
use std::time::Duration;

/// Why an exchange got no complete answer (all of these may pass).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TransportError {
    /// Nothing arrived within the time allowed.
    Timeout(Duration),
    /// The connection failed, was refused or reset, or the body was cut.
    Connection(String),
    /// The body passed the limit of this many bytes (`limits.maxBodyBytes`); it is not read on.
    TooLarge(usize),
}

impl std::fmt::Display for TransportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransportError::Timeout(d) => write!(f, "no answer within {:.1} s", d.as_secs_f64()),
            TransportError::Connection(reason) => write!(f, "connection failed: {reason}"),
            TransportError::TooLarge(limit) => write!(
                f,
                "the answer's body passed the limit of {limit} bytes (limits.maxBodyBytes)"
            ),
        }
    }
}

/// `http` set up as every connection of a transport is: `https` URLs allowed (TLS goes on
/// top), no Nagle delay, and the connect timeout.
fn connector<R: Clone>(mut http: HttpConnector<R>, connect_timeout: Duration) -> HttpConnector<R> {
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(connect_timeout));
    http
}

/// A pooled HTTP/1.1 client for `http://` and `https://` URLs.
#[derive(Clone)]
pub(crate) struct Transport {
    client: Client<HttpsConnector<ProxyConnector>, Full<Bytes>>,
    proxies: Arc<Matcher>,
}

impl Transport {
    /// A client whose connections time out after `connect_timeout`, going through the proxies
    /// of `network` and trusting its authorities besides the built-in roots.
    /// Direct connections reach what `reach` allows.
    pub(crate) fn new(
        connect_timeout: Duration,
        network: &Network,
        reach: Reach,
    ) -> Result<Self, String> {
        let proxies = Arc::new(network.proxy().matcher());
        let direct = connector(
            HttpConnector::new_with_resolver(Resolver::new(reach)),
            connect_timeout,
        );
        let to_proxy = connector(HttpConnector::new(), connect_timeout);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls_config(network)?)
            .https_or_http()
            .enable_http1()
            .wrap_connector(ProxyConnector::new(direct, to_proxy, proxies.clone()));
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .build(https);
        Ok(Transport { client, proxies })
    }

    /// Sends a POST and waits (at most `timeout`) for the status line and headers.
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: &[(HeaderName, HeaderValue)],
        body: Bytes,
        timeout: Duration,
    ) -> Result<Response<Incoming>, TransportError> {
        self.send(hyper::Method::POST, url, headers, body, timeout)
            .await
    }

    /// Sends a request and waits (at most `timeout`) for the status line and headers.
    pub(crate) async fn send(
        &self,
        method: hyper::Method,
        url: &str,
        headers: &[(HeaderName, HeaderValue)],
        body: Bytes,
        timeout: Duration,
    ) -> Result<Response<Incoming>, TransportError> {
        let mut request = Request::builder()
            .method(method)
            .uri(url)
            .body(Full::new(body))
            .map_err(|e| TransportError::Connection(format!("bad request: {e}")))?;
        // A forwarding proxy reads its credentials from the request itself (a tunnel's go in
        // the CONNECT).
        let proxy_auth = forwarding_auth(&self.proxies, request.uri());
        let map: &mut HeaderMap = request.headers_mut();
        for (name, value) in headers {
            map.insert(name.clone(), value.clone());
        }
        if let Some(auth) = proxy_auth {
            map.insert(PROXY_AUTHORIZATION, auth);
        }
        match tokio::time::timeout(timeout, self.client.request(request)).await {
            Err(_) => Err(TransportError::Timeout(timeout)),
            Ok(Err(e)) => Err(TransportError::Connection(chain(&e))),
            Ok(Ok(response)) => Ok(response),
        }
    }
}

/// TLS with rustls (ring): the webpki roots and the network's extra authorities.
fn tls_config(network: &Network) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    for cert in network.extra_roots() {
        roots
            .add(cert.clone())
            .map_err(|e| format!("a certificate to trust is not usable: {e}"))?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("TLS setup failed: {e}"))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(config)
}

/// Reads a whole body of at most `limit` bytes, allowing `timeout` for all of it.
pub(crate) async fn read_body(
    body: Incoming,
    timeout: Duration,
    limit: usize,
) -> Result<Bytes, TransportError> {
    match tokio::time::timeout(timeout, Limited::new(body, limit).collect()).await {
        Err(_) => Err(TransportError::Timeout(timeout)),
        Ok(Err(e)) if e.is::<LengthLimitError>() => Err(TransportError::TooLarge(limit)),
        Ok(Err(e)) => Err(TransportError::Connection(format!(
            "body cut: {}",
            chain(&*e)
        ))),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

/// The next data chunk of a streamed body (`None` at its end), allowing `idle` between chunks.
pub(crate) async fn next_chunk(
    body: &mut Incoming,
    idle: Duration,
) -> Result<Option<Bytes>, TransportError> {
    loop {
        match tokio::time::timeout(idle, body.frame()).await {
            Err(_) => return Err(TransportError::Timeout(idle)),
            Ok(None) => return Ok(None),
            Ok(Some(Err(e))) => {
                return Err(TransportError::Connection(format!(
                    "stream cut: {}",
                    chain(&e)
                )))
            }
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    return Ok(Some(data));
                }
            }
        }
    }
}

/// An error and its causes in one line.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

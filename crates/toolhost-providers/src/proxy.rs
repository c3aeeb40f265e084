//! HTTP proxies, chosen as curl chooses them: [`ProxyConfig`] reads `http_proxy`,
//! `HTTPS_PROXY`, `ALL_PROXY` and `NO_PROXY` (either case), and [`ProxyConnector`] connects
//! through the proxy that applies: a plain `http://` request is forwarded (sent to the proxy in
//! absolute form), an `https://` one is tunnelled with `CONNECT` and TLS runs end to end inside
//! the tunnel. The proxy applies to every host `NO_PROXY` does not name, loopback included.
//!
//! The matching (`NO_PROXY` rules, credentials in the proxy URL) and the `CONNECT` handshake
//! are hyper-util's; this module reads the variables, checks them, and picks the route.

use crate::reach::Resolver;
use crate::ConfigError;
use hyper::header::HeaderValue;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper::Uri;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::net::TcpStream;
use tower_service::Service;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Which proxy each request goes through, if any.
///
/// Read from the environment by [`ProxyConfig::from_env`], or from any lookup by
/// [`ProxyConfig::from_vars`] (the same reading, for a program or a test that keeps its own
/// variables). Its `Debug` output never shows credentials of a proxy URL.
#[derive(Clone, Default)]
pub struct ProxyConfig {
    http: Option<ProxyUrl>,
    https: Option<ProxyUrl>,
    no_proxy: String,
}

/// A proxy URL and the variable it came from.
#[derive(Clone)]
struct ProxyUrl {
    variable: String,
    url: String,
}

impl fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = |p: &Option<ProxyUrl>| p.as_ref().map(|p| redacted(&p.url));
        f.debug_struct("ProxyConfig")
            .field("http", &shown(&self.http))
            .field("https", &shown(&self.https))
            .field("no_proxy", &self.no_proxy)
            .finish()
    }
}

impl ProxyConfig {
    /// No proxy for any host.
    pub fn none() -> Self {
        Self::default()
    }

    /// The proxies the process environment names (see [`ProxyConfig::from_vars`]).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// The proxies `get` names, read as curl reads its environment, the lower-case name first:
    /// `http_proxy` (or `HTTP_PROXY`) for `http://` URLs, `https_proxy` (or `HTTPS_PROXY`) for
    /// `https://` ones, `all_proxy` (or `ALL_PROXY`) for either when its own is not set, and
    /// `no_proxy` (or `NO_PROXY`): comma-separated hosts, domains (with their subdomains), IP
    /// addresses and networks (`10.0.0.0/8`) reached directly, or `*` for all. An empty value
    /// counts as unset. As in curl, `HTTP_PROXY` in capitals is not read when `REQUEST_METHOD`
    /// is set (a CGI program, where a client's `Proxy:` header arrives under that name).
    ///
    /// A proxy is an `http://` URL (`host:port` alone means `http://`), with credentials for
    /// Basic authentication if it carries them; anything else fails here, naming the variable.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let cgi = get("REQUEST_METHOD").is_some();
        let first = |names: &[&str]| {
            names.iter().find_map(|name| {
                get(name)
                    .map(|v| v.trim().to_owned())
                    .filter(|v| !v.is_empty())
                    .map(|url| ProxyUrl {
                        variable: (*name).to_owned(),
                        url,
                    })
            })
        };
        let http_names: &[&str] = if cgi {
            &["http_proxy"]
        } else {
            &["http_proxy", "HTTP_PROXY"]
        };
        let all = first(&["all_proxy", "ALL_PROXY"]);
        let http = first(http_names).or_else(|| all.clone());
        let https = first(&["https_proxy", "HTTPS_PROXY"]).or(all);
        for proxy in [&http, &https].into_iter().flatten() {
            check(proxy)?;
        }
        Ok(ProxyConfig {
            http,
            https,
            no_proxy: first(&["no_proxy", "NO_PROXY"])
                .map(|p| p.url)
                .unwrap_or_default(),
        })
    }

    /// The proxy a request to `url` goes through, without credentials, if one applies.
    pub fn proxy_for(&self, url: &str) -> Option<String> {
        let uri = url.parse::<Uri>().ok()?;
        self.matcher()
            .intercept(&uri)
            .map(|i| redacted(&i.uri().to_string()))
    }

    /// The matcher hyper-util routes by.
    pub(crate) fn matcher(&self) -> Matcher {
        let url = |p: &Option<ProxyUrl>| p.as_ref().map(|p| p.url.clone()).unwrap_or_default();
        Matcher::builder()
            .http(url(&self.http))
            .https(url(&self.https))
            .no(self.no_proxy.clone())
            .build()
    }
}

/// Refuses a proxy URL that cannot be used, naming its variable (never its credentials).
fn check(proxy: &ProxyUrl) -> Result<(), ConfigError> {
    let bad = |reason: &str| ConfigError::BadProxy {
        variable: proxy.variable.clone(),
        url: redacted(&proxy.url),
        reason: reason.to_owned(),
    };
    if unencoded_credentials(&proxy.url) {
        return Err(bad("its user name or password holds a `/`, `?` or `#` that is not percent-encoded, so the URL would name another host; write them as %2F, %3F and %23 (and an `@` in them as %40)"));
    }
    let uri = proxy.url.parse::<Uri>().map_err(|_| bad("not a URL"))?;
    match uri.scheme_str() {
        None | Some("http") => {}
        Some("https") => return Err(bad("a proxy reached over TLS (https://) is not supported; use an http:// proxy, through which https:// requests are tunnelled")),
        Some(other) => return Err(bad(&format!("the proxy scheme {other}:// is not supported; use an http:// proxy"))),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(bad("it names no host"));
    }
    Ok(())
}

/// A proxy URL with any credentials in it replaced by `***`.
///
/// A password may hold `/`, `?`, `#` or `@` that were not percent-encoded, so where the
/// authority ends cannot be told from the text: everything between the scheme and the *last*
/// `@` is hidden. An `@` later in the URL (in a path, which a proxy URL has no use for) hides
/// more than the credentials, never less.
fn redacted(url: &str) -> String {
    let (scheme, rest) = split_scheme(url);
    match rest.rfind('@') {
        Some(at) => format!("{scheme}***@{}", &rest[at + 1..]),
        None => format!("{scheme}{rest}"),
    }
}

/// `url`'s scheme with its `://`, and the rest; no scheme when what comes before the first
/// `://` is not one (letters, digits, `+`, `-`, `.`, beginning with a letter), since then the
/// `://` may be part of a password.
fn split_scheme(url: &str) -> (&str, &str) {
    let Some(at) = url.find("://") else {
        return ("", url);
    };
    let scheme = &url[..at];
    let is_scheme = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if is_scheme {
        url.split_at(at + 3)
    } else {
        ("", url)
    }
}

/// Whether the credentials of `url` hold a `/`, `?` or `#` that was not percent-encoded: then
/// an `@` follows one of them, and a URL parser ends the host before the credentials do.
fn unencoded_credentials(url: &str) -> bool {
    let (_, rest) = split_scheme(url);
    match (rest.find(['/', '?', '#']), rest.rfind('@')) {
        (Some(end), Some(at)) => at > end,
        _ => false,
    }
}

/// The `Proxy-Authorization` a plain `http://` request to `uri` carries: the Basic credentials
/// of the proxy that forwards it, if it has any (a tunnel's go in its `CONNECT` instead).
pub(crate) fn forwarding_auth(matcher: &Matcher, uri: &Uri) -> Option<HeaderValue> {
    if uri.scheme_str() != Some("http") {
        return None;
    }
    matcher.intercept(uri)?.basic_auth().cloned()
}

/// A connector that goes direct, forwards through an HTTP proxy, or tunnels through one,
/// as its [`ProxyConfig`] says for each destination. TLS is added on top of it.
#[derive(Clone)]
pub(crate) struct ProxyConnector {
    /// To a destination itself: its resolved addresses filtered by the transport's
    /// [`crate::reach::Reach`].
    direct: HttpConnector<Resolver>,
    /// To a proxy, wherever it is (the proxy resolves the destination).
    to_proxy: HttpConnector,
    matcher: Arc<Matcher>,
}

impl ProxyConnector {
    /// Connects to destinations with `direct`, to the proxies `matcher` picks with `to_proxy`.
    pub(crate) fn new(
        direct: HttpConnector<Resolver>,
        to_proxy: HttpConnector,
        matcher: Arc<Matcher>,
    ) -> Self {
        ProxyConnector {
            direct,
            to_proxy,
            matcher,
        }
    }
}

impl Service<Uri> for ProxyConnector {
    type Response = ProxyStream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<ProxyStream, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.direct.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let Some(proxy) = self.matcher.intercept(&dst) else {
            let connecting = self.direct.call(dst);
            return Box::pin(async move { Ok(ProxyStream::new(connecting.await?, false)) });
        };
        let via = redacted(&proxy.uri().to_string());
        let through = move |e: BoxError| -> BoxError { Box::new(ThroughProxy { via, source: e }) };
        if dst.scheme_str() == Some("https") {
            let mut tunnel = Tunnel::new(proxy.uri().clone(), self.to_proxy.clone());
            if let Some(auth) = proxy.basic_auth() {
                tunnel = tunnel.with_auth(auth.clone());
            }
            // Inside the tunnel the request is the client's own, as on a direct connection.
            let connecting = tunnel.call(dst);
            Box::pin(async move {
                let io = connecting.await.map_err(|e| through(e.into()))?;
                Ok(ProxyStream::new(io, false))
            })
        } else {
            let connecting = self.to_proxy.call(proxy.uri().clone());
            Box::pin(async move {
                let io = connecting.await.map_err(|e| through(e.into()))?;
                Ok(ProxyStream::new(io, true))
            })
        }
    }
}

/// A failure to reach a destination through a proxy, naming the proxy.
#[derive(Debug)]
struct ThroughProxy {
    via: String,
    source: BoxError,
}

impl fmt::Display for ThroughProxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "through the proxy {}", self.via)
    }
}

impl std::error::Error for ThroughProxy {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

/// A connection, to the destination or to a proxy that forwards requests (which then go in
/// absolute form, `POST http://host/path`).
pub(crate) struct ProxyStream {
    io: TokioIo<TcpStream>,
    forwarding: bool,
}

impl ProxyStream {
    fn new(io: TokioIo<TcpStream>, forwarding: bool) -> Self {
        ProxyStream { io, forwarding }
    }
}

impl Connection for ProxyStream {
    fn connected(&self) -> Connected {
        self.io.connected().proxy(self.forwarding)
    }
}

impl Read for ProxyStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl Write for ProxyStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(list: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            list.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn variables_are_read_as_curl_reads_them() {
        let c = ProxyConfig::from_vars(vars(&[
            ("HTTP_PROXY", "http://upper:1"),
            ("http_proxy", "lower:2"),
            ("ALL_PROXY", "http://all:3"),
            ("NO_PROXY", "internal.example, 10.0.0.0/8"),
        ]))
        .unwrap();
        assert_eq!(
            c.proxy_for("http://api.example/v1").as_deref(),
            Some("http://lower:2/")
        );
        assert_eq!(
            c.proxy_for("https://api.example").as_deref(),
            Some("http://all:3/")
        );
        assert_eq!(c.proxy_for("https://internal.example"), None);
        assert_eq!(c.proxy_for("https://a.internal.example"), None);
        assert_eq!(c.proxy_for("http://10.1.2.3:8080"), None);
        // Loopback is proxied unless NO_PROXY names it.
        assert_eq!(
            c.proxy_for("http://127.0.0.1:9").as_deref(),
            Some("http://lower:2/")
        );
        let cgi = ProxyConfig::from_vars(vars(&[
            ("REQUEST_METHOD", "GET"),
            ("HTTP_PROXY", "http://evil:1"),
        ]))
        .unwrap();
        assert_eq!(cgi.proxy_for("http://api.example"), None);
        let empty = ProxyConfig::from_vars(vars(&[("https_proxy", " ")])).unwrap();
        assert_eq!(empty.proxy_for("https://api.example"), None);
    }

    #[test]
    fn unusable_proxies_are_refused_without_their_credentials() {
        let e = ProxyConfig::from_vars(vars(&[("HTTPS_PROXY", "socks5://u:hunter2@h:1")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("HTTPS_PROXY"), "{e}");
        assert!(e.contains("socks5"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        let e = ProxyConfig::from_vars(vars(&[("https_proxy", "https://proxy:443")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("https_proxy") && e.contains("not supported"),
            "{e}"
        );
        let c = ProxyConfig::from_vars(vars(&[("ALL_PROXY", "http://u:hunter2@h:1")])).unwrap();
        assert!(!format!("{c:?}").contains("hunter2"));
        assert_eq!(
            c.proxy_for("https://x").as_deref(),
            Some("http://h:1/"),
            "the matcher keeps credentials for the handshake, never for display"
        );
    }

    #[test]
    fn a_password_with_unencoded_delimiters_is_never_shown() {
        for url in [
            "http://u:hun#ter2@proxy:3128",
            "http://u:hun/ter2@proxy:3128",
            "http://u:hun?ter2@proxy:3128",
            "http://u:hun@ter2@proxy:3128",
            "http://u:hun/?#@ter2@proxy:3128",
            "u:hun#ter2@proxy:3128",
            "u:hun://ter2@proxy:3128",
            "socks5://u:hun#ter2@proxy:3128",
        ] {
            let shown = redacted(url);
            assert!(
                !shown.contains("hun") && !shown.contains("ter2"),
                "{url} is shown as {shown}"
            );
            assert!(shown.ends_with("***@proxy:3128"), "{url}: {shown}");
            for variable in ["HTTPS_PROXY", "http_proxy", "ALL_PROXY"] {
                let read = ProxyConfig::from_vars(|name| (name == variable).then(|| url.into()));
                let text = match read {
                    Err(e) => e.to_string(),
                    Ok(c) => format!("{c:?} {:?}", c.proxy_for("https://x")),
                };
                assert!(
                    !text.contains("hun") && !text.contains("ter2"),
                    "{url} in {variable}: {text}"
                );
            }
        }
        let e = ProxyConfig::from_vars(vars(&[("HTTPS_PROXY", "http://u:hun/ter2@proxy:3128")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("HTTPS_PROXY")
                && e.contains("percent-encoded")
                && e.contains("***@proxy:3128"),
            "{e}"
        );
        // Encoded, the same password is a usable proxy.
        let c = ProxyConfig::from_vars(vars(&[("HTTPS_PROXY", "http://u:hun%2Fter2@proxy:3128")]))
            .unwrap();
        assert_eq!(
            c.proxy_for("https://x").as_deref(),
            Some("http://proxy:3128/")
        );
    }
}

//! Plain HTTP requests for tools (a JavaScript tool's `fetch`): the [`Fetcher`] contract the
//! runtime calls, and [`HttpFetcher`] (with the `http` feature), the same hyper client, TLS,
//! proxies and timeouts the model adapters use, with a cap on the answer's body.
//!
//! Which hosts a tool may reach is not decided here: the runtime checks its allowlist before it
//! calls a fetcher.

use std::future::Future;
use std::pin::Pin;

/// One request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// An absolute `http` or `https` URL.
    pub url: String,
    /// Header names and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body, if any.
    pub body: Option<Vec<u8>>,
}

/// One answer, read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchResponse {
    /// The status code.
    pub status: u16,
    /// The status code's reason phrase.
    pub status_text: String,
    /// Header names (lower case) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// What a fetch returns: the answer, or why there is none, in one sentence.
pub type FetchFuture<'a> = Pin<Box<dyn Future<Output = Result<FetchResponse, String>> + Send + 'a>>;

/// Something that carries out HTTP requests.
pub trait Fetcher: Send + Sync {
    /// Sends `request` and reads the whole answer.
    fn fetch(&self, request: FetchRequest) -> FetchFuture<'_>;
}

#[cfg(feature = "http")]
pub use http::HttpFetcher;

#[cfg(feature = "http")]
mod http {
    use super::{FetchFuture, FetchRequest, FetchResponse, Fetcher};
    use crate::network::Network;
    use crate::transport::{read_body, Transport};
    use bytes::Bytes;
    use hyper::header::{HeaderName, HeaderValue};
    use std::time::Duration;

    /// A [`Fetcher`] over hyper: connect, answer and body timeouts, and a cap on the body.
    #[derive(Clone)]
    pub struct HttpFetcher {
        transport: Transport,
        timeout: Duration,
        max_body_bytes: usize,
    }

    impl HttpFetcher {
        /// A fetcher through `network` (its proxies and extra authorities) that gives each
        /// request `timeout` for its headers and again for its body, and reads at most
        /// `max_body_bytes` of a body.
        pub fn new(
            network: &Network,
            timeout: Duration,
            max_body_bytes: usize,
        ) -> Result<Self, String> {
            Ok(HttpFetcher {
                transport: Transport::new(timeout, network)?,
                timeout,
                max_body_bytes,
            })
        }
    }

    impl Fetcher for HttpFetcher {
        fn fetch(&self, request: FetchRequest) -> FetchFuture<'_> {
            Box::pin(async move {
                let method = hyper::Method::from_bytes(request.method.as_bytes())
                    .map_err(|_| format!("\"{}\" is not an HTTP method", request.method))?;
                let mut headers = Vec::with_capacity(request.headers.len());
                for (name, value) in &request.headers {
                    let name = HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| format!("\"{name}\" is not a header name"))?;
                    let value = HeaderValue::from_str(value)
                        .map_err(|_| format!("the value of header {name} is not valid"))?;
                    headers.push((name, value));
                }
                let body = Bytes::from(request.body.unwrap_or_default());
                let response = self
                    .transport
                    .send(method, &request.url, &headers, body, self.timeout)
                    .await
                    .map_err(|e| e.to_string())?;
                let status = response.status();
                let headers = response
                    .headers()
                    .iter()
                    .map(|(n, v)| {
                        (
                            n.as_str().to_owned(),
                            String::from_utf8_lossy(v.as_bytes()).into_owned(),
                        )
                    })
                    .collect();
                let body = read_body(response.into_body(), self.timeout, self.max_body_bytes)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(FetchResponse {
                    status: status.as_u16(),
                    status_text: status.canonical_reason().unwrap_or_default().to_owned(),
                    headers,
                    body: body.to_vec(),
                })
            })
        }
    }
}

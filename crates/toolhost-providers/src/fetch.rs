//! Plain HTTP requests for tools (a JavaScript tool's `fetch`) and for MCP servers over HTTP:
//! the [`Fetcher`] contract the runtime calls, and [`HttpFetcher`] (with the `http` feature),
//! the same hyper client, TLS, proxies and timeouts the model adapters use, with a cap on an
//! answer read whole. [`Fetcher::open`] hands the body over as it arrives (an MCP server's
//! event stream).
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

/// Why a request got no answer, or not all of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchError {
    /// The fetcher could not be set up (its TLS settings, an authority to trust).
    Setup(String),
    /// The request is not one HTTP can carry: its method, a header's name or value.
    BadRequest(String),
    /// Nothing arrived within the time allowed.
    Timeout(std::time::Duration),
    /// The connection failed, or was refused or reset.
    Connection(String),
    /// The answer's body was cut before its end.
    BodyCut(String),
    /// The body passed the limit of this many bytes; it is not read on.
    TooLarge(usize),
    /// This fetcher cannot do what was asked (stream an answer, say).
    Unsupported(String),
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Setup(why) | FetchError::BadRequest(why) => f.write_str(why),
            FetchError::Timeout(d) => write!(f, "no answer within {:.1} s", d.as_secs_f64()),
            FetchError::Connection(reason) => write!(f, "connection failed: {reason}"),
            FetchError::BodyCut(reason) => write!(f, "the body was cut: {reason}"),
            FetchError::TooLarge(limit) => {
                write!(f, "the answer's body passed the limit of {limit} bytes")
            }
            FetchError::Unsupported(what) => write!(f, "this HTTP client cannot {what}"),
        }
    }
}

impl std::error::Error for FetchError {}

/// What a fetch returns: the answer, or why there is none.
pub type FetchFuture<'a> =
    Pin<Box<dyn Future<Output = Result<FetchResponse, FetchError>> + Send + 'a>>;

/// One answer whose body arrives piece by piece.
#[derive(Debug)]
pub struct OpenResponse {
    /// The status code.
    pub status: u16,
    /// Header names (lower case) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body's pieces as they arrive; an `Err` says why it was cut, the channel's end is
    /// the body's.
    pub body: tokio::sync::mpsc::Receiver<Result<Vec<u8>, FetchError>>,
}

/// What an open returns: the answer's head with its body to come, or why there is none.
pub type OpenFuture<'a> =
    Pin<Box<dyn Future<Output = Result<OpenResponse, FetchError>> + Send + 'a>>;

/// Something that carries out HTTP requests.
pub trait Fetcher: Send + Sync {
    /// Sends `request` and reads the whole answer.
    fn fetch(&self, request: FetchRequest) -> FetchFuture<'_>;

    /// Sends `request` and returns once the answer's head is in; its body follows on the
    /// returned channel, with no limit on its length or on the time between its pieces (the
    /// caller decides). Not every fetcher can: the default says so.
    fn open(&self, request: FetchRequest) -> OpenFuture<'_> {
        let _ = request;
        Box::pin(async { Err(FetchError::Unsupported("stream an answer".to_owned())) })
    }
}

#[cfg(feature = "http")]
pub use http::HttpFetcher;

#[cfg(feature = "http")]
mod http {
    use super::{
        FetchError, FetchFuture, FetchRequest, FetchResponse, Fetcher, OpenFuture, OpenResponse,
    };
    use crate::network::Network;
    use crate::reach::Reach;
    use crate::transport::TransportError;
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
        ) -> Result<Self, FetchError> {
            Self::reaching(network, timeout, max_body_bytes, Reach::Any)
        }

        /// [`HttpFetcher::new`] for what tools fetch: a host name is connected to only at
        /// its public addresses (a name that resolves only to loopback, private or link-local
        /// ones is refused, saying so); an address written in the URL is reached as written.
        pub fn public_only(
            network: &Network,
            timeout: Duration,
            max_body_bytes: usize,
        ) -> Result<Self, FetchError> {
            Self::reaching(network, timeout, max_body_bytes, Reach::PublicOnly)
        }

        fn reaching(
            network: &Network,
            timeout: Duration,
            max_body_bytes: usize,
            reach: Reach,
        ) -> Result<Self, FetchError> {
            Ok(HttpFetcher {
                transport: Transport::new(timeout, network, reach).map_err(FetchError::Setup)?,
                timeout,
                max_body_bytes,
            })
        }
    }

    impl HttpFetcher {
        /// Sends `request` and waits (at most the fetcher's timeout) for the answer's head.
        async fn head(
            &self,
            request: FetchRequest,
        ) -> Result<hyper::Response<hyper::body::Incoming>, FetchError> {
            let bad = FetchError::BadRequest;
            let method = hyper::Method::from_bytes(request.method.as_bytes())
                .map_err(|_| bad(format!("\"{}\" is not an HTTP method", request.method)))?;
            let mut headers = Vec::with_capacity(request.headers.len());
            for (name, value) in &request.headers {
                let name = HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| bad(format!("\"{name}\" is not a header name")))?;
                let value = HeaderValue::from_str(value)
                    .map_err(|_| bad(format!("the value of header {name} is not valid")))?;
                headers.push((name, value));
            }
            let body = Bytes::from(request.body.unwrap_or_default());
            self.transport
                .send(method, &request.url, &headers, body, self.timeout)
                .await
                .map_err(FetchError::from)
        }
    }

    impl From<TransportError> for FetchError {
        fn from(e: TransportError) -> Self {
            match e {
                TransportError::Timeout(d) => FetchError::Timeout(d),
                TransportError::Connection(why) => FetchError::Connection(why),
                TransportError::TooLarge(limit) => FetchError::TooLarge(limit),
            }
        }
    }

    /// A response's headers, names in lower case.
    fn header_list<B>(response: &hyper::Response<B>) -> Vec<(String, String)> {
        response
            .headers()
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect()
    }

    impl Fetcher for HttpFetcher {
        fn open(&self, request: FetchRequest) -> OpenFuture<'_> {
            Box::pin(async move {
                let response = self.head(request).await?;
                let status = response.status().as_u16();
                let headers = header_list(&response);
                let mut body = response.into_body();
                let (sender, receiver) = tokio::sync::mpsc::channel(16);
                tokio::spawn(async move {
                    use http_body_util::BodyExt;
                    while let Some(frame) = body.frame().await {
                        let piece = match frame {
                            Ok(frame) => match frame.into_data() {
                                Ok(data) => Ok(data.to_vec()),
                                // Trailers carry no body.
                                Err(_) => continue,
                            },
                            Err(e) => Err(FetchError::BodyCut(e.to_string())),
                        };
                        let failed = piece.is_err();
                        // The reader went away: nobody wants the rest.
                        if sender.send(piece).await.is_err() || failed {
                            return;
                        }
                    }
                });
                Ok(OpenResponse {
                    status,
                    headers,
                    body: receiver,
                })
            })
        }

        fn fetch(&self, request: FetchRequest) -> FetchFuture<'_> {
            Box::pin(async move {
                let response = self.head(request).await?;
                let status = response.status();
                let headers = header_list(&response);
                let body = read_body(response.into_body(), self.timeout, self.max_body_bytes)
                    .await
                    .map_err(FetchError::from)?;
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

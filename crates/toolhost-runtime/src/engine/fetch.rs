//! Which hosts tools may reach over HTTP (a JavaScript tool's `fetch`): none unless the
//! embedder says so with [`super::Runtime::set_fetch`], naming the hosts and the [`Fetcher`] that
//! carries the requests out (the command line and the server use the providers' HTTP client,
//! with its timeouts, proxies and body cap, and the hosts of toolhost.toml's `[fetch]` table).
//!
//! A host is allowed by an entry equal to it (`api.example.com`, any port), equal to it with
//! its port (`localhost:8080`), or `*.example.com` for its subdomains. Only `http` and `https`
//! URLs, without credentials in them; redirects are not followed (the tool gets the 3xx answer),
//! so an allowed host cannot send a request elsewhere.

use super::state_error::StateError;
use std::sync::Arc;
use toolhost_providers::fetch::{FetchRequest, FetchResponse, Fetcher};

/// The hosts tools may fetch from, and what fetches.
pub struct FetchPolicy {
    allowed: Vec<String>,
    fetcher: Arc<dyn Fetcher>,
}

impl std::fmt::Debug for FetchPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchPolicy")
            .field("allowed", &self.allowed)
            .finish_non_exhaustive()
    }
}

/// The host and port of an `http` or `https` URL, or why it is refused.
fn host_of(url: &str) -> Result<(String, u16), String> {
    let (rest, default_port) = if let Some(rest) = url.strip_prefix("https://") {
        (rest, 443)
    } else if let Some(rest) = url.strip_prefix("http://") {
        (rest, 80)
    } else {
        return Err(format!("{url:?} is not an http or https URL"));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err("a URL with credentials in it is refused; send them in a header".to_owned());
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6
                .split_once(']')
                .ok_or_else(|| format!("{url:?} has a broken IPv6 address"))?;
            (host.to_owned(), after.strip_prefix(':'))
        }
        None => match authority.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (authority.to_owned(), None),
        },
    };
    if host.is_empty() {
        return Err(format!("{url:?} names no host"));
    }
    let port = match port {
        Some(p) => p
            .parse::<u16>()
            .map_err(|_| format!("{url:?} has a port that is not a number"))?,
        None => default_port,
    };
    Ok((host.to_ascii_lowercase(), port))
}

impl FetchPolicy {
    /// Tools may reach the hosts `allowed` (see the module page) through `fetcher`.
    pub fn new(allowed: Vec<String>, fetcher: Arc<dyn Fetcher>) -> Self {
        let allowed = allowed
            .into_iter()
            .map(|h| h.trim().to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .collect();
        FetchPolicy { allowed, fetcher }
    }

    /// Whether `url` may be fetched; why not when it may not.
    pub fn check(&self, url: &str) -> Result<(), StateError> {
        let (host, port) = host_of(url).map_err(StateError::BadUrl)?;
        let with_port = format!("{host}:{port}");
        let allowed = self.allowed.iter().any(|entry| {
            *entry == host
                || *entry == with_port
                || entry
                    .strip_prefix("*.")
                    .is_some_and(|domain| host.ends_with(&format!(".{domain}")))
        });
        if allowed {
            return Ok(());
        }
        Err(StateError::HostNotAllowed {
            host,
            allowed: if self.allowed.is_empty() {
                "none".to_owned()
            } else {
                self.allowed.join(", ")
            },
        })
    }

    /// Sends `request` if its URL is allowed.
    pub async fn fetch(&self, request: FetchRequest) -> Result<FetchResponse, StateError> {
        self.check(&request.url)?;
        self.fetcher.fetch(request).await.map_err(StateError::Fetch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_providers::fetch::FetchFuture;

    struct Never;
    impl Fetcher for Never {
        fn fetch(&self, _: FetchRequest) -> FetchFuture<'_> {
            Box::pin(async {
                Err(toolhost_providers::fetch::FetchError::Connection(
                    "not here".to_owned(),
                ))
            })
        }
    }

    #[test]
    fn only_the_hosts_named_are_allowed() {
        let policy = FetchPolicy::new(
            vec![
                "api.example.com".into(),
                "localhost:8080".into(),
                "*.tides.org".into(),
            ],
            Arc::new(Never),
        );
        assert!(policy.check("https://api.example.com/v1?q=1").is_ok());
        assert!(policy.check("http://API.example.com:9000/").is_ok());
        assert!(policy.check("http://localhost:8080/x").is_ok());
        assert!(policy.check("http://localhost:8081/x").is_err());
        assert!(policy.check("https://north.tides.org/").is_ok());
        assert!(policy.check("https://tides.org.evil.com/").is_err());
        assert!(policy.check("https://api.example.com.evil.com/").is_err());
        assert!(policy.check("https://user:pw@api.example.com/").is_err());
        assert!(policy.check("file:///etc/passwd").is_err());
        assert!(policy.check("http://[::1]:8080/").is_err());
    }
}

//! Which addresses a direct connection may reach. Model adapters and MCP clients reach whatever
//! their URL names (a local model server is a common case); the fetcher of tools
//! (`HttpFetcher::public_only` in `fetch`) reaches only public addresses when a host name is
//! resolved, so that an allowed name that resolves to a loopback, private or link-local address
//! (by mistake or by an attacker's DNS) cannot reach the machine's own or its network's
//! services. The check is on the addresses the connection is made to, after resolution, so a
//! name that resolves differently later cannot slip past it. An address written in the URL
//! itself is not resolved and reaches where it says: naming it there (and in the project's
//! allowed hosts) is the explicit permission.

use hyper_util::client::legacy::connect::dns::{GaiResolver, Name};
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};
use tower_service::Service;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What a direct connection may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Any address a name resolves to.
    Any,
    /// Only public addresses of a resolved name (see [`is_public`]).
    PublicOnly,
}

/// The system's resolver, keeping only what [`Reach`] allows.
#[derive(Clone)]
pub(crate) struct Resolver {
    system: GaiResolver,
    reach: Reach,
}

impl Resolver {
    pub(crate) fn new(reach: Reach) -> Self {
        Resolver {
            system: GaiResolver::new(),
            reach,
        }
    }
}

impl Service<Name> for Resolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.system.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let host = name.as_str().to_owned();
        let resolving = self.system.call(name);
        let reach = self.reach;
        Box::pin(async move {
            let found: Vec<SocketAddr> = resolving.await?.collect();
            if reach == Reach::Any {
                return Ok(found.into_iter());
            }
            let (public, refused): (Vec<_>, Vec<_>) =
                found.into_iter().partition(|a| is_public(a.ip()));
            if public.is_empty() && !refused.is_empty() {
                let shown: Vec<String> = refused.iter().map(|a| a.ip().to_string()).collect();
                return Err(format!(
                    "{host} resolves only to addresses tools may not reach ({}): loopback, \
                     private and link-local addresses are refused for a name; to reach one, \
                     write the address itself in the URL and in the project's [fetch] hosts",
                    shown.join(", ")
                )
                .into());
            }
            Ok(public.into_iter())
        })
    }
}

/// Whether `ip` is a public address: not loopback, unspecified, private (RFC 1918, unique
/// local), shared (RFC 6598), link-local, multicast or broadcast, nor an IPv4 address of those
/// kinds inside an IPv6 one.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => public_v4(v4),
            None => public_v6(v6),
        },
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || a == 0
        // Shared address space (carrier-grade NAT).
        || (a == 100 && (64..128).contains(&b)))
}

fn public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        // Unique local (fc00::/7) and link-local (fe80::/10).
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_public() {
        for refused in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
        ] {
            assert!(!is_public(refused.parse().unwrap()), "{refused}");
        }
        for public in ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "100.128.0.1"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[tokio::test]
    async fn a_name_of_loopback_is_refused_when_only_public_addresses_may_be_reached() {
        let name: Name = "localhost".parse().unwrap();
        let refused = Resolver::new(Reach::PublicOnly)
            .call(name.clone())
            .await
            .unwrap_err();
        assert!(refused.to_string().contains("may not reach"), "{refused}");
        let any: Vec<SocketAddr> = Resolver::new(Reach::Any)
            .call(name)
            .await
            .unwrap()
            .collect();
        assert!(any.iter().all(|a| a.ip().is_loopback()) && !any.is_empty());
    }
}

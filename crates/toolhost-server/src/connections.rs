//! Accepting and serving connections: each one is served by hyper's HTTP/1 server with a timeout
//! for a request's head ([`crate::ServerConfig::header_read_timeout`]), so that a client that
//! opens connections and never finishes their headers cannot hold them; and one client address
//! holds at most [`crate::ServerConfig::max_connections_per_client`] at once, a connection past
//! that being closed at once. Answers leave without Nagle's delay. On shutdown, connections
//! finish the request under way and close; the serving ends once every connection has.

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower_service::Service;

/// The open connections of each client address.
#[derive(Default)]
struct Clients(Mutex<HashMap<IpAddr, usize>>);

/// One connection counted against its client's cap until it is dropped.
struct Counted {
    clients: Arc<Clients>,
    ip: IpAddr,
}

impl Clients {
    /// Counts a connection from `ip`, unless that client already holds `cap`.
    fn admit(self: &Arc<Self>, ip: IpAddr, cap: usize) -> Option<Counted> {
        let mut open = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let count = open.entry(ip).or_default();
        if *count >= cap {
            return None;
        }
        *count += 1;
        Some(Counted {
            clients: self.clone(),
            ip,
        })
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        let mut open = self.clients.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = open.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// How connections are taken.
pub(crate) struct Limits {
    pub(crate) header_read_timeout: Duration,
    pub(crate) per_client: usize,
}

/// Serves `app` on `listener` until `shutdown` resolves, then lets each connection finish the
/// request under way and returns once all have closed.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let clients = Arc::new(Clients::default());
    // Dropped when the shutdown begins; each connection watches for that.
    let (stop, stopping) = watch::channel(());
    // Each connection holds a sender; the serving ends when none is left.
    let (open, mut closed) = tokio::sync::mpsc::channel::<()>(1);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors, or the like: wait a little rather than spin.
                    tracing::warn!(error = %e, "a connection could not be accepted");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(counted) = clients.admit(peer.ip(), limits.per_client) else {
            tracing::debug!(client = %peer.ip(), "connection refused: the client holds its cap");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            let mut app = app.clone();
            async move { app.call(request.map(axum::body::Body::new)).await }
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout);
        let mut stopping = stopping.clone();
        let still_open = open.clone();
        tokio::spawn(async move {
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            let mut connection = std::pin::pin!(connection.with_upgrades());
            tokio::select! {
                _ = connection.as_mut() => {}
                _ = stopping.changed() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
            drop((counted, still_open));
        });
    }
    drop(stop);
    drop(open);
    // Every connection's sender dropped: `recv` then ends.
    let _ = closed.recv().await;
}

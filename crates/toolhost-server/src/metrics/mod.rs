//! What the server counts, for `GET /metrics`: requests by route template, method and status
//! class, their duration, and the event streams open. Runs are counted by [`crate::runs`] and
//! the store counts its own writes; [`text`] writes all of it in the Prometheus text format.
//!
//! The counts live in the server's state, not in a global registry, so two servers in one
//! process count apart. Labels hold route templates (`/v1/threads/{id}`), never raw paths: a
//! label per thread id would grow without bound.

pub(crate) mod layer;
pub(crate) mod text;

use axum::http::{Method, StatusCode};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// The upper bounds of the request duration buckets, in seconds.
pub(crate) const BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The route label of a request no route matched.
pub(crate) const UNMATCHED: &str = "unmatched";

/// The server's counts. Shared by every request; cheap to update.
#[derive(Default)]
pub(crate) struct Metrics {
    requests: Mutex<BTreeMap<RouteKey, RouteStats>>,
    streams_open: AtomicUsize,
}

/// A route template and a method.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct RouteKey {
    pub route: String,
    pub method: String,
}

/// What was seen of one route and method.
#[derive(Debug, Clone, Default)]
pub(crate) struct RouteStats {
    /// Answers by status class: 1xx to 5xx.
    pub by_class: [u64; 5],
    /// Requests per duration bucket (not cumulative), the last for longer than every bound.
    pub buckets: [u64; BUCKETS.len() + 1],
    /// The sum of the durations, in seconds.
    pub seconds: f64,
}

impl RouteStats {
    /// Every request of the route and method.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }
}

impl Metrics {
    /// Counts a request of `route` (a template, or [`UNMATCHED`]) answered with `status` after
    /// `took`.
    pub fn observe(&self, route: &str, method: &Method, status: StatusCode, took: Duration) {
        let key = RouteKey {
            route: route.to_owned(),
            method: method_label(method).to_owned(),
        };
        let seconds = took.as_secs_f64();
        let class = (status.as_u16() / 100).clamp(1, 5) as usize - 1;
        let bucket = BUCKETS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(BUCKETS.len());
        let mut requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        let stats = requests.entry(key).or_default();
        stats.by_class[class] += 1;
        stats.buckets[bucket] += 1;
        stats.seconds += seconds;
    }

    /// Every route and method seen so far, in order.
    pub fn requests(&self) -> Vec<(RouteKey, RouteStats)> {
        let requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        requests
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// An event stream opened; it counts as open until the guard is dropped.
    pub fn stream_opened(self: &std::sync::Arc<Self>) -> StreamGuard {
        self.streams_open.fetch_add(1, Ordering::SeqCst);
        StreamGuard(self.clone())
    }

    /// The event streams open now.
    pub fn streams_open(&self) -> usize {
        self.streams_open.load(Ordering::SeqCst)
    }
}

/// Holds an event stream's place in the count of open streams.
pub(crate) struct StreamGuard(std::sync::Arc<Metrics>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0.streams_open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A method as a label: the ones the API answers, or `other`, so that no client can add
/// labels by inventing methods.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        Method::HEAD => "HEAD",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invented_methods_share_one_label() {
        let m = Metrics::default();
        for name in ["A1", "A2", "PURGE", "BREW"] {
            let method = Method::from_bytes(name.as_bytes()).unwrap();
            m.observe("unmatched", &method, StatusCode::NOT_FOUND, Duration::ZERO);
        }
        let all = m.requests();
        assert_eq!(all.len(), 1, "one label for every invented method");
        assert_eq!(all[0].0.method, "other");
        assert_eq!(all[0].1.count(), 4);
    }

    #[test]
    fn requests_fall_in_their_class_and_bucket() {
        let m = Metrics::default();
        let route = "/v1/threads/{id}";
        m.observe(
            route,
            &Method::GET,
            StatusCode::OK,
            Duration::from_millis(3),
        );
        m.observe(
            route,
            &Method::GET,
            StatusCode::NOT_FOUND,
            Duration::from_secs(60),
        );
        let all = m.requests();
        assert_eq!(all.len(), 1);
        let (key, stats) = &all[0];
        assert_eq!((key.route.as_str(), key.method.as_str()), (route, "GET"));
        assert_eq!(stats.by_class, [0, 1, 0, 1, 0]);
        assert_eq!(stats.buckets[0], 1);
        assert_eq!(stats.buckets[BUCKETS.len()], 1);
        assert_eq!(stats.count(), 2);
    }

    #[test]
    fn a_stream_counts_while_its_guard_lives() {
        let m = std::sync::Arc::new(Metrics::default());
        let guard = m.stream_opened();
        assert_eq!(m.streams_open(), 1);
        drop(guard);
        assert_eq!(m.streams_open(), 0);
    }
}

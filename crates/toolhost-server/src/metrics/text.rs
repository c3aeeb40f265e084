//! The Prometheus text exposition format, version 0.0.4: for each metric a `# HELP` and a
//! `# TYPE` line, then one sample per line, `name{label="value",...} number`. Label values
//! escape `\`, `"` and line feeds; histogram buckets are cumulative and end with `le="+Inf"`.

use super::{RouteKey, RouteStats, BUCKETS};
use crate::runs::RunCounts;
use std::fmt::Write as _;
use toolhost_store::WriteStats;

/// The content type of the format.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Everything `GET /metrics` shows.
pub(crate) struct Snapshot {
    pub requests: Vec<(RouteKey, RouteStats)>,
    pub runs: RunCounts,
    pub streams_open: usize,
    /// `None` when the store does not count its writes.
    pub store: Option<WriteStats>,
}

const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// The snapshot as exposition text.
pub(crate) fn render(s: &Snapshot) -> String {
    let mut out = String::new();
    requests(&mut out, s);
    single(
        &mut out,
        "toolhost_runs_started_total",
        "counter",
        "Runs of threads this server started.",
        s.runs.started as f64,
    );
    header(
        &mut out,
        "toolhost_runs_ended_total",
        "counter",
        "Runs of threads this server started that ended, by outcome (done, paused, failed, owned_elsewhere).",
    );
    for (outcome, n) in &s.runs.ended {
        let labels = format!("{{outcome=\"{}\"}}", escape(outcome));
        sample(&mut out, "toolhost_runs_ended_total", &labels, *n as f64);
    }
    single(
        &mut out,
        "toolhost_runs_under_way",
        "gauge",
        "Runs of threads this server has under way.",
        s.runs.under_way as f64,
    );
    single(
        &mut out,
        "toolhost_event_streams_open",
        "gauge",
        "Server-sent event streams open now.",
        s.streams_open as f64,
    );
    if let Some(stats) = s.store {
        single(
            &mut out,
            "toolhost_store_writes_total",
            "counter",
            "Writes the store applied (batches, thread creations, lease operations).",
            stats.writes as f64,
        );
        single(
            &mut out,
            "toolhost_store_commits_total",
            "counter",
            "Transactions the store committed for its writes; fewer than writes when writes shared a commit.",
            stats.commits as f64,
        );
    }
    out
}

/// The HTTP requests answered (by route, method and status class) and how long they took.
fn requests(out: &mut String, s: &Snapshot) {
    header(
        out,
        "toolhost_http_requests_total",
        "counter",
        "HTTP requests answered, by route template, method and status class.",
    );
    for (key, stats) in &s.requests {
        for (class, n) in CLASSES.iter().zip(stats.by_class) {
            if n > 0 {
                let labels = route_labels(key, &[("status", class)]);
                sample(out, "toolhost_http_requests_total", &labels, n as f64);
            }
        }
    }
    header(
        out,
        "toolhost_http_request_duration_seconds",
        "histogram",
        "Time until an answer's head, by route template and method.",
    );
    for (key, stats) in &s.requests {
        let mut cumulative = 0;
        for (i, n) in stats.buckets.iter().enumerate() {
            cumulative += n;
            let le = BUCKETS.get(i).map_or("+Inf".to_owned(), |b| b.to_string());
            let labels = route_labels(key, &[("le", &le)]);
            sample(
                out,
                "toolhost_http_request_duration_seconds_bucket",
                &labels,
                cumulative as f64,
            );
        }
        let labels = route_labels(key, &[]);
        let name = "toolhost_http_request_duration_seconds";
        sample(out, &format!("{name}_sum"), &labels, stats.seconds);
        sample(out, &format!("{name}_count"), &labels, stats.count() as f64);
    }
}

/// A metric without labels: its header and its one sample.
fn single(out: &mut String, name: &str, kind: &str, help: &str, value: f64) {
    header(out, name, kind, help);
    sample(out, name, "", value);
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn sample(out: &mut String, name: &str, labels: &str, value: f64) {
    let _ = writeln!(out, "{name}{labels} {value}");
}

/// `{route="...",method="...",extra...}`.
fn route_labels(key: &RouteKey, extra: &[(&str, &str)]) -> String {
    let mut labels = format!(
        "{{route=\"{}\",method=\"{}\"",
        escape(&key.route),
        escape(&key.method)
    );
    for (name, value) in extra {
        let _ = write!(labels, ",{name}=\"{}\"", escape(value));
    }
    labels.push('}');
    labels
}

/// A label value with `\`, `"` and line feeds escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_labels_escaped() {
        let mut stats = RouteStats::default();
        stats.by_class[1] = 2;
        stats.buckets[0] = 1;
        stats.buckets[3] = 1;
        stats.seconds = 0.05;
        let key = RouteKey {
            route: "/odd\"\\\n".into(),
            method: "GET".into(),
        };
        let text = render(&Snapshot {
            requests: vec![(key, stats)],
            runs: RunCounts::default(),
            streams_open: 0,
            store: Some(WriteStats {
                writes: 7,
                commits: 3,
            }),
        });
        let route = r#"route="/odd\"\\\n",method="GET""#;
        assert!(text.contains(&format!(
            "toolhost_http_requests_total{{{route},status=\"2xx\"}} 2\n"
        )));
        assert!(text.contains(&format!(
            "toolhost_http_request_duration_seconds_bucket{{{route},le=\"0.005\"}} 1\n"
        )));
        assert!(text.contains(&format!(
            "toolhost_http_request_duration_seconds_bucket{{{route},le=\"0.025\"}} 1\n"
        )));
        assert!(text.contains(&format!(
            "toolhost_http_request_duration_seconds_bucket{{{route},le=\"0.05\"}} 2\n"
        )));
        assert!(text.contains(&format!(
            "toolhost_http_request_duration_seconds_bucket{{{route},le=\"+Inf\"}} 2\n"
        )));
        assert!(text.contains(&format!(
            "toolhost_http_request_duration_seconds_count{{{route}}} 2\n"
        )));
        assert!(text.contains("toolhost_store_commits_total 3\n"));
        assert!(text.contains("# TYPE toolhost_runs_under_way gauge\n"));
    }
}

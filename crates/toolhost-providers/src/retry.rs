//! When and how long to wait before an HTTP exchange is tried again.
//!
//! Only the HTTP exchange is retried, never a model request whose tool calls have started to
//! run: that decision belongs to the runtime, which must not ask again once a call ran.

#[cfg(feature = "http")]
use crate::ModelError;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The bound on retries of transient failures (429, 5xx, timeouts, resets, cut streams).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 means no retry).
    pub max_attempts: u32,
    /// The wait before the first retry; each later one doubles it.
    pub initial_backoff_ms: u64,
    /// The longest single wait of the exponential backoff.
    pub max_backoff_ms: u64,
    /// The most time spent waiting between attempts, all retries together. A `Retry-After`
    /// asking for more than is left ends the retries at once.
    pub max_total_wait_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            initial_backoff_ms: 500,
            max_backoff_ms: 20_000,
            max_total_wait_ms: 60_000,
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1` after attempt `attempt` (1-based) failed: the
    /// server's `Retry-After` when it gave one (at most [`MAX_SERVER_WAIT`]), else exponential
    /// backoff with jitter (a random point in the upper half of the step, so that clients
    /// spread out).
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(wait) = retry_after {
            return wait.min(MAX_SERVER_WAIT);
        }
        let step = self
            .initial_backoff_ms
            .saturating_mul(1u64 << attempt.saturating_sub(1).min(30))
            .min(self.max_backoff_ms);
        let half = step / 2;
        Duration::from_millis(half + jitter(step - half + 1))
    }

    /// The longest total wait, as a duration.
    pub fn max_total_wait(&self) -> Duration {
        Duration::from_millis(self.max_total_wait_ms)
    }

    /// What follows attempt `attempt` (1-based) failing with `error`, after `waited` spent
    /// waiting so far. Decided on the error's kind and the wait its server asked for.
    #[cfg(feature = "http")]
    pub(crate) fn after(&self, error: &ModelError, attempt: u32, waited: Duration) -> RetryStep {
        if !error.is_retryable() {
            return RetryStep::Fail;
        }
        if attempt >= self.max_attempts {
            return RetryStep::GiveUp(format!(
                "gave up after {attempt} attempt{} ({:.1} s of waiting)",
                if attempt == 1 { "" } else { "s" },
                waited.as_secs_f64()
            ));
        }
        let delay = self.delay(attempt, error.retry_after());
        if waited.saturating_add(delay) > self.max_total_wait() {
            let clamped = if delay == MAX_SERVER_WAIT {
                format!(
                    " (the server's wait, clamped to the {} s limit)",
                    MAX_SERVER_WAIT.as_secs()
                )
            } else {
                String::new()
            };
            return RetryStep::GiveUp(format!(
                "gave up after {attempt} attempt{}: the next wait of {:.1} s{clamped} would pass the retry budget of {:.1} s",
                if attempt == 1 { "" } else { "s" },
                delay.as_secs_f64(),
                self.max_total_wait().as_secs_f64()
            ));
        }
        RetryStep::Wait(delay)
    }
}

/// What follows a failed attempt.
#[cfg(feature = "http")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RetryStep {
    /// Wait this long, then try again.
    Wait(Duration),
    /// Stop with the error as it is: sending the same request again cannot help.
    Fail,
    /// Stop although a retry might help: the attempts or the wait budget are used up (why).
    GiveUp(String),
}

/// A pseudo-random number below `bound` (splitmix64 over a counter seeded by the clock).
fn jitter(bound: u64) -> u64 {
    static STATE: AtomicU64 = AtomicU64::new(0);
    if bound <= 1 {
        return 0;
    }
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut z = STATE
        .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
        .wrapping_add(seed);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) % bound
}

/// The longest wait taken from a server. A longer one (`Retry-After: 1e20`, a date in the
/// next century) is clamped to this, which still passes any sensible retry budget, so the
/// retries end at once with an error naming the limit instead of overflowing a clock.
pub const MAX_SERVER_WAIT: Duration = Duration::from_secs(24 * 60 * 60);

/// A wait of `seconds` a server asked for: `None` for a negative number or NaN, and at most
/// [`MAX_SERVER_WAIT`] however large (infinity included).
pub(crate) fn server_wait_secs(seconds: f64) -> Option<Duration> {
    if seconds.is_nan() || seconds < 0.0 {
        return None;
    }
    if seconds >= MAX_SERVER_WAIT.as_secs_f64() {
        return Some(MAX_SERVER_WAIT);
    }
    Duration::try_from_secs_f64(seconds).ok()
}

/// Reads a `Retry-After` value: seconds (a decimal fraction is taken too), or an HTTP date in
/// any of the three forms HTTP allows (`Sun, 06 Nov 1994 08:49:37 GMT`, `Sunday, 06-Nov-94
/// 08:49:37 GMT`, `Sun Nov  6 08:49:37 1994`) taken relative to `now`. A date in the past means
/// no wait; every wait is clamped to [`MAX_SERVER_WAIT`]; anything else is `None`.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return server_wait_secs(seconds);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    let wait = at.duration_since(now).unwrap_or(Duration::ZERO);
    Some(wait.min(MAX_SERVER_WAIT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_takes_seconds_and_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_767); // Sun, 06 Nov 1994 08:49:27 GMT
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Sat, 05 Nov 1994 08:49:37 GMT", now),
            Some(Duration::ZERO)
        );
        // The two obsolete date forms HTTP still asks recipients to read.
        assert_eq!(
            parse_retry_after("Sunday, 06-Nov-94 08:49:57 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Sun Nov  6 08:50:27 1994", now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            parse_retry_after("0.25", now),
            Some(Duration::from_millis(250))
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
        assert_eq!(parse_retry_after("NaN", now), None);
        // Absurd waits are clamped, never a panic and never ignored.
        for absurd in [
            "1e20",
            "1e300",
            "1e400",
            "18446744073709551615",
            "99999999999999999999999",
        ] {
            assert_eq!(
                parse_retry_after(absurd, now),
                Some(MAX_SERVER_WAIT),
                "{absurd}"
            );
        }
        assert_eq!(
            parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now),
            Some(MAX_SERVER_WAIT)
        );
    }

    #[test]
    fn backoff_doubles_within_bounds_and_honours_the_server() {
        let p = RetryPolicy {
            max_attempts: 5,
            initial_backoff_ms: 100,
            max_backoff_ms: 300,
            max_total_wait_ms: 1000,
        };
        for _ in 0..50 {
            let first = p.delay(1, None).as_millis();
            assert!((50..=100).contains(&first), "{first}");
            let third = p.delay(3, None).as_millis();
            assert!((150..=300).contains(&third), "{third}");
        }
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
    }

    #[test]
    #[cfg(feature = "http")]
    fn the_kind_and_the_server_s_wait_decide_the_next_step() {
        use crate::{ModelApi, ModelErrorKind};
        let p = RetryPolicy {
            max_attempts: 3,
            initial_backoff_ms: 100,
            max_backoff_ms: 300,
            max_total_wait_ms: 1000,
        };
        let error = |kind| ModelError::new(ModelApi::AnthropicMessages, kind, "x");
        for kind in [
            ModelErrorKind::Authentication,
            ModelErrorKind::ContextLength,
            ModelErrorKind::BadRequest,
            ModelErrorKind::MalformedAnswer,
            ModelErrorKind::Script,
        ] {
            assert_eq!(p.after(&error(kind), 1, Duration::ZERO), RetryStep::Fail);
        }
        let overloaded = error(ModelErrorKind::Overloaded);
        assert!(matches!(
            p.after(&overloaded, 1, Duration::ZERO),
            RetryStep::Wait(d) if d <= Duration::from_millis(100)
        ));
        assert!(matches!(
            p.after(&overloaded, 3, Duration::ZERO),
            RetryStep::GiveUp(why) if why.starts_with("gave up after 3 attempts")
        ));
        let asked =
            error(ModelErrorKind::RateLimit).with_retry_after(Some(Duration::from_millis(700)));
        assert_eq!(
            p.after(&asked, 1, Duration::ZERO),
            RetryStep::Wait(Duration::from_millis(700))
        );
        assert!(matches!(
            p.after(&asked, 2, Duration::from_millis(400)),
            RetryStep::GiveUp(why) if why.contains("would pass the retry budget of 1.0 s")
        ));
    }
}

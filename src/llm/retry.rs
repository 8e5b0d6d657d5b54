//! Bounded retries with exponential backoff and jitter, honouring
//! `Retry-After`, for errors that may pass (429, 5xx, network).

use std::future::Future;
use std::time::Duration;

use super::error::{LlmError, Result};
use crate::cancel::{until_cancelled, CancelToken};
use crate::platform;

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Delay before the first retry; doubles each time.
    pub base_delay: Duration,
    /// Longest computed delay.
    pub max_delay: Duration,
    /// Longest `Retry-After` honoured; a longer one fails at once.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries.
    pub fn none() -> RetryPolicy {
        RetryPolicy { max_retries: 0, ..RetryPolicy::default() }
    }

    /// The wait before retry number `retry` (0-based) after `error`, or
    /// `None` when the error should not be retried.
    pub fn delay(&self, retry: u32, error: &LlmError) -> Option<Duration> {
        if retry >= self.max_retries || !error.is_retryable() {
            return None;
        }
        let exp = self.base_delay.saturating_mul(1u32 << retry.min(16)).min(self.max_delay);
        // "Equal jitter": half fixed, half random, so clients spread out.
        let jittered = exp.mul_f64(0.5 + platform::random_f64() * 0.5);
        match error {
            LlmError::RateLimited { retry_after: Some(wait), .. } if *wait > self.max_retry_after => None,
            LlmError::RateLimited { retry_after: Some(wait), .. } => Some((*wait).max(jittered)),
            _ => Some(jittered),
        }
    }
}

/// What one attempt reports on failure: the error, and whether output was
/// already delivered (then a retry would repeat it, so none is made).
pub struct AttemptError {
    pub error: LlmError,
    pub delivered_output: bool,
}

impl From<LlmError> for AttemptError {
    fn from(error: LlmError) -> AttemptError {
        AttemptError { error, delivered_output: false }
    }
}

/// Runs `attempt` (given the attempt number) until it succeeds, fails for
/// good, or `cancel` fires (then [`LlmError::Aborted`]).
pub async fn with_retries<T, F, Fut>(policy: &RetryPolicy, cancel: &CancelToken, mut attempt: F) -> Result<T>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = std::result::Result<T, AttemptError>>,
{
    let mut number = 0;
    loop {
        if cancel.is_cancelled() {
            return Err(LlmError::Aborted);
        }
        let failure = match attempt(number).await {
            Ok(value) => return Ok(value),
            Err(failure) => failure,
        };
        if cancel.is_cancelled() {
            return Err(LlmError::Aborted);
        }
        let wait = if failure.delivered_output { None } else { policy.delay(number, &failure.error) };
        let Some(wait) = wait else {
            return Err(failure.error);
        };
        if until_cancelled(cancel, platform::sleep(wait)).await.is_none() {
            return Err(LlmError::Aborted);
        }
        number += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn fast() -> RetryPolicy {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(4),
            ..RetryPolicy::default()
        }
    }

    fn unavailable() -> LlmError {
        LlmError::UpstreamUnavailable { status: Some(503), message: "busy".into() }
    }

    #[test]
    fn retries_transient_errors_then_succeeds() {
        let calls = Cell::new(0);
        let out = futures_executor::block_on(with_retries(&fast(), &CancelToken::new(), |_| {
            calls.set(calls.get() + 1);
            let n = calls.get();
            async move {
                if n < 3 {
                    Err(unavailable().into())
                } else {
                    Ok(n)
                }
            }
        }));
        assert_eq!(out, Ok(3));
    }

    #[test]
    fn gives_up_after_the_budget_and_on_permanent_errors() {
        let calls = Cell::new(0);
        let out: Result<()> = futures_executor::block_on(with_retries(&fast(), &CancelToken::new(), |_| {
            calls.set(calls.get() + 1);
            async { Err(unavailable().into()) }
        }));
        assert_eq!(out.unwrap_err().code(), "upstream_unavailable");
        assert_eq!(calls.get(), 4, "first attempt + 3 retries");

        calls.set(0);
        let out: Result<()> = futures_executor::block_on(with_retries(&fast(), &CancelToken::new(), |_| {
            calls.set(calls.get() + 1);
            async { Err(LlmError::Auth { status: 401, message: "no".into() }.into()) }
        }));
        assert_eq!(out.unwrap_err().code(), "auth");
        assert_eq!(calls.get(), 1);
    }

    #[test]
    fn no_retry_once_output_was_delivered() {
        let calls = Cell::new(0);
        let out: Result<()> = futures_executor::block_on(with_retries(&fast(), &CancelToken::new(), |_| {
            calls.set(calls.get() + 1);
            async { Err(AttemptError { error: unavailable(), delivered_output: true }) }
        }));
        assert!(out.is_err());
        assert_eq!(calls.get(), 1);
    }

    #[test]
    fn retry_after_is_honoured_and_bounded() {
        let policy = fast();
        let limited =
            |secs| LlmError::RateLimited { retry_after: Some(Duration::from_secs(secs)), message: String::new() };
        assert_eq!(policy.delay(0, &limited(2)), Some(Duration::from_secs(2)));
        assert_eq!(policy.delay(0, &limited(3600)), None, "too long a wait fails at once");
        let d = policy.delay(2, &unavailable()).unwrap();
        assert!(d >= Duration::from_millis(2) && d <= Duration::from_millis(4), "{d:?}");
    }

    #[test]
    fn cancel_during_backoff_aborts() {
        let cancel = CancelToken::new();
        let slow = RetryPolicy { base_delay: Duration::from_secs(30), max_delay: Duration::from_secs(30), ..fast() };
        let c = cancel.clone();
        let out: Result<()> = futures_executor::block_on(with_retries(&slow, &cancel, |_| {
            c.cancel();
            async { Err(unavailable().into()) }
        }));
        assert_eq!(out.unwrap_err(), LlmError::Aborted);
    }
}

//! Every outbound fetch of the OAuth server (client ID metadata documents,
//! the external issuer's JWKS URL) goes through one bounded fetcher
//! (issue 27, item 1): anyone may name a metadata document URL, so a
//! fetch must cost this server little whatever the other end does.
//!
//! - **size**: a declared `Content-Length` above the cap is refused before
//!   any of the body is read; otherwise the body is read chunk by chunk
//!   with a running count and the connection dropped once the count
//!   passes the cap (never the whole body first);
//! - **time**: one deadline for the whole fetch, connection, headers and
//!   body together (a slow drip cannot stretch it);
//! - **redirects**: never followed;
//! - **concurrency**: at most [`Limits::in_flight`] fetches at once per
//!   fetcher; one more is refused at once ([`FetchError::Busy`]), so no
//!   queue grows behind slow servers;
//! - **failures**: a URL whose fetch (or whose content, as its caller
//!   judged it) failed is not fetched again for [`NEGATIVE_TTL`]; the
//!   remembered failures are bounded ([`MAX_REMEMBERED_FAILURES`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use url::Url;

use super::public_addr;

/// How long a failed URL is answered from memory instead of fetched.
pub const NEGATIVE_TTL: Duration = Duration::from_secs(30);
/// Failed URLs remembered at once (the oldest is forgotten first).
pub const MAX_REMEMBERED_FAILURES: usize = 1024;
/// How long connecting may take (the total deadline, enforced around
/// the whole fetch, applies as well).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// What one fetcher allows.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest body read, in bytes.
    pub max_bytes: usize,
    /// The whole fetch, body included.
    pub total_time: Duration,
    /// Fetches at once.
    pub in_flight: usize,
}

/// Why a fetch gave nothing usable.
#[derive(Debug, thiserror::Error)]
pub enum FetchError<E: std::fmt::Display> {
    /// Too many fetches are in flight; try again later.
    #[error("too many outbound fetches in flight")]
    Busy,
    /// The URL failed lately and is not fetched again yet.
    #[error("failed less than {} s ago", NEGATIVE_TTL.as_secs())]
    FailedLately,
    /// No connection or no answer.
    #[error("fetch failed")]
    Transport,
    /// The deadline passed before the body was complete.
    #[error("took longer than {0} s")]
    TooSlow(u64),
    /// An answer other than 2xx (redirects included: never followed).
    #[error("answered {0}")]
    Status(u16),
    /// The declared `Content-Length` is above the cap; nothing was read.
    #[error("declared {declared} bytes, more than {cap}")]
    DeclaredTooLarge {
        /// What the answer declared.
        declared: u64,
        /// The cap.
        cap: usize,
    },
    /// The body grew past the cap; reading stopped there.
    #[error("more than {0} bytes")]
    TooLarge(usize),
    /// The caller refused the content.
    #[error("{0}")]
    Content(E),
}

/// A bounded fetcher: one `reqwest` client, its in-flight count and its
/// remembered failures.
pub struct Fetcher {
    http: reqwest::Client,
    limits: Limits,
    in_flight: AtomicUsize,
    failures: Mutex<HashMap<String, Instant>>,
}

impl Fetcher {
    /// A fetcher within `limits`. With `public_only`, names resolve to
    /// public addresses only and no proxy is used (for URLs anyone may
    /// name, on a server reachable from elsewhere).
    ///
    /// # Errors
    ///
    /// The TLS client cannot be built.
    pub fn new(limits: Limits, public_only: bool) -> Result<Fetcher, reqwest::Error> {
        let builder = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT.min(limits.total_time))
            .redirect(reqwest::redirect::Policy::none());
        let builder = if public_only {
            builder.no_proxy().dns_resolver(public_addr::PublicResolver)
        } else {
            builder
        };
        Ok(Fetcher {
            http: builder.build()?,
            limits,
            in_flight: AtomicUsize::new(0),
            failures: Mutex::new(HashMap::new()),
        })
    }

    /// `url`'s body (asking for `accept`), passed through `check`. Any
    /// failure, `check`'s included, is remembered for [`NEGATIVE_TTL`].
    ///
    /// # Errors
    ///
    /// [`FetchError`].
    pub async fn get<T, E: std::fmt::Display>(
        &self,
        url: &Url,
        accept: &str,
        check: impl FnOnce(&[u8]) -> Result<T, E>,
    ) -> Result<T, FetchError<E>> {
        let key = url.as_str();
        if self.failed_lately(key) {
            return Err(FetchError::FailedLately);
        }
        let Some(_slot) = Slot::take(&self.in_flight, self.limits.in_flight) else {
            // Not remembered: the URL did not fail, this server was busy.
            return Err(FetchError::Busy);
        };
        let fetched =
            match tokio::time::timeout(self.limits.total_time, self.read(url, accept)).await {
                Ok(result) => result,
                Err(_) => Err(FetchError::TooSlow(self.limits.total_time.as_secs())),
            };
        let result = fetched.and_then(|body| check(&body).map_err(FetchError::Content));
        if result.is_err() {
            self.remember_failure(key);
        }
        result
    }

    /// The body, read no further than the cap.
    async fn read<E: std::fmt::Display>(
        &self,
        url: &Url,
        accept: &str,
    ) -> Result<Vec<u8>, FetchError<E>> {
        let cap = self.limits.max_bytes;
        let mut response = self
            .http
            .get(url.as_str())
            .header("accept", accept)
            .send()
            .await
            .map_err(|_| FetchError::Transport)?;
        if !response.status().is_success() {
            return Err(FetchError::Status(response.status().as_u16()));
        }
        if let Some(declared) = response.content_length()
            && declared > cap as u64
        {
            return Err(FetchError::DeclaredTooLarge { declared, cap });
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|_| FetchError::Transport)? {
            if body.len() + chunk.len() > cap {
                // Dropping the response here closes the connection: the
                // rest is never read.
                return Err(FetchError::TooLarge(cap));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    fn failed_lately(&self, key: &str) -> bool {
        let failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        failures
            .get(key)
            .is_some_and(|at| at.elapsed() < NEGATIVE_TTL)
    }

    fn remember_failure(&self, key: &str) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if failures.len() >= MAX_REMEMBERED_FAILURES && !failures.contains_key(key) {
            failures.retain(|_, at| at.elapsed() < NEGATIVE_TTL);
            if failures.len() >= MAX_REMEMBERED_FAILURES
                && let Some(oldest) = failures
                    .iter()
                    .min_by_key(|(_, at)| **at)
                    .map(|(url, _)| url.clone())
            {
                failures.remove(&oldest);
            }
        }
        failures.insert(key.to_owned(), Instant::now());
    }
}

/// One of a fetcher's in-flight places, given back when dropped (a
/// cancelled request gives it back too).
struct Slot<'a>(&'a AtomicUsize);

impl<'a> Slot<'a> {
    fn take(count: &'a AtomicUsize, bound: usize) -> Option<Slot<'a>> {
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < bound).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(count))
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::{Fetcher, Limits, MAX_REMEMBERED_FAILURES};
    use std::time::Duration;

    fn fetcher() -> Fetcher {
        Fetcher::new(
            Limits {
                max_bytes: 16,
                total_time: Duration::from_secs(1),
                in_flight: 1,
            },
            false,
        )
        .unwrap()
    }

    #[test]
    fn remembered_failures_stay_bounded_and_keep_the_newest() {
        let f = fetcher();
        for i in 0..MAX_REMEMBERED_FAILURES + 10 {
            f.remember_failure(&format!("http://127.0.0.1/{i}"));
        }
        assert_eq!(f.failures.lock().unwrap().len(), MAX_REMEMBERED_FAILURES);
        assert!(f.failed_lately(&format!("http://127.0.0.1/{}", MAX_REMEMBERED_FAILURES + 9)));
    }
}

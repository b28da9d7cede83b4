//! Per-source limits of the unauthenticated OAuth endpoints (issue 27): a
//! source is the peer's IP address — an IPv6 peer's `/64`, the block one
//! host usually holds — and registrations are rate-limited per source
//! with a token bucket. Consent requests are bounded per source in
//! [`super::authorize`].

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::Extension;
use axum::extract::ConnectInfo;

/// Where a request comes from, as far as limits go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Source(IpAddr);

impl Source {
    /// The source of a peer address; without one (a server not wired to
    /// tell it), every request shares one source, which limits stricter.
    pub fn of(peer: Option<SocketAddr>) -> Source {
        let ip = match peer.map(|p| p.ip()) {
            None => IpAddr::from([0, 0, 0, 0]),
            Some(IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => {
                    let [a, b, c, d, ..] = v6.segments();
                    IpAddr::V6(Ipv6Addr::new(a, b, c, d, 0, 0, 0, 0))
                }
            },
            Some(v4) => v4,
        };
        Source(ip)
    }

    /// The source of a request, from the connection's address.
    pub fn of_request(peer: Option<Extension<ConnectInfo<SocketAddr>>>) -> Source {
        Source::of(peer.map(|Extension(ConnectInfo(addr))| addr))
    }
}

/// A token bucket per source: `burst` at once, then one per `refill`.
pub struct RateLimiter {
    burst: u32,
    refill: Duration,
    /// Sources tracked at once; beyond it, sources whose bucket is full
    /// again are forgotten, and if none is, the newcomer is refused.
    max_sources: usize,
    buckets: Mutex<HashMap<Source, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: u32,
    /// When the last token was added (or the bucket made).
    since: Instant,
}

impl RateLimiter {
    /// A limiter of `burst` requests at once, one more per `refill`.
    pub fn new(burst: u32, refill: Duration, max_sources: usize) -> RateLimiter {
        RateLimiter {
            burst,
            refill,
            max_sources,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn refilled(&self, bucket: Bucket, now: Instant) -> Bucket {
        let elapsed = now.saturating_duration_since(bucket.since);
        let periods = elapsed.as_nanos() / self.refill.as_nanos().max(1);
        let added = u32::try_from(periods).unwrap_or(u32::MAX);
        if added == 0 {
            return bucket;
        }
        let tokens = bucket.tokens.saturating_add(added).min(self.burst);
        let since = if tokens == self.burst {
            now
        } else {
            bucket.since + self.refill * added
        };
        Bucket { tokens, since }
    }

    /// Takes one request of `source`'s allowance at `now`.
    ///
    /// # Errors
    ///
    /// The allowance is used up: how long until the next one.
    pub fn take(&self, source: Source, now: Instant) -> Result<(), Duration> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if !buckets.contains_key(&source) && buckets.len() >= self.max_sources {
            buckets.retain(|_, b| self.refilled(*b, now).tokens < self.burst);
            if buckets.len() >= self.max_sources {
                return Err(self.refill);
            }
        }
        let fresh = Bucket {
            tokens: self.burst,
            since: now,
        };
        let bucket = buckets.entry(source).or_insert(fresh);
        *bucket = self.refilled(*bucket, now);
        if bucket.tokens == 0 {
            let next = bucket.since + self.refill;
            return Err(next
                .saturating_duration_since(now)
                .max(Duration::from_secs(1)));
        }
        bucket.tokens -= 1;
        Ok(())
    }
}

/// Whole seconds to put in `Retry-After` for `wait` (rounded up, at least 1).
pub fn retry_after_seconds(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(text: &str) -> Source {
        Source::of(Some(text.parse().unwrap()))
    }

    #[test]
    fn a_source_is_an_ipv4_address_or_an_ipv6_64() {
        assert_eq!(peer("10.0.0.1:1"), peer("10.0.0.1:2"));
        assert_ne!(peer("10.0.0.1:1"), peer("10.0.0.2:1"));
        assert_eq!(
            peer("[2001:db8:1:2::1]:1"),
            peer("[2001:db8:1:2:ffff::9]:1")
        );
        assert_ne!(peer("[2001:db8:1:2::1]:1"), peer("[2001:db8:1:3::1]:1"));
        assert_eq!(peer("[::ffff:10.0.0.1]:1"), peer("10.0.0.1:1"));
    }

    #[test]
    fn a_bucket_allows_its_burst_then_one_per_refill() {
        let limiter = RateLimiter::new(3, Duration::from_secs(10), 2);
        let t0 = Instant::now();
        let (a, b) = (peer("10.0.0.1:1"), peer("10.0.0.2:1"));
        for _ in 0..3 {
            limiter.take(a, t0).unwrap();
        }
        assert_eq!(limiter.take(a, t0), Err(Duration::from_secs(10)));
        // Another source has its own bucket.
        limiter.take(b, t0).unwrap();
        // The table is full of sources with used buckets: a third is refused.
        assert!(limiter.take(peer("10.0.0.3:1"), t0).is_err());
        let later = t0 + Duration::from_secs(11);
        limiter.take(a, later).unwrap();
        assert_eq!(limiter.take(a, later), Err(Duration::from_secs(9)));
        // Once the others' buckets are full again, they are forgotten.
        let much_later = t0 + Duration::from_secs(100);
        limiter.take(peer("10.0.0.3:1"), much_later).unwrap();
    }

    #[test]
    fn retry_after_rounds_up() {
        assert_eq!(retry_after_seconds(Duration::from_millis(1_001)), 2);
        assert_eq!(retry_after_seconds(Duration::from_secs(6)), 6);
    }
}

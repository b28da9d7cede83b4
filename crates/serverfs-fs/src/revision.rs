//! Revision tokens: optimistic-concurrency evidence for one object.

use rustix::fs::Stat;
use sha2::{Digest, Sha256};

/// An opaque token `v1:<16 lowercase hex>` naming one state of one object.
///
/// Derived from the full stat tuple — device, inode, mode, owner, group,
/// size, mtime (ns), ctime (ns), link count — hashed so that none of those
/// numbers leaks to a client. Any change to content, permissions, links or
/// identity gives a new token; reading never does. Two files with equal
/// bytes have different tokens. It is not a content hash.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Revision(String);

impl Revision {
    /// The token of the object described by `stat`.
    // `as` because the stat field types differ between architectures
    // (`c_long`, `c_ulong`, `u32`); every value fits an i64 on all of them.
    #[allow(clippy::unnecessary_cast)]
    pub fn from_stat(stat: &Stat) -> Revision {
        let material = format!(
            "{}:{}:{}:{}:{}:{}:{}:{}:{}",
            stat.st_dev,
            stat.st_ino,
            stat.st_mode,
            stat.st_uid,
            stat.st_gid,
            stat.st_size,
            nanos(stat.st_mtime as i64, stat.st_mtime_nsec as i64),
            nanos(stat.st_ctime as i64, stat.st_ctime_nsec as i64),
            stat.st_nlink,
        );
        let digest = Sha256::digest(material.as_bytes());
        let mut token = String::with_capacity(19);
        token.push_str("v1:");
        for byte in &digest[..8] {
            token.push_str(&format!("{byte:02x}"));
        }
        Revision(token)
    }

    /// The wire form.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A token with the given text, for unit tests of code keyed by
    /// revisions.
    #[cfg(test)]
    pub(crate) fn from_token(token: String) -> Revision {
        Revision(token)
    }
}

impl std::fmt::Display for Revision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn nanos(seconds: i64, nanoseconds: i64) -> i128 {
    i128::from(seconds) * 1_000_000_000 + i128::from(nanoseconds)
}

#[cfg(test)]
mod tests {
    use super::Revision;
    use rustix::fs::{Mode, OFlags, fstat, open};

    #[test]
    fn shape_and_sensitivity() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"one").unwrap();
        let fd = open(&path, OFlags::RDONLY, Mode::empty()).unwrap();
        let a = Revision::from_stat(&fstat(&fd).unwrap());
        assert_eq!(a.as_str().len(), 19);
        assert!(a.as_str().starts_with("v1:"));
        assert!(
            a.as_str()[3..]
                .chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_eq!(a, Revision::from_stat(&fstat(&fd).unwrap()), "stable");
        std::fs::write(&path, b"two!").unwrap();
        assert_ne!(
            a,
            Revision::from_stat(&fstat(&fd).unwrap()),
            "content change"
        );
    }
}

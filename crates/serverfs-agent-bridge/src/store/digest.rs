//! SHA-256 for result spooling, over the `sha2` crate: an incremental
//! hasher for spool files written in pieces, and a one-shot helper.

use sha2::Digest;

/// An incremental SHA-256 whose result is lowercase hex.
pub(crate) struct Sha256(sha2::Sha256);

impl Sha256 {
    /// A fresh hasher.
    pub(crate) fn new() -> Sha256 {
        Sha256(sha2::Sha256::new())
    }

    /// Feeds more bytes.
    pub(crate) fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// The digest as 64 lowercase hex characters.
    pub(crate) fn finish_hex(self) -> String {
        to_hex(&self.0.finalize())
    }
}

/// SHA-256 of `data` as lowercase hex.
pub(crate) fn sha256_hex(data: &[u8]) -> String {
    to_hex(&sha2::Sha256::digest(data))
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::{Sha256, sha256_hex};

    #[test]
    fn known_vectors_and_incremental_agree() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let mut hasher = Sha256::new();
        for piece in [&b"a"[..], b"b", b"c"] {
            hasher.update(piece);
        }
        assert_eq!(hasher.finish_hex(), sha256_hex(b"abc"));
    }
}

//! Secrets handed to clients (bearer tokens, OAuth tokens and codes): made
//! from the kernel's random bytes, stored only as SHA-256 hashes, compared
//! in constant time.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// `bytes` random bytes from the kernel.
///
/// # Errors
///
/// The kernel gave none.
pub fn random_bytes<const N: usize>() -> Result<[u8; N], rustix::io::Errno> {
    let mut random = [0u8; N];
    let mut filled = 0;
    while filled < random.len() {
        filled +=
            rustix::rand::getrandom(&mut random[filled..], rustix::rand::GetRandomFlags::empty())?;
    }
    Ok(random)
}

/// `prefix` and 43 URL-safe base64 characters (32 random bytes).
///
/// # Errors
///
/// The kernel gave no random bytes.
pub fn random_token(prefix: &str) -> Result<String, rustix::io::Errno> {
    Ok(format!(
        "{prefix}{}",
        URL_SAFE_NO_PAD.encode(random_bytes::<32>()?)
    ))
}

/// Lowercase hex SHA-256 of `text`: what is stored instead of a secret.
pub fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// URL-safe base64 (no padding) of the SHA-256 of `text`: the PKCE S256
/// transform (RFC 7636 §4.2).
pub fn sha256_base64url(text: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(text.as_bytes()))
}

/// Whether `presented` hashes to the stored lowercase hex `stored_hex`,
/// compared in constant time.
pub fn matches_hash(presented_hash: &str, stored_hex: &str) -> bool {
    constant_time_eq(presented_hash.as_bytes(), stored_hex.as_bytes())
}

/// Equality whose time depends only on the lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_differ_and_hashes_match() {
        let a = random_token("x_").unwrap();
        let b = random_token("x_").unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 45);
        assert!(matches_hash(&sha256_hex(&a), &sha256_hex(&a)));
        assert!(!matches_hash(&sha256_hex(&a), &sha256_hex(&b)));
        // RFC 7636 appendix B.
        assert_eq!(
            sha256_base64url("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}

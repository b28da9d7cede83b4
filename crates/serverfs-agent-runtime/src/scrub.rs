//! Credential scrubbing of provider text: what a provider echoes in an
//! error message (a proxy URL with userinfo, an `Authorization` header, an
//! API key) is removed before the text reaches a client, an event or the
//! task store (ARCHITECTURE.md invariant 9). Every adapter runs provider
//! error text through [`scrub_credentials`].

/// What a credential becomes in [`scrub_credentials`].
pub const CREDENTIAL_MARKER: &str = "<redacted>";

/// Shortest `sk-`/`sk_` token treated as an API key: shorter ones are
/// ordinary words (`sk-learn`), real keys are far longer.
const MIN_KEY_LEN: usize = 16;

/// Removes credentials a provider may echo in its error text (a proxy URL
/// it failed to reach, a rejected `Authorization` header, an API key named
/// in a message) before that text reaches a client or the task store
/// (ARCHITECTURE.md invariant 9).
///
/// * the userinfo of a URL (`scheme://user:pass@host`) becomes
///   `scheme://<redacted>@host`;
/// * the token after `Bearer` (any case, as a word) becomes `<redacted>`;
/// * an `sk-`/`sk_` key of at least 16 characters (letters, digits, `-`,
///   `_`), starting a word, becomes `<redacted>`.
///
/// Lexical like the rest of this module, linear in `text`, and idempotent:
/// its own output is left as it is.
///
/// ```
/// use serverfs_agent_runtime::scrub_credentials;
///
/// assert_eq!(
///     scrub_credentials("proxy http://bob:hunter2@proxy:3128 refused Bearer abc.def"),
///     "proxy http://<redacted>@proxy:3128 refused Bearer <redacted>"
/// );
/// ```
#[must_use]
pub fn scrub_credentials(text: &str) -> String {
    let text = scrub_userinfo(text);
    let text = scrub_bearer(&text);
    scrub_keys(&text)
}

/// URL userinfo: from each `://` the authority runs to the first `/`, `?`,
/// `#`, whitespace, quote or angle bracket; everything before its last
/// `@` is userinfo.
fn scrub_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut at = 0;
    while let Some(offset) = text[at..].find("://") {
        let start = at + offset + 3;
        let end = text[start..]
            .find(|c: char| {
                c.is_whitespace() || matches!(c, '/' | '?' | '#' | '"' | '\'' | '`' | '<' | '>')
            })
            .map_or(text.len(), |len| start + len);
        if let Some(last_at) = text[start..end].rfind('@') {
            out.push_str(&text[copied..start]);
            out.push_str(CREDENTIAL_MARKER);
            copied = start + last_at;
        }
        at = end.max(start);
    }
    out.push_str(&text[copied..]);
    out
}

/// Characters of an RFC 6750 `b64token` (its trailing `=` padding
/// included).
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~' | '+' | '/' | '=')
}

/// The token after a `Bearer` word and its blanks.
fn scrub_bearer(text: &str) -> String {
    const WORD: &str = "bearer";
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut at = 0;
    // ASCII lowercasing keeps every byte offset, so offsets found in
    // `lower` are offsets in `text`.
    while let Some(offset) = lower[at..].find(WORD) {
        let word = at + offset;
        let after_word = word + WORD.len();
        at = after_word;
        let starts_word = text[..word]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric());
        let blanks = text[after_word..]
            .find(|c: char| c != ' ' && c != '\t')
            .unwrap_or(text.len() - after_word);
        if !starts_word || blanks == 0 {
            continue;
        }
        let token = after_word + blanks;
        let token_end = text[token..]
            .find(|c: char| !is_token_char(c))
            .map_or(text.len(), |len| token + len);
        if token_end > token {
            out.push_str(&text[copied..token]);
            out.push_str(CREDENTIAL_MARKER);
            copied = token_end;
            at = token_end;
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// Characters of an `sk-` style key.
fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// `sk-`/`sk_` keys starting a word.
fn scrub_keys(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut at = 0;
    while let Some(offset) = text[at..].find("sk") {
        let start = at + offset;
        let end = text[start..]
            .find(|c: char| !is_key_char(c))
            .map_or(text.len(), |len| start + len);
        at = end.max(start + 2);
        let starts_word = text[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !is_key_char(c));
        let prefixed = matches!(text.as_bytes().get(start + 2), Some(b'-' | b'_'));
        if starts_word && prefixed && end - start >= MIN_KEY_LEN {
            out.push_str(&text[copied..start]);
            out.push_str(CREDENTIAL_MARKER);
            copied = end;
        }
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use serverfs_testkit::check_table;

    use super::*;

    #[test]
    fn credentials_are_scrubbed_from_provider_text() {
        check_table(
            "scrub_credentials",
            scrub_credentials,
            &[
                // URL userinfo, with and without a password, any scheme.
                (
                    "connect via http://bob:hunter2@proxy.example:3128 failed",
                    "connect via http://<redacted>@proxy.example:3128 failed",
                ),
                (
                    "socks5://token@10.0.0.1:1080/x",
                    "socks5://<redacted>@10.0.0.1:1080/x",
                ),
                // The last `@` of the authority ends the userinfo.
                (
                    "https://u:p@ss@host/path?q=a@b",
                    "https://<redacted>@host/path?q=a@b",
                ),
                ("'https://a:b@h'", "'https://<redacted>@h'"),
                // An `@` after the authority is no userinfo.
                (
                    "https://host/users/@me and mailto:x@y",
                    "https://host/users/@me and mailto:x@y",
                ),
                ("https://host:443/", "https://host:443/"),
                // Bearer tokens, any case, padding included.
                (
                    "401: Authorization: Bearer eyJhbGciOi.J9x_y-z~+/== rejected",
                    "401: Authorization: Bearer <redacted> rejected",
                ),
                ("bearer\tabc123, retry", "bearer\t<redacted>, retry"),
                ("\"BEARER abc\"", "\"BEARER <redacted>\""),
                // Prose loses the word after `bearer`: cheaper than guessing
                // which tokens are real.
                ("the bearer of news", "the bearer <redacted> news"),
                // Not the word `Bearer`, or no token after it.
                ("Bearer: none", "Bearer: none"),
                ("trailing Bearer", "trailing Bearer"),
                ("cobearer abc", "cobearer abc"),
                // `sk-`/`sk_` keys of 16 characters or more, as words.
                (
                    "invalid key sk-proj-AbCdEf0123456789xyz given",
                    "invalid key <redacted> given",
                ),
                ("key=sk_live_0123456789abcdef.", "key=<redacted>."),
                ("sk-0123456789abc", "<redacted>"),
                // Too short, or glued to a word: not a key.
                ("sk-012345678901", "sk-012345678901"),
                (
                    "sk-learn and disk-0123456789abcdef",
                    "sk-learn and disk-0123456789abcdef",
                ),
                ("risk_0123456789abcdefgh", "risk_0123456789abcdefgh"),
                ("skip-0123456789abcdef", "skip-0123456789abcdef"),
                // Everything at once; non-ASCII around it stays intact.
                (
                    "é https://a:b@h → Bearer t0k sk-0123456789abcdef ✓",
                    "é https://<redacted>@h → Bearer <redacted> <redacted> ✓",
                ),
                ("nothing to see", "nothing to see"),
                ("", ""),
            ],
        );
    }
}

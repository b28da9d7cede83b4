//! Workdir aliases: the only name a client ever uses for a workdir.

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;

/// Longest alias, in bytes (all alias characters are ASCII).
const MAX_ALIAS_LEN: usize = 32;

/// A validated workdir alias: `^[A-Za-z][A-Za-z0-9_-]{0,31}$`.
///
/// The alias is what clients pass as `workdir`, what `list_workdirs` shows and
/// what keys writer leases, so it is parsed once at the configuration edge and
/// carried as this type; code holding a `WorkdirAlias` never sees a bad one.
///
/// Aliases keep the case the operator wrote. Uniqueness inside one
/// configuration is decided ignoring ASCII case (see
/// [`WorkdirAlias::eq_ignore_case`]), so `Docs` and `docs` never name two
/// different workdirs.
///
/// ```
/// use serverfs_config::WorkdirAlias;
///
/// let alias: WorkdirAlias = "my-docs_2".parse()?;
/// assert_eq!(alias.as_str(), "my-docs_2");
/// assert!("2docs".parse::<WorkdirAlias>().is_err());
/// # Ok::<(), serverfs_config::InvalidAlias>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkdirAlias(String);

impl WorkdirAlias {
    /// Checks `text` against the alias rule; no trimming is done here.
    ///
    /// # Errors
    ///
    /// [`InvalidAlias`] when `text` is empty, longer than 32 characters,
    /// does not start with an ASCII letter, or contains anything other than
    /// ASCII letters, digits, `_` and `-`.
    pub fn new(text: &str) -> Result<WorkdirAlias, InvalidAlias> {
        let mut chars = text.chars();
        let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic());
        let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        // Only ASCII passed the checks above, so the byte length is the
        // character count.
        if first_ok && rest_ok && text.len() <= MAX_ALIAS_LEN {
            Ok(WorkdirAlias(text.to_owned()))
        } else {
            Err(InvalidAlias {
                alias: text.to_owned(),
            })
        }
    }

    /// The alias as configured.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether two aliases are the same ignoring ASCII case, the rule for
    /// uniqueness within a configuration.
    pub fn eq_ignore_case(&self, other: &WorkdirAlias) -> bool {
        self.0.eq_ignore_ascii_case(&other.0)
    }
}

impl FromStr for WorkdirAlias {
    type Err = InvalidAlias;

    fn from_str(text: &str) -> Result<WorkdirAlias, InvalidAlias> {
        WorkdirAlias::new(text)
    }
}

impl fmt::Display for WorkdirAlias {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for WorkdirAlias {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

// Lets maps keyed by alias be queried with a plain `&str` from a request.
impl Borrow<str> for WorkdirAlias {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// A string that is not a valid [`WorkdirAlias`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{alias:?} is not a valid workdir alias (a letter, then at most 31 letters, digits, '_' or '-')"
)]
pub struct InvalidAlias {
    /// The rejected text.
    pub alias: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_letters_digits_underscore_dash_after_a_letter() {
        for ok in ["a", "Z", "docs", "my-docs", "my_docs", "a1", "A-_-9", "x-"] {
            assert_eq!(
                WorkdirAlias::new(ok).map(|a| a.0),
                Ok(ok.to_owned()),
                "{ok}"
            );
        }
    }

    #[test]
    fn length_limit_is_thirty_two() {
        let max = format!("a{}", "b".repeat(31));
        assert_eq!(max.len(), 32);
        assert!(WorkdirAlias::new(&max).is_ok());
        let over = format!("a{}", "b".repeat(32));
        assert_eq!(
            WorkdirAlias::new(&over),
            Err(InvalidAlias {
                alias: over.clone()
            })
        );
    }

    #[test]
    fn rejects_bad_first_characters_and_others() {
        for bad in [
            "", "1docs", "_docs", "-docs", " docs", "docs ", "do cs", "do.cs", "do/cs", "dö", "é",
            "a\n", "a:b", "a=b",
        ] {
            assert!(WorkdirAlias::new(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn case_is_kept_but_equality_ignoring_case_is_available() {
        let a = WorkdirAlias::new("Docs").unwrap();
        let b = WorkdirAlias::new("docs").unwrap();
        assert_eq!(a.as_str(), "Docs");
        assert_ne!(a, b);
        assert!(a.eq_ignore_case(&b));
    }

    #[test]
    fn error_message_quotes_the_alias() {
        let err = WorkdirAlias::new("9x").unwrap_err();
        assert_eq!(
            err.to_string(),
            "\"9x\" is not a valid workdir alias (a letter, then at most 31 letters, digits, '_' or '-')"
        );
    }

    proptest! {
        #[test]
        fn property_matches_the_regex(text in "\\PC{0,40}") {
            let bytes = text.as_bytes();
            let expected = !bytes.is_empty()
                && bytes.len() <= 32
                && bytes[0].is_ascii_alphabetic()
                && bytes.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-');
            prop_assert_eq!(WorkdirAlias::new(&text).is_ok(), expected);
        }

        #[test]
        fn property_every_regex_string_is_accepted(text in "[A-Za-z][A-Za-z0-9_-]{0,31}") {
            prop_assert!(WorkdirAlias::new(&text).is_ok());
        }
    }
}

//! Who answers a delegated agent's approvals and questions, and how much
//! of a host path those requests show (issue 18).
//!
//! Both are per-workdir settings with a `[server]` default, like the agent
//! mode. `serverfs` reads [`ApprovalPolicy`] (the agent tools and MCP
//! elicitation obey it); the Bridge reads [`ApprovalPaths`] when it
//! redacts an approval or question for a client.

use std::fmt;

use crate::error::ConfigError;

/// A setting whose value is one of a few fixed words.
pub(crate) trait Word: Sized {
    /// Parses the exact configuration spelling.
    fn parse_word(text: &str) -> Option<Self>;
    /// The spellings as an error message lists them.
    fn expected() -> &'static str;
}

/// The value `spelling` names, or the error for `key`, which reports what
/// the operator `written` (the environment matches a lowered spelling).
pub(crate) fn word<T: Word>(key: &str, written: &str, spelling: &str) -> Result<T, ConfigError> {
    T::parse_word(spelling).ok_or_else(|| ConfigError::InvalidValue {
        key: key.to_owned(),
        expected: T::expected(),
        got: written.to_owned(),
    })
}

/// `one of "a", "b", "c"`, from the literals `"a", "b", "c"`.
macro_rules! quoted_list {
    ($first:literal $(, $rest:literal)*) => {
        concat!("one of \"", $first, "\"" $(, ", \"", $rest, "\"")*)
    };
}

/// Declares a setting whose value is one of a few fixed words: the enum,
/// its spellings in documentation order, `as_str`, `parse` and `Display`.
macro_rules! config_words {
    (
        $(#[$doc:meta])*
        $name:ident {
            $( $(#[$variant_doc:meta])* $variant:ident => $word:literal, )+
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$variant_doc])* $variant, )+
        }

        impl $name {
            /// Every value, in documentation order.
            pub const ALL: &'static [$name] = &[ $( $name::$variant, )+ ];

            /// The configuration spelling.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $word, )+
                }
            }

            /// Parses the exact configuration spelling (lower case).
            pub fn parse(text: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|value| value.as_str() == text)
            }

        }

        impl Word for $name {
            fn parse_word(text: &str) -> Option<$name> {
                $name::parse(text)
            }

            /// `one of "a", "b", "c"`.
            fn expected() -> &'static str {
                quoted_list!($($word),+)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

config_words! {
    /// Who may answer a delegated agent's approvals and questions on a
    /// workdir (`approvals`).
    ///
    /// The model can otherwise approve its own agent's actions; the human
    /// policies route the decision to the client's human through MCP
    /// elicitation or the Tasks extension's input requests.
    ApprovalPolicy {
        /// The model answers with `respond_agent_approval` and
        /// `answer_agent_question`, relaying its user's decision (the
        /// default: it works with every client).
        Model => "model",
        /// Only the client's human answers, through elicitation or
        /// `tasks/update`; the two answering tools refuse with
        /// `APPROVAL_REQUIRES_HUMAN`.
        Human => "human",
        /// As `human` for a client that can reach its human (it supports
        /// form elicitation, or the call used the Tasks extension); as
        /// `model` for any other client.
        HumanPreferred => "human-preferred",
    }
}

impl Default for ApprovalPolicy {
    /// [`ApprovalPolicy::Model`]: what every deployment did before the
    /// setting existed.
    fn default() -> ApprovalPolicy {
        ApprovalPolicy::Model
    }
}

config_words! {
    /// How approval and question payloads show host paths outside the
    /// workdir (`approval_paths`).
    ///
    /// Paths inside the workdir are always workdir-relative; only what lies
    /// outside differs (ARCHITECTURE.md invariant 4 and its exception).
    ApprovalPaths {
        /// Enough for a person to judge: well-known system locations
        /// (`/bin`, `/usr`, `/etc`, `/dev/null`…) as they are, paths under
        /// the Bridge user's home as `~/…`, anything else as
        /// `<outside-workdir>/…/<last component>` (the default).
        Informative => "informative",
        /// Every path outside the workdir is `<outside-workdir>`, as in
        /// events and final responses.
        Redacted => "redacted",
    }
}

impl Default for ApprovalPaths {
    /// [`ApprovalPaths::Informative`]: a human cannot judge an approval
    /// whose command reads `<outside-workdir> -lc '…'`.
    fn default() -> ApprovalPaths {
        ApprovalPaths::Informative
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip_and_nothing_else_parses() {
        for policy in ApprovalPolicy::ALL {
            assert_eq!(ApprovalPolicy::parse(policy.as_str()), Some(*policy));
        }
        for paths in ApprovalPaths::ALL {
            assert_eq!(ApprovalPaths::parse(paths.as_str()), Some(*paths));
        }
        for bad in ["", "Model", "HUMAN", "human_preferred", "humans", " model"] {
            assert_eq!(ApprovalPolicy::parse(bad), None, "{bad:?}");
        }
        for bad in ["", "Redacted", "full", "informative "] {
            assert_eq!(ApprovalPaths::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn defaults_and_messages_are_pinned() {
        assert_eq!(ApprovalPolicy::default(), ApprovalPolicy::Model);
        assert_eq!(ApprovalPaths::default(), ApprovalPaths::Informative);
        assert_eq!(
            word::<ApprovalPolicy>("k", "Humans", "humans")
                .unwrap_err()
                .to_string(),
            "k: expected one of \"model\", \"human\", \"human-preferred\", got \"Humans\""
        );
        assert_eq!(
            ApprovalPaths::expected(),
            "one of \"informative\", \"redacted\""
        );
    }
}

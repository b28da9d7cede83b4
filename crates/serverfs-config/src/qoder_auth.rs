//! `agent.qoder_auth`: how the Bridge hands `qodercli` its credentials.

use std::fmt;

/// The variable of the Bridge's environment a personal access token is
/// read from (the name Qoder's own SDK reads).
pub const QODER_TOKEN_VARIABLE: &str = "QODER_PERSONAL_ACCESS_TOKEN";

/// What the Bridge writes into the private authentication payload file it
/// gives each `qodercli` process (`agent.qoder_auth`,
/// `SERVERFS_QODER_AUTH`).
///
/// # Security
///
/// Only the choice is configuration. The token of
/// [`PersonalAccessToken`](QoderAuth::PersonalAccessToken) stays in the
/// Bridge's environment (where the operator's service manager put it) and
/// is read by the Bridge when a `qodercli` starts; validation requires
/// [`QODER_TOKEN_VARIABLE`] in `qoder_env_passthrough`, so the operator
/// names it for this runtime explicitly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QoderAuth {
    /// Reuse the login state of `qodercli login` run as the Bridge's user
    /// (`{"type":"qodercli"}`; the default).
    #[default]
    Login,
    /// A personal access token, the value of [`QODER_TOKEN_VARIABLE`]
    /// (`{"type":"accessToken","accessToken":…}`): written into the
    /// payload file only, never into the CLI's environment or arguments.
    PersonalAccessToken,
}

impl QoderAuth {
    /// Every choice, the default first.
    pub const ALL: [QoderAuth; 2] = [QoderAuth::Login, QoderAuth::PersonalAccessToken];

    /// What the value must look like, for error messages.
    pub(crate) const EXPECTED: &'static str = "one of \"login\", \"personal-access-token\"";

    /// The configuration spelling: `login`, `personal-access-token`.
    pub const fn as_str(self) -> &'static str {
        match self {
            QoderAuth::Login => "login",
            QoderAuth::PersonalAccessToken => "personal-access-token",
        }
    }

    /// Parses the exact configuration spelling.
    pub fn parse(text: &str) -> Option<QoderAuth> {
        QoderAuth::ALL
            .into_iter()
            .find(|auth| auth.as_str() == text)
    }
}

impl fmt::Display for QoderAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip_and_nothing_else_parses() {
        for auth in QoderAuth::ALL {
            assert_eq!(QoderAuth::parse(auth.as_str()), Some(auth));
        }
        for bad in ["", "Login", "pat", "token", "personal_access_token"] {
            assert_eq!(QoderAuth::parse(bad), None, "{bad:?}");
        }
        assert_eq!(QoderAuth::default(), QoderAuth::Login);
    }
}

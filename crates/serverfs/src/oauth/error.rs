//! Every refusal of the OAuth endpoints and of the resource server, with
//! its stable code (documented in docs/oauth.md; a test keeps the two
//! alike), the RFC 6749 / RFC 6750 / RFC 7591 error it is sent as, and
//! its HTTP status.

use axum::http::StatusCode;

macro_rules! refusals {
    ($( $(#[doc = $doc:literal])* $variant:ident => ($code:literal, $oauth:literal, $status:literal), )+) => {
        /// Why an OAuth request is refused.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Refusal {
            $( $(#[doc = $doc])* $variant, )+
        }

        impl Refusal {
            /// Every refusal (for the documentation test).
            #[cfg(test)]
            pub const ALL: &'static [Refusal] = &[ $( Refusal::$variant, )+ ];

            /// The stable SCREAMING_SNAKE code.
            pub const fn code(self) -> &'static str {
                match self { $( Refusal::$variant => $code, )+ }
            }

            /// The `error` value the protocol defines for it.
            pub const fn oauth_error(self) -> &'static str {
                match self { $( Refusal::$variant => $oauth, )+ }
            }

            /// The HTTP status it is answered with.
            pub fn status(self) -> StatusCode {
                let status: u16 = match self { $( Refusal::$variant => $status, )+ };
                StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST)
            }
        }
    };
}

refusals! {
    /// A request lacks a parameter it needs, or repeats or garbles one.
    InvalidRequest => ("OAUTH_INVALID_REQUEST", "invalid_request", 400),
    /// The `client_id` is neither registered nor a usable metadata document URL.
    ClientUnknown => ("OAUTH_CLIENT_UNKNOWN", "invalid_client", 401),
    /// A client ID metadata document could not be fetched or is not valid.
    ClientMetadataInvalid => ("OAUTH_CLIENT_METADATA_INVALID", "invalid_client_metadata", 400),
    /// Too many client ID metadata documents are being fetched at once; try again shortly.
    ClientMetadataBusy => ("OAUTH_CLIENT_METADATA_BUSY", "temporarily_unavailable", 503),
    /// The `redirect_uri` is not one the client registered (exact match).
    RedirectUriMismatch => ("OAUTH_REDIRECT_URI_MISMATCH", "invalid_request", 400),
    /// A registration carries more than its bounds allow (redirect URIs, their length, the name, the body).
    ClientMetadataTooLarge => ("OAUTH_CLIENT_METADATA_TOO_LARGE", "invalid_client_metadata", 400),
    /// A registration's `Content-Type` is not `application/json`.
    ContentTypeUnsupported => ("OAUTH_CONTENT_TYPE_UNSUPPORTED", "invalid_request", 415),
    /// Too many registrations from one source lately; `Retry-After` says when to try again.
    RateLimited => ("OAUTH_RATE_LIMITED", "temporarily_unavailable", 429),
    /// Too many consent requests are open (from this source, or at all); none is evicted for a new one.
    TooManyPending => ("OAUTH_TOO_MANY_PENDING", "temporarily_unavailable", 429),
    /// A redirect URI offered at registration is neither loopback nor allowlisted.
    RedirectUriNotAllowed => ("OAUTH_REDIRECT_URI_NOT_ALLOWED", "invalid_redirect_uri", 400),
    /// The authorization request has no `state`.
    StateMissing => ("OAUTH_STATE_MISSING", "invalid_request", 400),
    /// `response_type` is not `code`.
    ResponseTypeUnsupported => ("OAUTH_RESPONSE_TYPE_UNSUPPORTED", "unsupported_response_type", 400),
    /// No PKCE `code_challenge` was sent.
    PkceRequired => ("OAUTH_PKCE_REQUIRED", "invalid_request", 400),
    /// A PKCE method other than `S256` (such as `plain`) was asked for.
    PkceMethodUnsupported => ("OAUTH_PKCE_METHOD_UNSUPPORTED", "invalid_request", 400),
    /// A scope this server does not have was asked for.
    ScopeInvalid => ("OAUTH_SCOPE_INVALID", "invalid_scope", 400),
    /// The `resource` is not this server's canonical resource URI.
    ResourceInvalid => ("OAUTH_RESOURCE_INVALID", "invalid_target", 400),
    /// The consent form's request is unknown or has expired; start again.
    RequestExpired => ("OAUTH_REQUEST_EXPIRED", "invalid_request", 400),
    /// The consent form's CSRF token does not match its request and cookie.
    CsrfMismatch => ("OAUTH_CSRF_MISMATCH", "access_denied", 403),
    /// Approval without an ownership proof (a bearer token or an approval code).
    OwnerProofRequired => ("OAUTH_OWNER_PROOF_REQUIRED", "access_denied", 403),
    /// The ownership proof is not a stored bearer token or a live approval code.
    OwnerProofInvalid => ("OAUTH_OWNER_PROOF_INVALID", "access_denied", 403),
    /// Too many wrong proofs for one consent request; it is dropped.
    TooManyAttempts => ("OAUTH_TOO_MANY_ATTEMPTS", "access_denied", 403),
    /// `grant_type` is neither `authorization_code` nor `refresh_token`.
    GrantTypeUnsupported => ("OAUTH_GRANT_TYPE_UNSUPPORTED", "unsupported_grant_type", 400),
    /// The authorization code is unknown, expired, or was issued to another client or redirect URI.
    CodeInvalid => ("OAUTH_CODE_INVALID", "invalid_grant", 400),
    /// The authorization code was used before; the grant it produced is revoked.
    CodeReused => ("OAUTH_CODE_REUSED", "invalid_grant", 400),
    /// The PKCE `code_verifier` does not hash to the request's challenge.
    PkceMismatch => ("OAUTH_PKCE_MISMATCH", "invalid_grant", 400),
    /// The refresh token is unknown, expired or revoked.
    RefreshTokenInvalid => ("OAUTH_REFRESH_TOKEN_INVALID", "invalid_grant", 400),
    /// A refresh token was used after it was rotated; its whole grant is revoked.
    RefreshTokenReused => ("OAUTH_REFRESH_TOKEN_REUSED", "invalid_grant", 400),
    /// A refresh asked for a scope the grant does not have.
    ScopeEscalation => ("OAUTH_SCOPE_ESCALATION", "invalid_scope", 400),
    /// Dynamic client registration is turned off.
    RegistrationDisabled => ("OAUTH_REGISTRATION_DISABLED", "access_denied", 403),
    /// The registered-client bound is reached.
    TooManyClients => ("OAUTH_TOO_MANY_CLIENTS", "temporarily_unavailable", 503),
    /// No usable access token was presented.
    TokenMissing => ("OAUTH_TOKEN_MISSING", "invalid_token", 401),
    /// The access token is unknown, revoked, malformed or badly signed.
    TokenInvalid => ("OAUTH_TOKEN_INVALID", "invalid_token", 401),
    /// The access token has expired.
    TokenExpired => ("OAUTH_TOKEN_EXPIRED", "invalid_token", 401),
    /// The access token's `nbf` (not before) is still ahead, beyond the allowed clock skew.
    TokenNotYetValid => ("OAUTH_TOKEN_NOT_YET_VALID", "invalid_token", 401),
    /// The access token was issued for another resource (audience).
    AudienceMismatch => ("OAUTH_AUDIENCE_MISMATCH", "invalid_token", 401),
    /// The access token comes from an issuer this server does not trust.
    IssuerUnknown => ("OAUTH_ISSUER_UNKNOWN", "invalid_token", 401),
    /// The tool needs a scope the access token does not have.
    InsufficientScope => ("INSUFFICIENT_SCOPE", "insufficient_scope", 403),
    /// The OAuth state file (or the issuer's keys) cannot be used now.
    ServerUnavailable => ("OAUTH_SERVER_UNAVAILABLE", "server_error", 500),
}

#[cfg(test)]
mod tests {
    use super::Refusal;

    #[test]
    fn every_refusal_is_documented_with_its_error_and_status() {
        let doc = include_str!("../../../../docs/oauth.md");
        for refusal in Refusal::ALL {
            let row = format!(
                "| `{}` | `{}` | {} |",
                refusal.code(),
                refusal.oauth_error(),
                refusal.status().as_u16()
            );
            assert!(doc.contains(&row), "docs/oauth.md lacks the row {row}");
        }
    }
}

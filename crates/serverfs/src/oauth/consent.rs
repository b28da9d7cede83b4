//! The consent page and the authorization endpoint's error page: small,
//! server-rendered HTML with no external asset and no script, a strict
//! Content-Security-Policy (a per-response nonce for the one style
//! block), no framing (`frame-ancestors 'none'`, `X-Frame-Options: DENY`),
//! no caching and no referrer. Every client-supplied text is escaped. The
//! page names the client, where approval sends the browser, and the
//! scopes; it never shows a host path.

use axum::body::Body;
use axum::http::{HeaderValue, Response, StatusCode, header};
use axum::response::IntoResponse;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::clients::{Client, ClientOrigin};
use super::error::Refusal;
use super::scope::Scopes;

/// What the consent page shows.
pub struct ConsentView<'a> {
    /// The client asking.
    pub client: &'a Client,
    /// Where approval (or denial) sends the browser.
    pub redirect_uri: &'a str,
    /// The scopes asked for.
    pub scopes: &'a Scopes,
    /// The MCP URL the access will be for.
    pub resource: &'a str,
    /// The pending request's id.
    pub request_id: &'a str,
    /// Its CSRF token (also in the cookie).
    pub csrf: &'a str,
    /// Why the last submission was refused, if it was.
    pub problem: Option<Refusal>,
}

/// The name of the cookie holding a request's CSRF token.
pub fn csrf_cookie_name(request_id: &str) -> String {
    // The id is URL-safe base64: a valid cookie name as it is.
    format!("sfs_consent_{request_id}")
}

/// The consent page, with `status` (200, or 403 after a refused proof).
pub fn page(view: &ConsentView<'_>, status: StatusCode, secure_cookie: bool) -> Response<Body> {
    let nonce = style_nonce();
    let redirect_host = url::Url::parse(view.redirect_uri)
        .ok()
        .and_then(|u| {
            u.host_str().map(|h| match u.port() {
                Some(port) => format!("{h}:{port}"),
                None => h.to_owned(),
            })
        })
        .unwrap_or_default();
    let known_as = match view.client.origin {
        ClientOrigin::Operator => "registered by this server's operator".to_owned(),
        ClientOrigin::SelfRegistered => {
            "registered itself with this server; the name is its own claim".to_owned()
        }
        ClientOrigin::MetadataDocument => format!(
            "described by its metadata document at {}",
            escape(&view.client.client_id)
        ),
    };
    let scopes: String = view
        .scopes
        .iter()
        .map(|s| {
            format!(
                "<li><strong>{}</strong>: {}</li>",
                s.as_str(),
                escape(s.describe())
            )
        })
        .collect();
    let problem = view.problem.map_or_else(String::new, |refusal| {
        format!(
            "<p class=\"problem\" role=\"alert\">{}: {}</p>",
            refusal.code(),
            escape(problem_text(refusal))
        )
    });
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Authorize {name} - ServerFS</title><style nonce=\"{nonce}\">{STYLE}</style></head>\
         <body><main><h1>Authorize <span id=\"client-name\">{name}</span>?</h1>\
         <p class=\"who\">This client {known_as}.</p>\
         <p>It asks to use the ServerFS MCP server at <code>{resource}</code> with:</p>\
         <ul id=\"scopes\">{scopes}</ul>\
         <p>After you decide, your browser returns to <strong id=\"redirect-host\">{redirect_host}</strong>.</p>\
         {problem}\
         <form method=\"post\" action=\"/authorize\">\
         <input type=\"hidden\" name=\"request_id\" value=\"{request_id}\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <label for=\"proof\">Prove you own this server: paste a ServerFS bearer token \
         (<code>serverfs token create NAME</code>) or a one-time code from \
         <code>serverfs oauth approve-code</code> run on the server.</label>\
         <input id=\"proof\" name=\"proof\" type=\"password\" autocomplete=\"off\" \
         spellcheck=\"false\" placeholder=\"sfs_… or ABCD-EFGH-JKLM\">\
         <div class=\"buttons\"><button id=\"approve\" name=\"decision\" value=\"approve\" \
         type=\"submit\">Approve</button><button id=\"deny\" name=\"decision\" value=\"deny\" \
         type=\"submit\" class=\"secondary\">Deny</button></div></form></main></body></html>\n",
        name = escape(&view.client.name),
        resource = escape(view.resource),
        redirect_host = escape(&redirect_host),
        request_id = escape(view.request_id),
        csrf = escape(view.csrf),
    );
    let mut response = (status, html).into_response();
    secure_headers(&mut response, &nonce, Some(view.redirect_uri));
    let cookie = format!(
        "{}={}; Path=/authorize; HttpOnly; SameSite=Strict; Max-Age=600{}",
        csrf_cookie_name(view.request_id),
        view.csrf,
        if secure_cookie { "; Secure" } else { "" }
    );
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// The error page of a request that cannot go back to its client (an
/// unknown client or redirect URI must never be redirected to).
pub fn error_page(refusal: Refusal) -> Response<Body> {
    crate::http::abuse_log::note(
        crate::http::abuse_log::Level::Info,
        "oauth_refused",
        refusal.code(),
    );
    let nonce = style_nonce();
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>Authorization refused - ServerFS</title><style nonce=\"{nonce}\">{STYLE}</style>\
         </head><body><main><h1>Authorization refused</h1>\
         <p class=\"problem\" id=\"code\">{code}</p><p>{text}</p></main></body></html>\n",
        code = refusal.code(),
        text = escape(problem_text(refusal)),
    );
    let mut response = (refusal.status(), html).into_response();
    secure_headers(&mut response, &nonce, None);
    response
}

/// What a refusal means for the person at the page.
fn problem_text(refusal: Refusal) -> &'static str {
    match refusal {
        Refusal::ClientUnknown => "This client is not registered with this server.",
        Refusal::ClientMetadataInvalid => "The client's metadata document could not be used.",
        Refusal::ClientMetadataBusy => {
            "Too many client metadata documents are being fetched right now; try again shortly."
        }
        Refusal::RedirectUriMismatch => {
            "The redirect address is not one this client registered; nothing was sent to it."
        }
        Refusal::StateMissing => "The request has no state parameter, which this server requires.",
        Refusal::PkceRequired => {
            "The request has no PKCE code challenge, which this server requires."
        }
        Refusal::PkceMethodUnsupported => "Only the S256 PKCE method is accepted.",
        Refusal::ResponseTypeUnsupported => "Only the authorization code flow is supported.",
        Refusal::ScopeInvalid => "The request asks for a scope this server does not have.",
        Refusal::ResourceInvalid => "The request is for another resource than this server.",
        Refusal::RequestExpired => {
            "This request has expired or is unknown; start again from the client."
        }
        Refusal::CsrfMismatch => "The form does not belong to this browser session; start again.",
        Refusal::OwnerProofRequired => "Paste a bearer token or an approval code to approve.",
        Refusal::OwnerProofInvalid => {
            "That is neither a valid bearer token nor a live approval code."
        }
        Refusal::TooManyAttempts => "Too many wrong proofs; start again from the client.",
        Refusal::TooManyPending => {
            "Too many authorization requests are open; finish or wait for one, then start again."
        }
        _ => "The request cannot be served.",
    }
}

/// The headers every page carries.
fn secure_headers(response: &mut Response<Body>, nonce: &str, redirect_uri: Option<&str>) {
    // The form posts to this origin, which then redirects to the client:
    // browsers apply form-action to that redirect, so its origin is listed.
    let redirect_origin = redirect_uri
        .and_then(|uri| url::Url::parse(uri).ok())
        .map(|u| u.origin().ascii_serialization())
        .filter(|origin| origin != "null")
        .unwrap_or_default();
    let csp = format!(
        "default-src 'none'; style-src 'nonce-{nonce}'; img-src 'none'; script-src 'none'; \
         form-action 'self' {redirect_origin}; frame-ancestors 'none'; base-uri 'none'"
    );
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    if let Ok(value) = HeaderValue::from_str(csp.trim()) {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

fn style_nonce() -> String {
    crate::secret::random_bytes::<16>()
        .map(|bytes| URL_SAFE_NO_PAD.encode(bytes))
        .unwrap_or_else(|_| "none".to_owned())
}

/// HTML-escapes text for element content and quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;background:#f4f5f7;color:#1d2330;\
margin:0;padding:2rem}main{max-width:34rem;margin:0 auto;background:#fff;border-radius:10px;\
padding:1.5rem 2rem;box-shadow:0 1px 4px rgba(0,0,0,.12)}h1{font-size:1.35rem}\
.who{color:#555;font-size:.9rem}code{background:#eef0f4;padding:0 .25rem;border-radius:3px}\
ul{padding-left:1.2rem}label{display:block;margin:1rem 0 .4rem;font-size:.9rem}\
input[type=password]{width:100%;box-sizing:border-box;padding:.55rem;font-size:1rem;\
border:1px solid #aab;border-radius:6px}.buttons{margin-top:1rem;display:flex;gap:.75rem}\
button{padding:.55rem 1.3rem;font-size:1rem;border-radius:6px;border:0;background:#2456d6;\
color:#fff;cursor:pointer}button.secondary{background:#e3e6ec;color:#1d2330}\
.problem{color:#a01818;font-weight:600}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            escape("<script>\"x\" & 'y'</script>"),
            "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;"
        );
    }
}

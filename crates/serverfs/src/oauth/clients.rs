//! Who a `client_id` is: a client the operator registered, one that
//! registered itself, or — when the id is an `https` URL — the client its
//! client ID metadata document describes (fetched, checked, cached; a
//! server reachable from elsewhere fetches from public addresses only,
//! see [`super::public_addr`]).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serverfs_config::is_secure_url;
use url::Url;

use super::OAuthServer;
use super::error::Refusal;
use super::fetch::{FetchError, Limits};
use super::{public_addr, redirect};

/// How long a fetched metadata document is used.
const DOCUMENT_TTL: Duration = Duration::from_secs(300);
/// What fetching metadata documents may cost (docs/oauth.md): 64 KiB,
/// 5 s in all, 8 at once.
pub const DOCUMENT_FETCH_LIMITS: Limits = Limits {
    max_bytes: 64 * 1024,
    total_time: Duration::from_secs(5),
    in_flight: 8,
};
/// Documents kept at once.
const MAX_CACHED_DOCUMENTS: usize = 64;

/// How the server knows a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientOrigin {
    /// `[[http.oauth.clients]]`.
    Operator,
    /// RFC 7591 registration.
    SelfRegistered,
    /// A client ID metadata document.
    MetadataDocument,
}

/// A client as the authorization server sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    /// Its `client_id`.
    pub client_id: String,
    /// Its name (for the consent page; a self-registered client's is its
    /// own claim).
    pub name: String,
    /// Its redirect URIs.
    pub redirect_uris: Vec<String>,
    /// How it is known.
    pub origin: ClientOrigin,
}

impl Client {
    /// Whether `requested` is one of its redirect URIs.
    pub fn allows_redirect(&self, requested: &str) -> bool {
        self.redirect_uris
            .iter()
            .any(|registered| redirect::matches(registered, requested))
    }
}

/// Recently fetched metadata documents.
#[derive(Default)]
pub struct DocumentCache(Mutex<HashMap<String, (Instant, Client)>>);

/// A client ID metadata document (the fields used).
#[derive(Deserialize)]
struct Document {
    client_id: String,
    #[serde(default)]
    client_name: Option<String>,
    redirect_uris: Vec<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

impl OAuthServer {
    /// The client `client_id` names.
    ///
    /// # Errors
    ///
    /// [`Refusal::ClientUnknown`], [`Refusal::ClientMetadataInvalid`] or
    /// [`Refusal::ServerUnavailable`].
    pub async fn client(&self, client_id: &str) -> Result<Client, Refusal> {
        if let Some(c) = self
            .settings
            .clients
            .iter()
            .find(|c| c.client_id == client_id)
        {
            return Ok(Client {
                client_id: c.client_id.clone(),
                name: c.name.clone(),
                redirect_uris: c.redirect_uris.clone(),
                origin: ClientOrigin::Operator,
            });
        }
        let registered = self
            .store
            .client(client_id, crate::tokens::now_ms())
            .map_err(|e| {
                tracing::error!(event = "oauth_state_unusable", reason = %e);
                Refusal::ServerUnavailable
            })?;
        if let Some(c) = registered {
            return Ok(Client {
                client_id: c.client_id,
                name: c.client_name,
                redirect_uris: c.redirect_uris,
                origin: ClientOrigin::SelfRegistered,
            });
        }
        match self.document_url(client_id) {
            Some(url) => self.document_client(&url).await,
            None => Err(Refusal::ClientUnknown),
        }
    }

    /// `client_id` as a metadata document URL, when documents are on and
    /// it is one: `https` with a path (plain `http` to a loopback host
    /// only when this server itself is on loopback, so a public server is
    /// never made to fetch from its own machine).
    fn document_url(&self, client_id: &str) -> Option<Url> {
        if !self.settings.client_metadata_documents {
            return None;
        }
        let url = Url::parse(client_id).ok()?;
        let local_ok =
            url.scheme() == "https" || !super::is_reachable_from_elsewhere(&self.resource);
        (is_secure_url(&url) && local_ok && url.path() != "/" && url.query().is_none())
            .then_some(url)
    }

    async fn document_client(&self, url: &Url) -> Result<Client, Refusal> {
        let key = url.as_str().to_owned();
        {
            let cache = self.documents.0.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((at, client)) = cache.get(&key)
                && at.elapsed() < DOCUMENT_TTL
            {
                return Ok(client.clone());
            }
        }
        let client = self.fetch_document(url).await?;
        let mut cache = self.documents.0.lock().unwrap_or_else(|e| e.into_inner());
        cache.retain(|_, (at, _)| at.elapsed() < DOCUMENT_TTL);
        if cache.len() < MAX_CACHED_DOCUMENTS {
            cache.insert(key, (std::time::Instant::now(), client.clone()));
        }
        Ok(client)
    }

    async fn fetch_document(&self, url: &Url) -> Result<Client, Refusal> {
        // The resolver keeps names to public addresses; an IP literal is
        // connected to as it is, so it is checked here.
        let literal = match url.host() {
            Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            Some(url::Host::Domain(_)) | None => None,
        };
        if super::is_reachable_from_elsewhere(&self.resource)
            && literal.is_some_and(|ip| !public_addr::is_public(ip))
        {
            tracing::info!(
                event = "oauth_client_document_refused",
                reason = "address not public"
            );
            return Err(Refusal::ClientMetadataInvalid);
        }
        // The content is judged inside the fetch, so a URL serving a bad
        // document is remembered as failing like one that does not answer.
        self.document_fetch
            .get(url, "application/json", |bytes| {
                self.document_of(url, bytes)
            })
            .await
            .map_err(|e| {
                tracing::info!(event = "oauth_client_document_refused", reason = %e);
                match e {
                    FetchError::Busy => Refusal::ClientMetadataBusy,
                    _ => Refusal::ClientMetadataInvalid,
                }
            })
    }

    /// The client a fetched document at `url` describes, or why not.
    fn document_of(&self, url: &Url, bytes: &[u8]) -> Result<Client, &'static str> {
        let document: Document =
            serde_json::from_slice(bytes).map_err(|_| "not a client metadata document")?;
        if document.client_id != url.as_str() {
            return Err("client_id differs from the document URL");
        }
        if document
            .token_endpoint_auth_method
            .as_deref()
            .is_some_and(|m| m != "none")
        {
            return Err("only public clients (token_endpoint_auth_method none)");
        }
        if document.redirect_uris.is_empty()
            || !document.redirect_uris.iter().all(|uri| {
                redirect::allowed_for_self_registered(uri, &self.settings.allowed_redirect_uris)
            })
        {
            return Err("redirect URI not allowed");
        }
        let name = document
            .client_name
            .map(|n| clean_name(&n))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| url.host_str().unwrap_or("client").to_owned());
        Ok(Client {
            client_id: document.client_id,
            name,
            redirect_uris: document.redirect_uris,
            origin: ClientOrigin::MetadataDocument,
        })
    }
}

/// A client-chosen name made safe to show: no control characters, at
/// most 100 characters.
pub fn clean_name(name: &str) -> String {
    name.chars()
        .filter(|c| !c.is_control())
        .take(100)
        .collect::<String>()
        .trim()
        .to_owned()
}

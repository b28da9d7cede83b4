//! OAuth 2.1 for hosted clients (issue 19): the Python MCP SDK's OAuth
//! client through a real headless browser, then every refusal the issue
//! lists, each against the real server over HTTP.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use serverfs_testkit::TempWorkdir;
use sha2::{Digest, Sha256};

use crate::common::http::{HttpServer, create_token, raw_initialize};
use crate::common::{TIMEOUT, binary};

const HOSTED_CALLBACK: &str = "https://claude.ai/api/mcp/auth_callback";
pub(super) const LOOPBACK_CALLBACK: &str = "http://127.0.0.1:9/callback";

/// A `serve --http` child with `auth = oauth` on loopback, a workdir `w`
/// (read-write, holding `a.txt`) and an owner bearer token.
pub(super) struct OAuth {
    tree: TempWorkdir,
    pub(super) dir: tempfile::TempDir,
    pub(super) server: HttpServer,
    /// `http://127.0.0.1:PORT`.
    pub(super) origin: String,
    /// The owner's bearer token (the ownership proof).
    pub(super) owner: String,
}

impl OAuth {
    pub(super) async fn start(extra_env: &[(&str, &str)]) -> OAuth {
        let tree = TempWorkdir::new();
        tree.file("a.txt", "hello\n");
        let dir = tempfile::tempdir().unwrap();
        OAuth::start_in(tree, dir, extra_env).await
    }

    pub(super) async fn start_in(
        tree: TempWorkdir,
        dir: tempfile::TempDir,
        extra_env: &[(&str, &str)],
    ) -> OAuth {
        let token_file = dir.path().join("tokens.json");
        let owner = if token_file.exists() {
            String::new()
        } else {
            create_token(&token_file, "owner")
        };
        let spec = format!("w={}:rw", tree.root().display());
        let token_env = token_file.display().to_string();
        let mut env = vec![
            ("SERVERFS_TOKEN_FILE", token_env.as_str()),
            ("SERVERFS_HTTP_AUTH", "oauth"),
        ];
        env.extend_from_slice(extra_env);
        let server = HttpServer::start(&["--http", "127.0.0.1:0", "--workdir", &spec], &env).await;
        let origin = server.url.trim_end_matches("/mcp").to_owned();
        OAuth {
            tree,
            dir,
            server,
            origin,
            owner,
        }
    }

    /// `serverfs oauth ARGS --state-file <this server's>`: whether it
    /// succeeded, its stdout and its stderr.
    pub(super) fn oauth_cli(&self, args: &[&str]) -> (bool, String, String) {
        let out = std::process::Command::new(binary())
            .arg("oauth")
            .args(args)
            .arg("--state-file")
            .arg(self.state_file())
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Like [`OAuth::start`], configured by a file whose `[http.oauth]`
    /// table holds `oauth_toml`.
    async fn start_configured(oauth_toml: &str) -> OAuth {
        let tree = TempWorkdir::new();
        tree.file("a.txt", "hello\n");
        let dir = tempfile::tempdir().unwrap();
        let token_file = dir.path().join("tokens.json");
        let owner = create_token(&token_file, "owner");
        let config = dir.path().join("serverfs.toml");
        std::fs::write(
            &config,
            format!(
                "[http]\nauth = \"oauth\"\ntoken_file = {:?}\n\n[http.oauth]\n{oauth_toml}\n\n\
                 [[workdirs]]\nalias = \"w\"\npath = {:?}\nread_only = false\n",
                token_file.to_str().unwrap(),
                tree.root().to_str().unwrap(),
            ),
        )
        .unwrap();
        let config = config.display().to_string();
        let server = HttpServer::start(&["--http", "127.0.0.1:0", "--config", &config], &[]).await;
        let origin = server.url.trim_end_matches("/mcp").to_owned();
        OAuth {
            tree,
            dir,
            server,
            origin,
            owner,
        }
    }

    pub(super) fn state_file(&self) -> std::path::PathBuf {
        self.dir.path().join("oauth.sqlite3")
    }

    pub(super) async fn register(&self, redirect_uri: &str) -> String {
        let answer = post_json(
            &format!("{}/register", self.origin),
            &json!({
                "redirect_uris": [redirect_uri],
                "client_name": "test client",
                "token_endpoint_auth_method": "none",
            }),
        )
        .await;
        assert_eq!(answer.0, 201, "{}", answer.1);
        answer.1["client_id"].as_str().unwrap().to_owned()
    }

    /// `GET /authorize` with `params`.
    pub(super) async fn authorize_page(&self, params: &[(&str, &str)]) -> Page {
        let url = format!("{}/authorize?{}", self.origin, form(params));
        let response = tokio::time::timeout(TIMEOUT, client().get(url).send())
            .await
            .unwrap()
            .unwrap();
        Page::read(response).await
    }

    /// The usual authorization request of `client_id`.
    pub(super) fn request<'a>(
        &'a self,
        client_id: &'a str,
        redirect_uri: &'a str,
        challenge: &'a str,
        scope: &'a str,
    ) -> Vec<(&'a str, &'a str)> {
        vec![
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", redirect_uri),
            ("state", "st-1"),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
            ("scope", scope),
        ]
    }

    /// Submits the consent form of `page` with `fields` (`decision`,
    /// `proof`), carrying the page's cookie unless `cookie` overrides it.
    pub(super) async fn submit(
        &self,
        page: &Page,
        fields: &[(&str, &str)],
        cookie: Option<&str>,
    ) -> Page {
        let mut all = vec![
            ("request_id", page.field("request_id")),
            ("csrf", page.field("csrf")),
        ];
        for (name, value) in fields {
            all.retain(|(n, _)| n != name);
            all.push((name, (*value).to_owned()));
        }
        let pairs: Vec<(&str, &str)> = all.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let cookie = cookie.map_or_else(|| page.cookie.clone(), str::to_owned);
        let response = client()
            .post(format!("{}/authorize", self.origin))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("cookie", cookie)
            .body(form(&pairs))
            .send();
        Page::read(
            tokio::time::timeout(TIMEOUT, response)
                .await
                .unwrap()
                .unwrap(),
        )
        .await
    }

    /// Approves the consent `page` with the owner's token: the redirect.
    pub(super) async fn approve(&self, page: &Page) -> Page {
        let done = self
            .submit(
                page,
                &[("decision", "approve"), ("proof", &self.owner)],
                None,
            )
            .await;
        assert_eq!(done.status, 303, "{}", done.body);
        done
    }

    /// Registers nothing: runs the consent for `client_id` with the owner's
    /// token and returns the code from the redirect.
    async fn code_for(
        &self,
        client_id: &str,
        redirect_uri: &str,
        challenge: &str,
        scope: &str,
    ) -> String {
        let page = self
            .authorize_page(&self.request(client_id, redirect_uri, challenge, scope))
            .await;
        assert_eq!(page.status, 200, "{}", page.body);
        let done = self.approve(&page).await;
        let location = url::Url::parse(done.location.as_deref().unwrap()).unwrap();
        let query: std::collections::HashMap<String, String> =
            location.query_pairs().into_owned().collect();
        assert_eq!(query["state"], "st-1");
        assert_eq!(query["iss"], self.origin);
        query["code"].clone()
    }

    async fn token(&self, params: &[(&str, &str)]) -> (u16, Value) {
        post_form(&format!("{}/token", self.origin), params).await
    }

    /// A refresh of `client_id`'s grant with `refresh_token`.
    pub(super) async fn refresh(&self, client_id: &str, refresh_token: &str) -> (u16, Value) {
        self.token(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", client_id),
        ])
        .await
    }

    /// Exchanges `code` at the token endpoint, naming `resource` if given.
    async fn exchange(
        &self,
        client_id: &str,
        code: &str,
        redirect_uri: &str,
        verifier: &str,
        resource: Option<&str>,
    ) -> (u16, Value) {
        let mut params = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", client_id),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
        ];
        if let Some(resource) = resource {
            params.push(("resource", resource));
        }
        self.token(&params).await
    }

    /// A fresh grant: registration, consent, code exchange.
    pub(super) async fn grant(&self, scope: &str) -> Grant {
        let client_id = self.register(LOOPBACK_CALLBACK).await;
        let (verifier, challenge) = pkce();
        let code = self
            .code_for(&client_id, LOOPBACK_CALLBACK, &challenge, scope)
            .await;
        let (status, body) = self
            .exchange(
                &client_id,
                &code,
                LOOPBACK_CALLBACK,
                &verifier,
                Some(&self.server.url),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        Grant {
            client_id,
            access: body["access_token"].as_str().unwrap().to_owned(),
            refresh: body["refresh_token"].as_str().unwrap().to_owned(),
            scope: body["scope"].as_str().unwrap().to_owned(),
        }
    }

    /// The HTTP status of a `list_workdirs` call with `token`: whether the
    /// token opens `/mcp` at all.
    pub(super) async fn list_status(&self, token: &str) -> u16 {
        let answer = self.call(token, "list_workdirs", json!({})).await;
        answer.status().as_u16()
    }

    /// A `tools/call` of `tool` at `/mcp` with `token` (stateless era).
    pub(crate) async fn call(
        &self,
        token: &str,
        tool: &str,
        arguments: Value,
    ) -> reqwest::Response {
        mcp_post(
            &self.server.url,
            token,
            "tools/call",
            Some(tool),
            json!({"name": tool, "arguments": arguments}),
        )
        .await
    }
}

pub(super) struct Grant {
    pub(super) client_id: String,
    pub(super) access: String,
    pub(super) refresh: String,
    scope: String,
}

/// A response of the authorization endpoint.
pub(super) struct Page {
    pub(super) status: u16,
    location: Option<String>,
    cookie: String,
    headers: reqwest::header::HeaderMap,
    pub(super) body: String,
}

impl Page {
    async fn read(response: reqwest::Response) -> Page {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let location = headers
            .get("location")
            .map(|v| v.to_str().unwrap().to_owned());
        let cookie = headers
            .get("set-cookie")
            .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_owned())
            .unwrap_or_default();
        Page {
            status,
            location,
            cookie,
            headers,
            body: response.text().await.unwrap(),
        }
    }

    /// A hidden field's value.
    fn field(&self, name: &str) -> String {
        let marker = format!("name=\"{name}\" value=\"");
        let start = self
            .body
            .find(&marker)
            .unwrap_or_else(|| panic!("no {name} in {}", self.body))
            + marker.len();
        let end = self.body[start..].find('"').unwrap();
        self.body[start..start + end].to_owned()
    }

    /// The refusal code an error page or JSON error names.
    pub(super) fn assert_code(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "{}", self.body);
        assert!(self.body.contains(code), "{code} not in {}", self.body);
        assert_eq!(self.location, None, "a refused request is never redirected");
    }
}

pub(super) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

fn form(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

async fn post_form(url: &str, pairs: &[(&str, &str)]) -> (u16, Value) {
    let response = client()
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(pairs))
        .send();
    let response = tokio::time::timeout(TIMEOUT, response)
        .await
        .unwrap()
        .unwrap();
    let status = response.status().as_u16();
    assert_eq!(response.headers()["cache-control"], "no-store");
    (status, response.json().await.unwrap())
}

async fn get_json(url: &str) -> Value {
    let response = tokio::time::timeout(TIMEOUT, client().get(url).send())
        .await
        .unwrap()
        .unwrap();
    response.json().await.unwrap()
}

async fn post_json(url: &str, body: &Value) -> (u16, Value) {
    let response = client()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send();
    let response = tokio::time::timeout(TIMEOUT, response)
        .await
        .unwrap()
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// A request of the stateless protocol era (no session): `method` with
/// `params`, the `_meta` and headers that era needs.
async fn mcp_post(
    url: &str,
    token: &str,
    method: &str,
    name: Option<&str>,
    mut params: Value,
) -> reqwest::Response {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "oauth-test", "version": "1"},
    });
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let mut request = client()
        .post(url)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    let request = request.body(body.to_string()).send();
    tokio::time::timeout(TIMEOUT, request)
        .await
        .unwrap()
        .unwrap()
}

/// A PKCE verifier and its S256 challenge.
pub(super) fn pkce() -> (String, String) {
    let verifier = format!("v{}", "x".repeat(50))
        + &URL_SAFE_NO_PAD.encode(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos()
                .to_be_bytes(),
        );
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

/// Asserts that a JSON refusal's description starts with the stable `code`.
pub(super) fn assert_described(body: &Value, code: &str) {
    let description = body["error_description"].as_str().unwrap_or_default();
    assert!(description.starts_with(code), "{code}: {body}");
}

pub(crate) fn www_authenticate(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

/// The issue's main check: the Python SDK's `OAuthClientProvider`
/// discovers, registers, authorizes through the consent page in headless
/// Chromium, exchanges the code, calls tools, refreshes; after `serverfs
/// oauth revoke` both its tokens are refused at once.
#[tokio::test]
async fn python_sdk_oauth_client_connects_through_the_consent_page() {
    let chromium =
        std::env::var("SERVERFS_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    if !crate::common::python_mcp_sdk()
        || !crate::common::available(
            "chromium",
            std::process::Command::new(&chromium).arg("--version"),
        )
    {
        return;
    }
    let s = OAuth::start(&[]).await;
    let shot_dir = tempfile::tempdir().unwrap();
    let shot = shot_dir.path().join("consent.png");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/oauth_client.py");
    let out = tokio::time::timeout(
        TIMEOUT * 3,
        tokio::process::Command::new("python3")
            .arg(script)
            .arg(&s.server.url)
            .arg(&s.owner)
            .arg("w")
            .arg(&shot)
            .arg(&chromium)
            .arg(binary())
            .arg(s.state_file())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python client failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let steps: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let authorized = &steps[0];
    assert_eq!(authorized["step"], "authorized");
    // Discovery found the resource, so the request names it (RFC 8707),
    // with PKCE S256 and a state; the answer carries iss (RFC 9207).
    assert_eq!(
        authorized["authorize_params"],
        json!([
            "client_id",
            "code_challenge",
            "code_challenge_method",
            "redirect_uri",
            "resource",
            "response_type",
            "scope",
            "state"
        ])
    );
    assert_eq!(
        authorized["callback_params"],
        json!(["code", "iss", "state"])
    );
    assert_eq!(authorized["client_registered"], true);
    assert_eq!(authorized["scope"], "read write agent");
    let page = &authorized["page"];
    assert_eq!(page["client"], "ServerFS OAuth test");
    assert!(page["redirect"].as_str().unwrap().starts_with("127.0.0.1:"));
    assert_eq!(page["scopes"], json!(["read", "write", "agent"]));
    assert_eq!(
        page["landed"], true,
        "the browser followed the 303 to the client's callback"
    );
    // Framed by a page of another origin, the browser refuses to show the
    // consent page (an error page instead), while /healthz, which sends no
    // framing headers, shows in the frame beside it.
    let framed = &page["framed"];
    assert!(
        framed["consent"]
            .as_str()
            .unwrap()
            .starts_with("chrome-error://"),
        "{framed}"
    );
    assert_eq!(
        framed["control"],
        format!("{}/healthz", s.origin),
        "{framed}"
    );
    let text = page["text"].as_str().unwrap();
    assert!(text.contains(&s.server.url), "{text}");
    assert!(
        !text.contains(s.tree.root().to_str().unwrap()),
        "no host path on the page: {text}"
    );
    assert_eq!(authorized["read"]["structured"]["content"], "hello\n");
    assert_eq!(authorized["write"]["is_error"], false);
    assert_eq!(
        std::fs::read_to_string(s.tree.root().join("by-oauth.txt")).unwrap(),
        "hi\n"
    );
    let refreshed = &steps[1];
    assert_eq!(refreshed["step"], "refreshed");
    assert_eq!(refreshed["access_changed"], true);
    assert_eq!(refreshed["refresh_changed"], true, "refresh tokens rotate");
    assert_eq!(refreshed["read"]["is_error"], false);
    let revoked = &steps[2];
    assert_eq!(revoked["grants_listed"], 1);
    assert_eq!(revoked["mcp_status"], 401);
    assert!(
        revoked["mcp_challenge"]
            .as_str()
            .unwrap()
            .contains("error=\"invalid_token\"")
    );
    assert_eq!(revoked["refresh_status"], 400);
    assert_eq!(revoked["refresh_error"], "invalid_grant");
    // The audit trail names the grant, never a token.
    let log = s.server.stderr();
    assert!(log.contains("\"token_name\":\"oauth:"), "{log}");
    for secret in ["sfo_", "sfr_", "sfa_", s.owner.as_str()] {
        assert!(!log.contains(secret), "{secret} leaked into the log");
    }
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
        "a real screenshot"
    );
    // UPDATE_SCREENSHOT=1 refreshes the picture docs/oauth.md shows.
    if std::env::var_os("UPDATE_SCREENSHOT").is_some() {
        std::fs::write(
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/oauth-consent.png"),
            png,
        )
        .unwrap();
    }
}

#[tokio::test]
async fn discovery_documents_and_the_first_challenge() {
    let s = OAuth::start(&[]).await;
    let answer = client()
        .post(&s.server.url)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 401);
    let metadata_url = format!("{}/.well-known/oauth-protected-resource/mcp", s.origin);
    assert_eq!(
        www_authenticate(&answer),
        format!("Bearer resource_metadata=\"{metadata_url}\", scope=\"read write agent\"")
    );
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let prm: Value = get_json(&format!("{}{path}", s.origin)).await;
        assert_eq!(prm["resource"], s.server.url.as_str());
        assert_eq!(prm["authorization_servers"], json!([s.origin]));
        assert_eq!(prm["scopes_supported"], json!(["read", "write", "agent"]));
    }
    let asm: Value = get_json(&format!(
        "{}/.well-known/oauth-authorization-server",
        s.origin
    ))
    .await;
    assert_eq!(asm["issuer"], s.origin.as_str());
    assert_eq!(asm["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(asm["authorization_response_iss_parameter_supported"], true);
    assert_eq!(
        asm["registration_endpoint"],
        format!("{}/register", s.origin)
    );
    // The owner's bearer token still works beside OAuth, with every scope.
    let answer = s
        .call(
            &s.owner,
            "create_text_file",
            json!({"workdir": "w", "path": "b.txt", "content": "x"}),
        )
        .await;
    assert_eq!(answer.status(), 200);
}

#[tokio::test]
async fn denial_redirects_with_access_denied_and_iss() {
    let s = OAuth::start(&[]).await;
    let client_id = s.register(LOOPBACK_CALLBACK).await;
    let (_, challenge) = pkce();
    let page = s
        .authorize_page(&s.request(&client_id, LOOPBACK_CALLBACK, &challenge, "read"))
        .await;
    let done = s.submit(&page, &[("decision", "deny")], None).await;
    assert_eq!(done.status, 303);
    let location = done.location.unwrap();
    assert_eq!(
        location,
        format!(
            "http://127.0.0.1:9/callback?error=access_denied&state=st-1&iss={}",
            url::form_urlencoded::byte_serialize(s.origin.as_bytes()).collect::<String>()
        )
    );
}

#[tokio::test]
async fn a_write_tool_with_a_read_only_token_is_refused_with_insufficient_scope() {
    let s = OAuth::start(&[]).await;
    let grant = s.grant("read").await;
    assert_eq!(grant.scope, "read");
    let ok = s
        .call(
            &grant.access,
            "read_text_file",
            json!({"workdir": "w", "path": "a.txt"}),
        )
        .await;
    assert_eq!(ok.status(), 200);
    let refused = s
        .call(
            &grant.access,
            "create_text_file",
            json!({"workdir": "w", "path": "c.txt", "content": "x"}),
        )
        .await;
    assert_eq!(refused.status(), 403);
    let challenge = www_authenticate(&refused);
    assert!(
        challenge.starts_with(
            "Bearer error=\"insufficient_scope\", scope=\"read write\", resource_metadata="
        ),
        "{challenge}"
    );
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("INSUFFICIENT_SCOPE: create_text_file needs the write scope")
    );
    assert!(!s.tree.root().join("c.txt").exists());
    // tools/list still lists what the server offers.
    let list = mcp_post(&s.server.url, &grant.access, "tools/list", None, json!({})).await;
    let text = list.text().await.unwrap();
    assert!(text.contains("create_text_file"), "{text}");
    // The Tasks extension's requests act on agent tasks: they need the
    // agent scope, as the agent tools do, whatever the task id.
    for (method, params) in [
        (
            "tasks/get",
            json!({"taskId": "agt_000000000000000000000000"}),
        ),
        (
            "tasks/cancel",
            json!({"taskId": "agt_000000000000000000000000"}),
        ),
        (
            "tasks/update",
            json!({"taskId": "agt_000000000000000000000000", "inputResponses": {}}),
        ),
        ("tasks/update", json!({"unexpected": true})),
    ] {
        let refused = mcp_post(&s.server.url, &grant.access, method, None, params).await;
        assert_eq!(refused.status(), 403, "{method}");
        let body: Value = refused.json().await.unwrap();
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!(
                "INSUFFICIENT_SCOPE: {method} needs the agent scope"
            )),
            "{message}"
        );
    }
}

/// `resources/read` through a legacy session (initialize, initialized,
/// read): its HTTP status and body.
async fn legacy_resource_read(url: &str, token: &str, uri: &str) -> (u16, String) {
    let authorization = format!("Bearer {token}");
    let opened = raw_initialize(url, &[("authorization", &authorization)], None).await;
    assert_eq!(opened.status(), 200, "initialize");
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let headers = [
        ("authorization", authorization.as_str()),
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let sent = raw_initialize(url, &headers, Some(initialized.to_string())).await;
    assert_eq!(sent.status(), 202, "initialized");
    let read =
        json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": uri}});
    let answer = raw_initialize(url, &headers, Some(read.to_string())).await;
    (answer.status().as_u16(), answer.text().await.unwrap())
}

/// Every request that reads or changes something is checked against the
/// token's scopes by its method, in both protocol eras: `resources/read`
/// needs `read` (agent-only, write-only and foreign-scope tokens read
/// nothing through `serverfs://`), and a method the server does not know
/// needs every scope (fail closed).
#[tokio::test]
async fn resources_and_unknown_methods_need_scopes_in_both_protocol_eras() {
    let issuer = IDP_ISSUER;
    let (s, _idp) = OAuth::with_idp().await;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let foreign = jwt(
        &json!({"iss": issuer, "aud": s.server.url, "exp": now + 300, "sub": "alice", "scope": "openid profile"}),
        "idp-ed25519.pkcs8.der",
    );
    let agent = s.grant("agent").await.access;
    let write = s.grant("write").await.access;
    let read = s.grant("read").await.access;
    let uri = "serverfs://w/a.txt";
    for (token, who) in [
        (&agent, "agent"),
        (&write, "write"),
        (&foreign, "openid profile"),
    ] {
        let current = mcp_post(
            &s.server.url,
            token,
            "resources/read",
            Some(uri),
            json!({"uri": uri}),
        )
        .await;
        assert_eq!(current.status(), 403, "{who}: current era");
        let body: Value = current.json().await.unwrap();
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("INSUFFICIENT_SCOPE: resources/read needs the read scope"),
            "{who}: {message}"
        );
        let (status, body) = legacy_resource_read(&s.server.url, token, uri).await;
        assert_eq!(status, 403, "{who}: legacy era: {body}");
        assert!(!body.contains("hello"), "{who}: {body}");
    }
    // The read scope reads, in both eras (the control: the same requests
    // work when the scope is there).
    let current = mcp_post(
        &s.server.url,
        &read,
        "resources/read",
        Some(uri),
        json!({"uri": uri}),
    )
    .await;
    assert_eq!(current.status(), 200);
    assert!(current.text().await.unwrap().contains("hello"));
    let (status, body) = legacy_resource_read(&s.server.url, &read, uri).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("hello"), "{body}");
    // Fail closed: a method (or tool) the table does not know needs every
    // scope; the owner's full token reaches the server, which does not
    // know it either.
    for (method, params) in [
        ("resources/write", json!({"uri": uri})),
        (
            "tools/call",
            json!({"name": "no_such_tool", "arguments": {}}),
        ),
    ] {
        let refused = mcp_post(&s.server.url, &read, method, None, params.clone()).await;
        assert_eq!(refused.status(), 403, "{method}");
        assert!(
            www_authenticate(&refused).contains("scope=\"read write agent\""),
            "{method}: {}",
            www_authenticate(&refused)
        );
        // The control: with every scope the request passes the check, and
        // the server answers it by its own rules (not a scope refusal).
        let owner = mcp_post(&s.server.url, &s.owner, method, None, params).await;
        assert_ne!(owner.status(), 403, "{method} with every scope");
        assert!(www_authenticate(&owner).is_empty(), "{method}");
    }
}

/// The authorization server's routes check the `Host` header as `/mcp`
/// does: a page on another origin (DNS rebinding) reaches none of them.
#[tokio::test]
async fn the_oauth_routes_refuse_a_foreign_host() {
    let s = OAuth::start(&[]).await;
    let registration = json!({"redirect_uris": [LOOPBACK_CALLBACK]}).to_string();
    for (method, path) in [
        ("GET", "/.well-known/oauth-authorization-server"),
        ("GET", "/.well-known/oauth-protected-resource"),
        ("GET", "/.well-known/oauth-protected-resource/mcp"),
        ("GET", "/authorize?client_id=x"),
        ("POST", "/register"),
        ("POST", "/token"),
        ("POST", "/revoke"),
        ("POST", "/mcp"),
    ] {
        let url = format!("{}{path}", s.origin);
        let send = |host: &'static str| {
            client()
                .request(method.parse().unwrap(), &url)
                .header("host", host)
                .header("content-type", "application/json")
                .body(registration.clone())
                .send()
        };
        let foreign = tokio::time::timeout(TIMEOUT, send("evil.example"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(foreign.status(), 403, "{method} {path}");
        // The control: the same request with the loopback name is not
        // refused for its host.
        let local = tokio::time::timeout(TIMEOUT, send("localhost"))
            .await
            .unwrap()
            .unwrap();
        assert_ne!(local.status(), 403, "{method} {path} on localhost");
    }
}

#[tokio::test]
async fn authorization_codes_are_single_use_and_pkce_bound() {
    let s = OAuth::start(&[]).await;
    let client_id = s.register(LOOPBACK_CALLBACK).await;
    let (verifier, challenge) = pkce();
    // PKCE verifier mismatch.
    let code = s
        .code_for(&client_id, LOOPBACK_CALLBACK, &challenge, "read")
        .await;
    let (status, body) = s
        .exchange(
            &client_id,
            &code,
            LOOPBACK_CALLBACK,
            &format!("{verifier}x"),
            None,
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    assert_described(&body, "OAUTH_PKCE_MISMATCH");
    // Reused code: the first exchange works, the second is refused and
    // revokes what the first produced.
    let code = s
        .code_for(&client_id, LOOPBACK_CALLBACK, &challenge, "read")
        .await;
    let (status, first) = s
        .exchange(&client_id, &code, LOOPBACK_CALLBACK, &verifier, None)
        .await;
    assert_eq!(status, 200, "{first}");
    let access = first["access_token"].as_str().unwrap();
    assert_eq!(s.list_status(access).await, 200);
    let (status, body) = s
        .exchange(&client_id, &code, LOOPBACK_CALLBACK, &verifier, None)
        .await;
    assert_eq!(status, 400);
    assert_described(&body, "OAUTH_CODE_REUSED");
    assert_eq!(
        s.list_status(access).await,
        401,
        "the reused code's grant is revoked"
    );
    // Another redirect URI at the token endpoint.
    let code = s
        .code_for(&client_id, LOOPBACK_CALLBACK, &challenge, "read")
        .await;
    let (status, body) = s
        .exchange(
            &client_id,
            &code,
            "http://127.0.0.1:9/other",
            &verifier,
            None,
        )
        .await;
    assert_eq!(status, 400);
    assert_described(&body, "OAUTH_CODE_INVALID");
    // Another resource (audience) than this server.
    let code = s
        .code_for(&client_id, LOOPBACK_CALLBACK, &challenge, "read")
        .await;
    let (status, body) = s
        .exchange(
            &client_id,
            &code,
            LOOPBACK_CALLBACK,
            &verifier,
            Some("https://other.example/mcp"),
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_target")),
        "{body}"
    );
}

#[tokio::test]
async fn bad_authorization_requests_get_an_error_page_and_no_redirect() {
    let s = OAuth::start(&[]).await;
    let client_id = s.register(LOOPBACK_CALLBACK).await;
    let (_, challenge) = pkce();
    let base = s.request(&client_id, LOOPBACK_CALLBACK, &challenge, "read");
    let with = |name: &str, value: Option<&str>| {
        let mut params: Vec<(&str, &str)> =
            base.iter().filter(|(n, _)| *n != name).copied().collect();
        if let Some(value) = value {
            params.push((name, value));
        }
        params
            .into_iter()
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect::<Vec<_>>()
    };
    let cases = [
        (
            with("code_challenge_method", Some("plain")),
            "OAUTH_PKCE_METHOD_UNSUPPORTED",
        ),
        (
            with("code_challenge_method", None),
            "OAUTH_PKCE_METHOD_UNSUPPORTED",
        ),
        (with("code_challenge", None), "OAUTH_PKCE_REQUIRED"),
        (with("state", None), "OAUTH_STATE_MISSING"),
        (
            with("redirect_uri", Some("http://127.0.0.1:9/callback/")),
            "OAUTH_REDIRECT_URI_MISMATCH",
        ),
        (
            with("redirect_uri", Some("http://127.0.0.2:9/callback")),
            "OAUTH_REDIRECT_URI_MISMATCH",
        ),
        (
            with("redirect_uri", Some("https://evil.example/callback")),
            "OAUTH_REDIRECT_URI_MISMATCH",
        ),
        (
            with("client_id", Some("sfc_unknown")),
            "OAUTH_CLIENT_UNKNOWN",
        ),
        (with("scope", Some("read admin")), "OAUTH_SCOPE_INVALID"),
        (
            with("resource", Some("https://other.example/mcp")),
            "OAUTH_RESOURCE_INVALID",
        ),
        (
            with("response_type", Some("token")),
            "OAUTH_RESPONSE_TYPE_UNSUPPORTED",
        ),
    ];
    for (params, code) in cases {
        let pairs: Vec<(&str, &str)> = params
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let page = s.authorize_page(&pairs).await;
        let status = if code == "OAUTH_CLIENT_UNKNOWN" {
            401
        } else {
            400
        };
        page.assert_code(status, code);
    }
    // A repeated parameter is refused, not resolved.
    let mut repeated = base.clone();
    repeated.push(("state", "other"));
    s.authorize_page(&repeated)
        .await
        .assert_code(400, "OAUTH_INVALID_REQUEST");
}

/// A client the operator registered in `[[http.oauth.clients]]`: the
/// consent page says so, only its own redirect URIs (exactly) are
/// accepted, and its code exchanges like any other.
#[tokio::test]
async fn a_pre_registered_client_uses_exactly_its_configured_redirect_uris() {
    let s = OAuth::start_configured(
        "dynamic_registration = false\n\n[[http.oauth.clients]]\nclient_id = \"desk\"\n\
         name = \"Desk Client\"\nredirect_uris = [\"http://127.0.0.1:9/callback\", \
         \"https://desk.example/oauth/cb\"]",
    )
    .await;
    let (verifier, challenge) = pkce();
    for near_miss in [
        "https://desk.example/oauth/cb/",
        "https://desk.example/oauth/cb?x=1",
        "https://desk.example.evil.example/oauth/cb",
        "http://desk.example/oauth/cb",
        "http://127.0.0.1:9/other",
        HOSTED_CALLBACK,
    ] {
        s.authorize_page(&s.request("desk", near_miss, &challenge, "read"))
            .await
            .assert_code(400, "OAUTH_REDIRECT_URI_MISMATCH");
    }
    let page = s
        .authorize_page(&s.request("desk", "https://desk.example/oauth/cb", &challenge, "read"))
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("Desk Client")
            && page.body.contains("registered by this server's operator"),
        "{}",
        page.body
    );
    assert!(page.body.contains("desk.example"), "{}", page.body);
    // Loopback redirects match whatever their port (RFC 8252).
    let code = s
        .code_for(
            "desk",
            "http://127.0.0.1:4711/callback",
            &challenge,
            "read write",
        )
        .await;
    let (status, body) = s
        .exchange(
            "desk",
            &code,
            "http://127.0.0.1:4711/callback",
            &verifier,
            None,
        )
        .await;
    assert_eq!(
        (status, body["scope"].as_str()),
        (200, Some("read write")),
        "{body}"
    );
    let access = body["access_token"].as_str().unwrap();
    let answer = s
        .call(
            access,
            "create_text_file",
            json!({"workdir": "w", "path": "d.txt", "content": "d"}),
        )
        .await;
    assert_eq!(answer.status(), 200);
    assert!(s.tree.root().join("d.txt").exists());
    // Registration is off: an unknown client stays unknown.
    let (status, _) = post_json(
        &format!("{}/register", s.origin),
        &json!({"redirect_uris": [LOOPBACK_CALLBACK]}),
    )
    .await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn registration_allows_loopback_and_the_allowlist_only() {
    let s = OAuth::start(&[]).await;
    assert!(!s.register(HOSTED_CALLBACK).await.is_empty());
    for near_miss in [
        "https://claude.ai/api/mcp/auth_callback/",
        "https://claude.ai/api/mcp/auth_callback?x=1",
        "https://claude.ai.evil.example/api/mcp/auth_callback",
        "http://claude.ai/api/mcp/auth_callback",
        "https://evil.example/callback",
    ] {
        let (status, body) = post_json(
            &format!("{}/register", s.origin),
            &json!({"redirect_uris": [near_miss]}),
        )
        .await;
        assert_eq!(
            (status, body["error"].as_str()),
            (400, Some("invalid_redirect_uri")),
            "{near_miss}: {body}"
        );
        assert_described(&body, "OAUTH_REDIRECT_URI_NOT_ALLOWED");
    }
    let (status, body) = post_json(
        &format!("{}/register", s.origin),
        &json!({"redirect_uris": [LOOPBACK_CALLBACK], "grant_types": ["client_credentials"]}),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_client_metadata"))
    );
    // Registration can be turned off.
    let off = OAuth::start(&[("SERVERFS_HTTP_OAUTH_DYNAMIC_REGISTRATION", "false")]).await;
    let (status, body) = post_json(
        &format!("{}/register", off.origin),
        &json!({"redirect_uris": [LOOPBACK_CALLBACK]}),
    )
    .await;
    assert_eq!(status, 403, "{body}");
}

#[tokio::test]
async fn consent_needs_the_csrf_token_and_its_cookie_and_an_ownership_proof() {
    let s = OAuth::start(&[]).await;
    let client_id = s.register(LOOPBACK_CALLBACK).await;
    let (_, challenge) = pkce();
    let page = s
        .authorize_page(&s.request(&client_id, LOOPBACK_CALLBACK, &challenge, "read"))
        .await;
    assert_eq!(page.status, 200);
    // Framing is refused by headers.
    assert_eq!(page.headers["x-frame-options"], "DENY");
    let csp = page.headers["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    for directive in [
        "default-src 'none'",
        "frame-ancestors 'none'",
        "script-src 'none'",
        "form-action 'self' http://127.0.0.1:9",
    ] {
        assert!(csp.contains(directive), "{directive} missing from {csp}");
    }
    assert_eq!(page.headers["cache-control"], "no-store");
    assert!(page.cookie.starts_with("sfs_consent_"), "{}", page.cookie);
    assert!(
        page.headers["set-cookie"]
            .to_str()
            .unwrap()
            .contains("HttpOnly; SameSite=Strict")
    );
    assert!(
        !page.body.contains("<script") && !page.body.contains("src=\"http"),
        "no script, no external asset"
    );
    // CSRF: a wrong form token, or the right one without its cookie.
    let proof = [("decision", "approve"), ("proof", s.owner.as_str())];
    let mut forged = proof.to_vec();
    forged.push(("csrf", "forged"));
    s.submit(&page, &forged, None)
        .await
        .assert_code(403, "OAUTH_CSRF_MISMATCH");
    s.submit(&page, &proof, Some("sfs_consent_x=y"))
        .await
        .assert_code(403, "OAUTH_CSRF_MISMATCH");
    // No proof, then wrong proofs; the fifth drops the request.
    s.submit(&page, &[("decision", "approve")], None)
        .await
        .assert_code(403, "OAUTH_OWNER_PROOF_REQUIRED");
    for _ in 0..4 {
        s.submit(
            &page,
            &[("decision", "approve"), ("proof", "sfs_wrong")],
            None,
        )
        .await
        .assert_code(403, "OAUTH_OWNER_PROOF_INVALID");
    }
    s.submit(
        &page,
        &[("decision", "approve"), ("proof", "ABCD-EFGH-JKMN")],
        None,
    )
    .await
    .assert_code(403, "OAUTH_TOO_MANY_ATTEMPTS");
    s.submit(&page, &proof, None)
        .await
        .assert_code(400, "OAUTH_REQUEST_EXPIRED");
}

#[tokio::test]
async fn a_one_time_approval_code_from_the_cli_approves_once() {
    let s = OAuth::start(&[]).await;
    let (ok, printed, err) = s.oauth_cli(&["approve-code"]);
    assert!(ok, "{err}");
    let code = printed.trim().to_owned();
    assert_eq!(code.len(), 14, "{code}");
    // The database and its write-ahead log.
    for entry in std::fs::read_dir(s.dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(&code),
            "only its hash is stored"
        );
    }
    let client_id = s.register(LOOPBACK_CALLBACK).await;
    let (_, challenge) = pkce();
    let request = s.request(&client_id, LOOPBACK_CALLBACK, &challenge, "read");
    let page = s.authorize_page(&request).await;
    let typed = code.to_lowercase().replace('-', " ");
    let done = s
        .submit(&page, &[("decision", "approve"), ("proof", &typed)], None)
        .await;
    assert_eq!(done.status, 303, "{}", done.body);
    let again = s.authorize_page(&request).await;
    s.submit(&again, &[("decision", "approve"), ("proof", &code)], None)
        .await
        .assert_code(403, "OAUTH_OWNER_PROOF_INVALID");
}

#[tokio::test]
async fn refresh_rotates_detects_reuse_and_never_widens_scopes() {
    let s = OAuth::start(&[]).await;
    let grant = s.grant("read").await;
    let refresh = |token: String, scope: Option<&'static str>| {
        let client_id = grant.client_id.clone();
        let s = &s;
        async move {
            let mut params = vec![
                ("grant_type", "refresh_token"),
                ("refresh_token", token.as_str()),
                ("client_id", client_id.as_str()),
            ];
            if let Some(scope) = scope {
                params.push(("scope", scope));
            }
            s.token(&params).await
        }
    };
    // Scope escalation at refresh.
    let (status, body) = refresh(grant.refresh.clone(), Some("read write")).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_scope")),
        "{body}"
    );
    assert_described(&body, "OAUTH_SCOPE_ESCALATION");
    // A refresh replaces both tokens; the old access token stops working.
    let (status, fresh) = refresh(grant.refresh.clone(), None).await;
    assert_eq!(status, 200, "{fresh}");
    assert_eq!(fresh["scope"], "read");
    assert_ne!(fresh["refresh_token"], grant.refresh.as_str());
    assert_eq!(s.list_status(&grant.access).await, 401);
    let access = fresh["access_token"].as_str().unwrap();
    assert_eq!(s.list_status(access).await, 200);
    // The replaced refresh token again: a leaked copy; the grant goes.
    let (status, body) = refresh(grant.refresh.clone(), None).await;
    assert_eq!(status, 400);
    assert_described(&body, "OAUTH_REFRESH_TOKEN_REUSED");
    assert_eq!(s.list_status(access).await, 401);
    let (status, _) = refresh(fresh["refresh_token"].as_str().unwrap().to_owned(), None).await;
    assert_eq!(status, 400, "the whole grant is revoked");
}

#[tokio::test]
async fn expired_and_foreign_audience_tokens_are_refused() {
    let tree = TempWorkdir::new();
    let dir = tempfile::tempdir().unwrap();
    let s = OAuth::start_in(tree, dir, &[]).await;
    let grant = s.grant("read write").await;
    // Expiry: the state file says the access token expired (the server
    // reads it at every request).
    let set_expiry = |ms: i64| {
        rusqlite::Connection::open(s.state_file())
            .unwrap()
            .execute("UPDATE grants SET access_expires_ms = ?1", [ms])
            .unwrap();
    };
    set_expiry(1_000);
    let answer = s.call(&grant.access, "list_workdirs", json!({})).await;
    assert_eq!(answer.status(), 401);
    assert!(www_authenticate(&answer).contains("error_description=\"OAUTH_TOKEN_EXPIRED\""));
    set_expiry(i64::MAX / 2);
    assert_eq!(s.list_status(&grant.access).await, 200);
    // The same state file under another canonical resource: the token's
    // audience is the old one.
    let OAuth {
        tree, dir, server, ..
    } = s;
    drop(server);
    let moved = OAuth::start_in(
        tree,
        dir,
        &[("SERVERFS_HTTP_OAUTH_PUBLIC_URL", "http://localhost:1/mcp")],
    )
    .await;
    let answer = moved.call(&grant.access, "list_workdirs", json!({})).await;
    assert_eq!(answer.status(), 401);
    assert!(
        www_authenticate(&answer).contains("error_description=\"OAUTH_AUDIENCE_MISMATCH\""),
        "{}",
        www_authenticate(&answer)
    );
    assert!(www_authenticate(&answer).contains(
        "resource_metadata=\"http://localhost:1/.well-known/oauth-protected-resource/mcp\""
    ));
}

/// A minimal HTTP server on loopback answering every request with the
/// JSON `body(base_url)` makes; returns the base URL.
pub(crate) async fn serve_json(
    body: impl FnOnce(&str) -> String,
) -> (String, tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let body = body(&base);
    let task = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buffer = [0u8; 4096];
            let _ = stream.read(&mut buffer).await;
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
        }
    });
    (base, task)
}

#[tokio::test]
async fn a_client_id_metadata_document_names_the_client() {
    // The document's URL is its client_id. It is served on loopback, which
    // a loopback server accepts (a public one fetches https only).
    let (base, _served) = serve_json(|base| {
        json!({"client_id": format!("{base}/client.json"), "client_name": "Metadata Client",
            "redirect_uris": [LOOPBACK_CALLBACK], "token_endpoint_auth_method": "none"})
        .to_string()
    })
    .await;
    let s = OAuth::start(&[]).await;
    let (_, challenge) = pkce();
    let url = format!("{base}/client.json");
    let page = s
        .authorize_page(&s.request(&url, LOOPBACK_CALLBACK, &challenge, "read"))
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("Metadata Client")
            && page.body.contains("described by its metadata document"),
        "{}",
        page.body
    );
    s.authorize_page(&s.request(&url, HOSTED_CALLBACK, &challenge, "read"))
        .await
        .assert_code(400, "OAUTH_REDIRECT_URI_MISMATCH");
    // A document must name the URL it is served at.
    let other = format!("{base}/elsewhere.json");
    s.authorize_page(&s.request(&other, LOOPBACK_CALLBACK, &challenge, "read"))
        .await
        .assert_code(400, "OAUTH_CLIENT_METADATA_INVALID");
}

/// A server reachable from elsewhere (an `https` public URL) fetches
/// client ID metadata documents from public addresses only: a `client_id`
/// pointing at this machine is refused without a connection being made
/// (no request forgery through the server).
#[tokio::test]
async fn a_public_server_never_fetches_a_metadata_document_from_its_own_machine() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    let _listening = tokio::spawn(async move {
        // Each connection is counted, then closed (a TLS client fails fast).
        while let Ok((stream, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            drop(stream);
        }
    });
    let s = OAuth::start(&[(
        "SERVERFS_HTTP_OAUTH_PUBLIC_URL",
        "https://mcp.example.com/mcp",
    )])
    .await;
    let (_, challenge) = pkce();
    for client_id in [
        format!("https://127.0.0.1:{port}/client.json"),
        format!("https://localhost:{port}/client.json"),
    ] {
        s.authorize_page(&s.request(&client_id, LOOPBACK_CALLBACK, &challenge, "read"))
            .await
            .assert_code(400, "OAUTH_CLIENT_METADATA_INVALID");
    }
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "no connection to this machine"
    );
    let log = s.server.stderr();
    assert!(log.contains("\"reason\":\"address not public\""), "{log}");
}

/// Signs `claims` as a JWT with the fixture key `key` (EdDSA, `kid` idp).
pub(crate) fn jwt(claims: &Value, key: &str) -> String {
    let der = std::fs::read(format!(
        "{}/tests/fixtures/oauth/{key}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
    header.kid = Some("idp".to_owned());
    jsonwebtoken::encode(
        &header,
        claims,
        &jsonwebtoken::EncodingKey::from_ed_der(&der),
    )
    .unwrap()
}

/// The key set holding the fixture key `idp` (the public half of
/// `idp-ed25519.pkcs8.der`).
pub(crate) fn idp_jwks() -> Value {
    let x = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/oauth/idp-ed25519.x"
    ))
    .unwrap();
    json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x.trim(), "kid": "idp", "alg": "EdDSA", "use": "sig"}]})
}

/// The external issuer of [`OAuth::with_idp`].
const IDP_ISSUER: &str = "https://idp.example";

impl OAuth {
    /// An OAuth server that also accepts [`IDP_ISSUER`]'s JWTs, its keys
    /// ([`idp_jwks`]) served on loopback by the returned task.
    async fn with_idp() -> (OAuth, tokio::task::JoinHandle<()>) {
        let (jwks_base, served) = serve_json(|_| idp_jwks().to_string()).await;
        let jwks_url = format!("{jwks_base}/jwks.json");
        let s = OAuth::start(&[
            ("SERVERFS_HTTP_OAUTH_EXTERNAL_ISSUER", IDP_ISSUER),
            ("SERVERFS_HTTP_OAUTH_EXTERNAL_JWKS_URL", &jwks_url),
        ])
        .await;
        (s, served)
    }
}

#[tokio::test]
async fn an_external_issuers_jwts_are_checked_for_signature_issuer_audience_and_expiry() {
    let issuer = IDP_ISSUER;
    let (s, _idp) = OAuth::with_idp().await;
    let prm: Value = get_json(&format!(
        "{}/.well-known/oauth-protected-resource/mcp",
        s.origin
    ))
    .await;
    assert_eq!(prm["authorization_servers"], json!([issuer, s.origin]));
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = |iss: &str, aud: &str, exp: u64, scope: &str| json!({"iss": iss, "aud": aud, "exp": exp, "sub": "alice", "scope": scope});
    let good = jwt(
        &claims(issuer, &s.server.url, now + 300, "read openid"),
        "idp-ed25519.pkcs8.der",
    );
    assert_eq!(
        s.call(
            &good,
            "read_text_file",
            json!({"workdir": "w", "path": "a.txt"})
        )
        .await
        .status(),
        200
    );
    let refused = s
        .call(
            &good,
            "delete_file",
            json!({"workdir": "w", "path": "a.txt"}),
        )
        .await;
    assert_eq!(refused.status(), 403, "read scope only");
    let cases = [
        (
            jwt(
                &claims(issuer, "https://other.example/mcp", now + 300, "read"),
                "idp-ed25519.pkcs8.der",
            ),
            "OAUTH_AUDIENCE_MISMATCH",
        ),
        (
            jwt(
                &claims(
                    "https://other-idp.example",
                    &s.server.url,
                    now + 300,
                    "read",
                ),
                "idp-ed25519.pkcs8.der",
            ),
            "OAUTH_ISSUER_UNKNOWN",
        ),
        (
            jwt(
                &claims(issuer, &s.server.url, now - 600, "read"),
                "idp-ed25519.pkcs8.der",
            ),
            "OAUTH_TOKEN_EXPIRED",
        ),
        (
            jwt(
                &claims(issuer, &s.server.url, now + 300, "read"),
                "other-ed25519.pkcs8.der",
            ),
            "OAUTH_TOKEN_INVALID",
        ),
    ];
    for (token, code) in cases {
        let answer = s.call(&token, "list_workdirs", json!({})).await;
        assert_eq!(answer.status(), 401, "{code}");
        let challenge = www_authenticate(&answer);
        assert!(
            challenge.contains(&format!("error_description=\"{code}\"")),
            "{code}: {challenge}"
        );
    }
    // The same keys from a local JWKS file.
    let keys = tempfile::tempdir().unwrap();
    let jwks_file = keys.path().join("jwks.json");
    std::fs::write(&jwks_file, idp_jwks().to_string()).unwrap();
    let jwks_file = jwks_file.display().to_string();
    let from_file = OAuth::start(&[
        ("SERVERFS_HTTP_OAUTH_EXTERNAL_ISSUER", issuer),
        ("SERVERFS_HTTP_OAUTH_EXTERNAL_JWKS_FILE", &jwks_file),
    ])
    .await;
    for (key, status) in [
        ("idp-ed25519.pkcs8.der", 200),
        ("other-ed25519.pkcs8.der", 401),
    ] {
        let token = jwt(
            &claims(issuer, &from_file.server.url, now + 300, "read"),
            key,
        );
        let answer = from_file.call(&token, "list_workdirs", json!({})).await;
        assert_eq!(
            answer.status(),
            status,
            "{key}: {}",
            www_authenticate(&answer)
        );
    }
    // Without an external issuer, any JWT is another issuer's.
    let plain = OAuth::start(&[]).await;
    let answer = plain.call(&good, "list_workdirs", json!({})).await;
    assert!(www_authenticate(&answer).contains("OAUTH_ISSUER_UNKNOWN"));
}

#[tokio::test]
async fn oauth_list_and_revoke_and_token_list_show_grants() {
    let s = OAuth::start(&[]).await;
    let grant = s.grant("read").await;
    let (ok, listing, _) = s.oauth_cli(&["list"]);
    assert!(ok);
    assert!(
        listing.contains("client \"test client\"")
            && listing.contains("scopes read")
            && listing.contains("approved by token:owner"),
        "{listing}"
    );
    assert!(
        !listing.contains(&grant.access) && !listing.contains("sha256"),
        "no token or hash: {listing}"
    );
    let token_list = std::process::Command::new(binary())
        .args(["token", "list", "--token-file"])
        .arg(s.dir.path().join("tokens.json"))
        .output()
        .unwrap();
    let token_list = String::from_utf8_lossy(&token_list.stdout).into_owned();
    assert!(
        token_list.contains("owner\t") && token_list.contains("oauth:"),
        "{token_list}"
    );
    let (ok, _, err) = s.oauth_cli(&["revoke", "nonexistent"]);
    assert!(
        !ok && err.contains("no OAuth grant or client \"nonexistent\""),
        "{err}"
    );
    let (ok, _, _) = s.oauth_cli(&["revoke", &grant.client_id]);
    assert!(ok);
    assert_eq!(s.list_status(&grant.access).await, 401);
}

/// With `accept_bearer_tokens` off a bearer token no longer opens `/mcp`,
/// yet it still proves ownership on the consent page; a client's own RFC
/// 7009 revocation ends its grant at once, access and refresh token alike.
#[tokio::test]
async fn bearer_tokens_can_be_turned_off_and_clients_revoke_their_own_grant() {
    let s = OAuth::start(&[("SERVERFS_HTTP_OAUTH_ACCEPT_BEARER_TOKENS", "false")]).await;
    let answer = s.call(&s.owner, "list_workdirs", json!({})).await;
    assert_eq!(answer.status(), 401);
    assert!(
        www_authenticate(&answer).contains("error_description=\"OAUTH_TOKEN_INVALID\""),
        "{}",
        www_authenticate(&answer)
    );
    let grant = s.grant("read").await;
    assert_eq!(s.list_status(&grant.access).await, 200);
    let revoke = format!("{}/revoke", s.origin);
    // An unknown token is no error (RFC 7009 §2.2), and revokes nothing.
    assert_eq!(post_form(&revoke, &[("token", "sfr_unknown")]).await.0, 200);
    assert_eq!(s.list_status(&grant.access).await, 200);
    assert_eq!(
        post_form(&revoke, &[("token", &grant.refresh)]).await.0,
        200
    );
    assert_eq!(s.list_status(&grant.access).await, 401);
    let (status, body) = s.refresh(&grant.client_id, &grant.refresh).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );
}

/// The `initialize` of a legacy session with `token`: its status.
async fn legacy_session_status(url: &str, token: &str) -> u16 {
    let authorization = format!("Bearer {token}");
    raw_initialize(url, &[("authorization", &authorization)], None)
        .await
        .status()
        .as_u16()
}

/// A grant's legacy sessions belong to the grant: `serverfs oauth revoke`
/// closes them, so their room in the session bound is free again.
#[tokio::test]
async fn revoking_a_grant_closes_its_legacy_sessions() {
    let s = OAuth::start(&[("SERVERFS_HTTP_MAX_SESSIONS", "2")]).await;
    let grant = s.grant("read").await;
    for _ in 0..2 {
        assert_eq!(
            legacy_session_status(&s.server.url, &grant.access).await,
            200
        );
    }
    assert_eq!(
        legacy_session_status(&s.server.url, &s.owner).await,
        429,
        "the grant's sessions fill the bound"
    );
    let (ok, _, err) = s.oauth_cli(&["revoke", &grant.client_id]);
    assert!(ok, "{err}");
    let deadline = std::time::Instant::now() + TIMEOUT;
    while legacy_session_status(&s.server.url, &s.owner).await != 200 {
        assert!(
            std::time::Instant::now() < deadline,
            "the revoked grant's sessions were never closed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // The closing is logged just after the room is freed.
    while !s.server.stderr().contains("session_closed") {
        assert!(
            std::time::Instant::now() < deadline,
            "session_closed never logged"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

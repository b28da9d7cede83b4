//! The few MCP requests the tests and the benchmark make over HTTP, in both
//! protocol eras: the legacy handshake that opens a session
//! (`Mcp-Session-Id`), and stateless current-era requests that carry their
//! protocol in `_meta` and in the `Mcp-Method`/`Mcp-Name` routing headers
//! (SEP-2243).

use std::io;

use serde_json::{Value, json};

use crate::{Connection, Response, invalid};

/// The legacy protocol revision the handshake asks for.
const LEGACY_VERSION: &str = "2025-06-18";
/// The current, sessionless protocol revision.
const CURRENT_VERSION: &str = "2026-07-28";

/// MCP over one kept-alive [`Connection`] to `/mcp`.
pub struct Mcp {
    connection: Connection,
    session: Option<String>,
    /// `Authorization` value sent with every request, when set.
    authorization: Option<String>,
    next_id: u64,
}

impl Mcp {
    /// MCP on `connection`, no session yet.
    pub fn new(connection: Connection) -> Mcp {
        Mcp {
            connection,
            session: None,
            authorization: None,
            next_id: 0,
        }
    }

    /// Sends `Authorization: Bearer <token>` with every request.
    pub fn with_bearer(mut self, token: &str) -> Mcp {
        self.authorization = Some(format!("Bearer {token}"));
        self
    }

    /// The connection, for other requests on it.
    pub fn connection(&mut self) -> &mut Connection {
        &mut self.connection
    }

    /// Opens a legacy-era session: `initialize`, then
    /// `notifications/initialized`.
    ///
    /// # Errors
    ///
    /// I/O errors, and `InvalidData` for an unexpected status or a missing
    /// session id.
    pub fn initialize(&mut self) -> io::Result<()> {
        let init = self.post(
            &[],
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": LEGACY_VERSION, "capabilities": {},
                "clientInfo": {"name": "serverfs-http1", "version": "1"}}}),
            200,
        )?;
        let session = init
            .header("mcp-session-id")
            .ok_or_else(|| invalid("initialize answered without a session id".to_owned()))?
            .to_owned();
        self.session = Some(session);
        let notification = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let headers = self.legacy_headers()?;
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        self.post(&headers, &notification, 202)?;
        Ok(())
    }

    /// Ends the session opened by [`Mcp::initialize`] (`DELETE /mcp`), as a
    /// client leaving does.
    ///
    /// # Errors
    ///
    /// I/O errors; `InvalidData` without a session or for a status other
    /// than 200 or 204.
    pub fn close(&mut self) -> io::Result<()> {
        let headers = self.legacy_headers()?;
        let mut headers: Vec<(&str, &str)> =
            headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        if let Some(authorization) = &self.authorization {
            headers.push(("authorization", authorization));
        }
        let response = self.connection.request("DELETE", "/mcp", &headers, b"")?;
        if ![200, 204].contains(&response.status) {
            return Err(invalid(format!("DELETE answered {}", response.status)));
        }
        self.session = None;
        Ok(())
    }

    /// Calls `tool` in the session opened by [`Mcp::initialize`] and
    /// returns the JSON-RPC answer.
    ///
    /// # Errors
    ///
    /// As [`Mcp::call_current`]; `InvalidData` without a session.
    pub fn call_legacy(&mut self, tool: &str, arguments: Value) -> io::Result<Value> {
        let headers = self.legacy_headers()?;
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        self.call(&headers, tool, arguments, json!({}))
    }

    /// Calls `tool` as a stateless current-era request and returns the
    /// JSON-RPC answer.
    ///
    /// # Errors
    ///
    /// I/O errors; `InvalidData` for a status other than 200, or an answer
    /// that is not JSON or not for this request.
    pub fn call_current(&mut self, tool: &str, arguments: Value) -> io::Result<Value> {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": CURRENT_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "serverfs-http1", "version": "1"}});
        let headers = [
            ("mcp-protocol-version", CURRENT_VERSION),
            ("mcp-method", "tools/call"),
            ("mcp-name", tool),
        ];
        self.call(&headers, tool, arguments, meta)
    }

    fn legacy_headers(&self) -> io::Result<[(&'static str, String); 2]> {
        let session = self
            .session
            .clone()
            .ok_or_else(|| invalid("no session: call initialize first".to_owned()))?;
        Ok([
            ("mcp-session-id", session),
            ("mcp-protocol-version", LEGACY_VERSION.to_owned()),
        ])
    }

    fn call(
        &mut self,
        headers: &[(&str, &str)],
        tool: &str,
        arguments: Value,
        meta: Value,
    ) -> io::Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": tool, "arguments": arguments, "_meta": meta}});
        let response = self.post(headers, &request, 200)?;
        let last = response.messages().pop().unwrap_or_default();
        let answer: Value = serde_json::from_str(&last)
            .map_err(|e| invalid(format!("answer is not JSON ({e}): {last}")))?;
        if answer["id"] != json!(id) {
            return Err(invalid(format!("answer for another request: {answer}")));
        }
        Ok(answer)
    }

    fn post(&mut self, extra: &[(&str, &str)], body: &Value, status: u16) -> io::Result<Response> {
        let mut headers = vec![
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        if let Some(authorization) = &self.authorization {
            headers.push(("authorization", authorization));
        }
        headers.extend_from_slice(extra);
        let response =
            self.connection
                .request("POST", "/mcp", &headers, body.to_string().as_bytes())?;
        if response.status != status {
            return Err(invalid(format!(
                "status {} (expected {status}): {:?}",
                response.status,
                response.messages()
            )));
        }
        Ok(response)
    }
}

//! Request and response envelopes, decoded in two stages
//! (spec-agent-bridge.md §2.4, §2.6).
//!
//! Request: `{"protocol_version": 1, "request_id", "method", "params"}`,
//! exactly those four keys. Stage one ([`RequestEnvelope::parse`]) checks
//! the envelope in the spec's order and keeps `params` as a JSON object;
//! stage two ([`RequestEnvelope::decode`]) looks the method up and decodes
//! its typed parameters. Each refusal carries the `request_id` to echo:
//! the request's own when it is a non-empty string, else `null`.
//!
//! Response: `{"request_id", "ok": true, "result": {…}}` or
//! `{"request_id", "ok": false, "error": {"code", "message"}}`.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::PROTOCOL_VERSION;
use super::error::{BridgeErrorCode, ErrorBody, ProtocolError};
use super::field::{Nullable, present};
use super::frame::terminate;
use super::method::{BridgeMethod, BridgeRequest};

/// The keys of a request envelope, in wire order.
const ENVELOPE_FIELDS: [&str; 4] = ["protocol_version", "request_id", "method", "params"];

/// A request whose envelope is valid but whose parameters are still raw
/// (stage one of decoding).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestEnvelope {
    /// The caller's id, echoed in the response; non-empty.
    pub request_id: String,
    /// The method name as sent; non-empty, not yet looked up.
    pub method: String,
    /// The parameters object, not yet checked against the method.
    pub params: Map<String, Value>,
}

/// A request refused before dispatch, with the id to echo.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}")]
pub struct RejectedRequest {
    /// The request's `request_id` when it was a non-empty string, else
    /// `None` (sent as `null`).
    pub request_id: Option<String>,
    /// Why.
    pub error: ProtocolError,
}

impl RejectedRequest {
    /// The error response answering this refusal.
    pub fn into_response(self) -> Response {
        Response::Failure {
            error: ErrorBody::from(&self.error),
            request_id: self.request_id,
        }
    }
}

impl RequestEnvelope {
    /// Stage one: checks the envelope of one frame (spec §2.4 steps 1–5, in
    /// that order).
    ///
    /// 1. not UTF-8 JSON (`NaN` and `Infinity` included) → `INVALID_REQUEST`
    ///    with a `null` id;
    /// 2. the id to echo from here on: `request_id` if it is a non-empty
    ///    string, else `null`;
    /// 3. not an object with exactly the four envelope keys →
    ///    `INVALID_REQUEST`;
    /// 4. `protocol_version` not a JSON integer (booleans and floats
    ///    included) → `INVALID_REQUEST`; an integer other than 1 →
    ///    `PROTOCOL_VERSION_UNSUPPORTED`;
    /// 5. `request_id`, then `method`, not a non-empty string, or `params`
    ///    not an object → `INVALID_REQUEST`.
    ///
    /// An integer beyond the 64-bit range parses as a float in this decoder
    /// and is refused as `INVALID_REQUEST` at step 4.
    ///
    /// # Errors
    ///
    /// A [`RejectedRequest`] naming the failed step.
    pub fn parse(frame: &[u8]) -> Result<RequestEnvelope, RejectedRequest> {
        let reject = |request_id: Option<&String>, error| RejectedRequest {
            request_id: request_id.cloned(),
            error,
        };
        // serde_json refuses invalid UTF-8 and the non-JSON constants, and
        // treats a trailing `\r` (CRLF framing) as whitespace.
        let Ok(value) = serde_json::from_slice::<Value>(frame) else {
            return Err(reject(None, ProtocolError::InvalidJson));
        };
        let Value::Object(mut object) = value else {
            return Err(reject(None, ProtocolError::EnvelopeFields));
        };
        let echo = match object.get("request_id") {
            Some(Value::String(id)) if !id.is_empty() => Some(id.clone()),
            _ => None,
        };
        if object.len() != ENVELOPE_FIELDS.len()
            || !ENVELOPE_FIELDS.iter().all(|key| object.contains_key(*key))
        {
            return Err(reject(echo.as_ref(), ProtocolError::EnvelopeFields));
        }
        match object.get("protocol_version") {
            Some(Value::Number(version)) if version.is_i64() || version.is_u64() => {
                if version.as_u64() != Some(u64::from(PROTOCOL_VERSION)) {
                    return Err(reject(
                        echo.as_ref(),
                        ProtocolError::ProtocolVersionUnsupported,
                    ));
                }
            }
            _ => return Err(reject(echo.as_ref(), ProtocolError::ProtocolVersionType)),
        }
        let Some(request_id) = echo else {
            return Err(reject(None, ProtocolError::RequestId));
        };
        let method = match object.remove("method") {
            Some(Value::String(method)) if !method.is_empty() => method,
            _ => return Err(reject(Some(&request_id), ProtocolError::Method)),
        };
        let Some(Value::Object(params)) = object.remove("params") else {
            return Err(reject(Some(&request_id), ProtocolError::Params));
        };
        Ok(RequestEnvelope {
            request_id,
            method,
            params,
        })
    }

    /// Stage two: looks the method up and decodes its parameters (spec
    /// §2.4 steps 6 and 7), see [`BridgeRequest::decode`].
    ///
    /// # Errors
    ///
    /// A [`RejectedRequest`] echoing this envelope's `request_id`, with
    /// [`ProtocolError::UnknownMethod`] or [`ProtocolError::InvalidParams`].
    pub fn decode(self) -> Result<Request, RejectedRequest> {
        match BridgeRequest::decode(&self.method, self.params) {
            Ok(call) => Ok(Request {
                request_id: self.request_id,
                call,
            }),
            Err(error) => Err(RejectedRequest {
                request_id: Some(self.request_id),
                error,
            }),
        }
    }
}

/// A fully decoded request: its id and typed call.
///
/// Encodes as the complete envelope, `protocol_version` included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The caller's id, echoed in the response; non-empty.
    pub request_id: String,
    /// The method and its parameters.
    pub call: BridgeRequest,
}

impl Request {
    /// A request with `request_id` calling `call` (any parameter type).
    pub fn new(request_id: impl Into<String>, call: impl Into<BridgeRequest>) -> Request {
        Request {
            request_id: request_id.into(),
            call: call.into(),
        }
    }

    /// The method called.
    pub const fn method(&self) -> BridgeMethod {
        self.call.method()
    }

    /// Both decoding stages on one frame (without its `\n`).
    ///
    /// # Errors
    ///
    /// See [`RequestEnvelope::parse`] and [`RequestEnvelope::decode`].
    pub fn from_frame(frame: &[u8]) -> Result<Request, RejectedRequest> {
        RequestEnvelope::parse(frame)?.decode()
    }

    /// The request as one frame: compact JSON plus `\n`.
    ///
    /// # Errors
    ///
    /// [`ProtocolError::RequestTooLarge`] when the frame would exceed
    /// [`MAX_FRAME_BYTES`](super::MAX_FRAME_BYTES) (the client refuses to send it);
    /// [`ProtocolError::Internal`] if encoding fails, which the types rule
    /// out.
    pub fn to_frame(&self) -> Result<Vec<u8>, ProtocolError> {
        let json = serde_json::to_vec(self).map_err(|_| ProtocolError::Internal)?;
        terminate(json).map_err(|_| ProtocolError::RequestTooLarge)
    }
}

/// The envelope as encoded: borrowed, and with the version filled in.
#[derive(Serialize)]
struct RequestOut<'a> {
    protocol_version: u32,
    request_id: &'a str,
    // Encoding only; decoding is the two stages above, never `flatten`.
    #[serde(flatten)]
    call: &'a BridgeRequest,
}

impl Serialize for Request {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        RequestOut {
            protocol_version: PROTOCOL_VERSION,
            request_id: &self.request_id,
            call: &self.call,
        }
        .serialize(serializer)
    }
}

// The published shape of `Request`; used for schema generation only.
/// A Bridge request: `protocol_version` 1, a non-empty `request_id`, and
/// one method with its parameters.
#[derive(JsonSchema)]
#[schemars(rename = "Request", extend("unevaluatedProperties" = false))]
#[expect(dead_code, reason = "schema generation only: never constructed")]
struct RequestSchema {
    #[schemars(extend("const" = 1))]
    protocol_version: u32,
    #[schemars(length(min = 1))]
    request_id: String,
    #[serde(flatten)]
    call: BridgeRequest,
}

impl JsonSchema for Request {
    fn schema_name() -> Cow<'static, str> {
        "Request".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        RequestSchema::json_schema(generator)
    }
}

/// A response envelope.
///
/// Decoding is strict, as the MCP-side client requires (spec §1.6): exactly
/// `{request_id, ok, result}` or `{request_id, ok, error}`, `ok` a real
/// boolean agreeing with which of the two is present, `result` an object,
/// and a success always carrying a string `request_id`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "ResponseWire")]
pub enum Response {
    /// `ok: true`.
    Success {
        /// The request's id.
        request_id: String,
        /// The method's result object.
        result: Map<String, Value>,
    },
    /// `ok: false`.
    Failure {
        /// The request's id, or `None` (`null`) when the request had no
        /// usable one.
        request_id: Option<String>,
        /// What went wrong.
        error: ErrorBody,
    },
}

impl Response {
    /// A success carrying `result`, which must encode as a JSON object.
    ///
    /// Should the result not encode as an object (its types rule that out),
    /// the response becomes a `BRIDGE_PROTOCOL_ERROR` failure, the spec's
    /// answer to any unexpected failure.
    pub fn success<T: Serialize>(request_id: impl Into<String>, result: &T) -> Response {
        let request_id = request_id.into();
        match serde_json::to_value(result) {
            Ok(Value::Object(result)) => Response::Success { request_id, result },
            Ok(_) | Err(_) => Response::failure(Some(request_id), &ProtocolError::Internal),
        }
    }

    /// A failure for a protocol error.
    pub fn failure(request_id: Option<String>, error: &ProtocolError) -> Response {
        Response::Failure {
            request_id,
            error: ErrorBody::from(error),
        }
    }

    /// A failure with a service error code and message.
    pub fn error(
        request_id: Option<String>,
        code: BridgeErrorCode,
        message: impl Into<String>,
    ) -> Response {
        Response::Failure {
            request_id,
            error: ErrorBody::new(code, message),
        }
    }

    /// The echoed request id.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            Response::Success { request_id, .. } => Some(request_id),
            Response::Failure { request_id, .. } => request_id.as_deref(),
        }
    }

    /// The response as one frame: compact JSON plus `\n`.
    ///
    /// A response that would exceed [`MAX_FRAME_BYTES`](super::MAX_FRAME_BYTES) is replaced by a
    /// `RESPONSE_TOO_LARGE` failure with the same `request_id` (spec §2.3);
    /// should even that be too large (a request id near 1 MiB), the id is
    /// dropped to `null`, so the frame always fits.
    pub fn into_frame(self) -> Vec<u8> {
        let request_id = self.request_id().map(str::to_owned);
        let error = match serde_json::to_vec(&self).map(terminate) {
            Ok(Ok(frame)) => return frame,
            Ok(Err(_)) => ProtocolError::ResponseTooLarge,
            Err(_) => ProtocolError::Internal,
        };
        for request_id in [request_id, None] {
            let failure = Response::failure(request_id, &error);
            if let Ok(Ok(frame)) = serde_json::to_vec(&failure).map(terminate) {
                return frame;
            }
        }
        INTERNAL_FAILURE_FRAME.to_vec()
    }

    /// Decodes one response frame (without its `\n`).
    ///
    /// # Errors
    ///
    /// [`ProtocolError::MalformedResponse`] for anything but a well-formed
    /// response envelope.
    pub fn from_frame(frame: &[u8]) -> Result<Response, ProtocolError> {
        serde_json::from_slice(frame).map_err(|_| ProtocolError::MalformedResponse)
    }
}

/// The last-resort frame, for a failure to encode even an error response
/// (which the types rule out): a constant, so it cannot fail.
const INTERNAL_FAILURE_FRAME: &[u8] = b"{\"request_id\":null,\"ok\":false,\"error\":{\"code\":\"BRIDGE_PROTOCOL_ERROR\",\"message\":\"protocol failure\"}}\n";

impl Serialize for Response {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(3))?;
        match self {
            Response::Success { request_id, result } => {
                map.serialize_entry("request_id", request_id)?;
                map.serialize_entry("ok", &true)?;
                map.serialize_entry("result", result)?;
            }
            Response::Failure { request_id, error } => {
                map.serialize_entry("request_id", request_id)?;
                map.serialize_entry("ok", &false)?;
                map.serialize_entry("error", error)?;
            }
        }
        map.end()
    }
}

/// Stage one of response decoding: the strict key set.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResponseWire {
    #[serde(deserialize_with = "Option::deserialize")]
    request_id: Option<String>,
    ok: bool,
    #[serde(default, deserialize_with = "present")]
    result: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "present")]
    error: Option<ErrorBody>,
}

impl TryFrom<ResponseWire> for Response {
    type Error = &'static str;

    fn try_from(wire: ResponseWire) -> Result<Response, &'static str> {
        match (wire.ok, wire.request_id, wire.result, wire.error) {
            (true, Some(request_id), Some(result), None) => {
                Ok(Response::Success { request_id, result })
            }
            (false, request_id, None, Some(error)) => Ok(Response::Failure { request_id, error }),
            (true, None, _, _) => Err("a successful response must carry its request_id"),
            (true, Some(_), _, _) | (false, _, _, _) => {
                Err("a response holds `result` when ok is true and `error` when it is false")
            }
        }
    }
}

// The published shape of `Response`; used for schema generation only.
/// A Bridge response: a success with the method's `result`, or a failure
/// with an `error`.
#[derive(JsonSchema)]
#[schemars(rename = "Response")]
#[serde(untagged)]
#[expect(dead_code, reason = "schema generation only: never constructed")]
enum ResponseSchema {
    Success(SuccessSchema),
    Failure(FailureSchema),
}

/// A successful response.
#[derive(JsonSchema)]
#[schemars(rename = "Success")]
#[serde(deny_unknown_fields)]
#[expect(dead_code, reason = "schema generation only: never constructed")]
struct SuccessSchema {
    #[schemars(length(min = 1))]
    request_id: String,
    #[schemars(extend("const" = true))]
    ok: bool,
    result: Map<String, Value>,
}

/// A failed response; `request_id` is `null` when the request had no
/// usable one.
#[derive(JsonSchema)]
#[schemars(rename = "Failure")]
#[serde(deny_unknown_fields)]
#[expect(dead_code, reason = "schema generation only: never constructed")]
struct FailureSchema {
    #[schemars(with = "Nullable<String>")]
    request_id: Option<String>,
    #[schemars(extend("const" = false))]
    ok: bool,
    error: ErrorBody,
}

impl JsonSchema for Response {
    fn schema_name() -> Cow<'static, str> {
        "Response".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        ResponseSchema::json_schema(generator)
    }
}

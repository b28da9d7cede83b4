//! `bridge.peer`: the identity the Bridge measured for the connection the
//! request came on. A diagnostic, additive to RPC v1.
//!
//! The Bridge authorizes every connection by the uid/gid the kernel
//! reports for its peer (`SO_PEERCRED`), which is not necessarily the
//! identity the client believes it has: a container runtime that maps user
//! ids (rootless Docker, userns-remap) changes it on the way. Only the
//! Bridge can see the measured value, so `serverfs doctor` asks for it and
//! compares. Like every method, it is answered only to a peer the Bridge
//! already authorized; a refused peer gets `PEER_NOT_AUTHORIZED` instead.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `bridge.peer` parameters: none (`params` must be `{}`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BridgePeerParams {}

/// `bridge.peer` result: the credentials the kernel recorded for this
/// connection's peer when it connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BridgePeerResult {
    /// The peer's effective user id, as the Bridge's user namespace sees it.
    pub uid: u32,
    /// The peer's effective group id, as the Bridge's user namespace sees
    /// it.
    pub gid: u32,
}

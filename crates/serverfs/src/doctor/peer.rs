//! `agent bridge peer identity`: whether the identity this process runs as
//! is the one the Agent Bridge measures for it, and the one it serves.
//!
//! The Bridge authorizes each connection by the uid/gid the kernel reports
//! for the peer (`SO_PEERCRED`). Where `serverfs` runs in a container, the
//! identity it has inside (`SERVERFS_UID`/`SERVERFS_GID`) reaches the host
//! unchanged only under a rootful engine without user-namespace remapping;
//! rootless Docker and userns-remap map it to other ids. The user-scoped
//! deployment does not support such a mapping and fails closed (seed 000
//! §6): the fix is another engine setup, never looser permissions or ids
//! widened to whatever was measured. Only the Bridge sees the measured
//! value, so doctor asks for it with `bridge.peer` and compares.

use std::io::ErrorKind;
use std::time::Duration;

use serverfs_config::AgentSettings;
use serverfs_protocol::bridge::client::{BridgeClient, ClientError, ClientOptions};
use serverfs_protocol::bridge::{BridgeErrorCode, BridgePeerParams, BridgePeerResult};

use super::Report;

const CHECK: &str = "agent bridge peer identity";

/// Bound on the whole exchange: a Bridge that does not answer a diagnostic
/// within it is reported, not waited for.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// What every identity failure ends with: what it means and what not to do.
const MAPPING_EXPLAINED: &str = "a uid mapping between this process and the Agent Bridge \
    (rootless Docker, userns-remap, or another user namespace) changes the identity on the \
    way; the user-scoped deployment does not support it and fails closed. Run serverfs under \
    a rootful container engine without userns-remap, as the host user's uid:gid \
    (SERVERFS_UID/SERVERFS_GID = `id -u`/`id -g` of the Bridge's user). Do not loosen the \
    socket's permissions or set peer_uid/peer_gid to the mapped ids";

/// An identity: a uid and a gid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Ids {
    uid: u32,
    gid: u32,
}

/// Asks the Bridge at `agent.bridge_socket` which identity it measured
/// for this process and compares it with the process's own and the
/// configured `peer_uid`/`peer_gid`.
pub(super) fn check_peer_identity(report: &mut Report, agent: &AgentSettings) {
    let own = Ids {
        uid: rustix::process::geteuid().as_raw(),
        gid: rustix::process::getegid().as_raw(),
    };
    let measured = match ask_bridge(agent) {
        Ok(measured) => measured,
        Err(error) => return report_refusal(report, agent, own, &error),
    };
    let measured = Ids {
        uid: measured.uid,
        gid: measured.gid,
    };
    let configured = describe_configured(agent);
    if measured != own {
        return report.fail(
            CHECK,
            format!(
                "this process runs as uid {} gid {}, but the Agent Bridge measured uid {} gid {} \
                 for its connection: {MAPPING_EXPLAINED}",
                own.uid, own.gid, measured.uid, measured.gid
            ),
        );
    }
    let uid_differs = agent.peer_uid.is_some_and(|uid| uid != measured.uid);
    let gid_differs = agent.peer_gid.is_some_and(|gid| gid != measured.gid);
    if uid_differs || gid_differs {
        // The Bridge served us, so it runs with another configuration
        // than the one read here.
        return report.fail(
            CHECK,
            format!(
                "the Agent Bridge served uid {} gid {}, but this configuration allows {configured}: \
                 the Bridge runs with another configuration; give both processes the same \
                 one and restart the Bridge",
                measured.uid, measured.gid
            ),
        );
    }
    report.ok(
        CHECK,
        format!(
            "the Agent Bridge measured uid {} gid {} for this connection (SO_PEERCRED), the \
             identity this process runs as; it allows {configured}",
            measured.uid, measured.gid
        ),
    );
}

/// One `bridge.peer` call on a runtime of its own (doctor is synchronous).
fn ask_bridge(agent: &AgentSettings) -> Result<BridgePeerResult, ClientError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| ClientError::Unavailable { source })?;
    let client = BridgeClient::new(
        agent.bridge_socket.clone(),
        ClientOptions {
            call_timeout: CALL_TIMEOUT,
            ..ClientOptions::default()
        },
    );
    runtime.block_on(client.call(BridgePeerParams {}))
}

/// The report line for a failed `bridge.peer` call.
fn report_refusal(report: &mut Report, agent: &AgentSettings, own: Ids, error: &ClientError) {
    let configured = describe_configured(agent);
    match error {
        ClientError::Bridge {
            code: BridgeErrorCode::PeerNotAuthorized,
            ..
        } => {
            let as_configured = agent.peer_uid.is_none_or(|uid| uid == own.uid)
                && agent.peer_gid.is_none_or(|gid| gid == own.gid);
            let reason = if as_configured {
                // We are who the configuration says, yet refused: the
                // kernel reported someone else to the Bridge.
                MAPPING_EXPLAINED.to_owned()
            } else {
                format!(
                    "this process is not the configured identity: run it as {configured} \
                     (in a container: SERVERFS_UID/SERVERFS_GID in .env); if it then still \
                     fails, {MAPPING_EXPLAINED}"
                )
            };
            report.fail(
                CHECK,
                format!(
                    "the Agent Bridge refused this process (uid {} gid {} here) with \
                     PEER_NOT_AUTHORIZED: it serves only {configured}, as it measures peers \
                     with SO_PEERCRED; {reason}",
                    own.uid, own.gid
                ),
            );
        }
        ClientError::Bridge {
            code: BridgeErrorCode::MethodNotFound,
            ..
        } => report.warn(
            CHECK,
            "not measured: the running Agent Bridge predates bridge.peer; upgrade it to the \
             release of this serverfs",
        ),
        ClientError::Unavailable { source } if source.kind() == ErrorKind::PermissionDenied => {
            report.fail(
                CHECK,
                format!(
                    "this process (uid {} gid {}) may not open the Agent Bridge socket: the \
                     Bridge gives its socket to its own user and, with peer_gid set, that \
                     group; run serverfs as {configured}",
                    own.uid, own.gid
                ),
            );
        }
        other => report.warn(
            CHECK,
            format!(
                "not measured: {} ({}); is the Agent Bridge running?",
                other.code().as_str(),
                other
            ),
        ),
    }
}

/// `uid 1000 gid 100`, `uid 1000 (any gid)`, or the Bridge's own user.
fn describe_configured(agent: &AgentSettings) -> String {
    let uid = agent.peer_uid.map_or_else(
        || "the Bridge's own uid".to_owned(),
        |uid| format!("uid {uid}"),
    );
    match agent.peer_gid {
        Some(gid) => format!("{uid} gid {gid} (peer_uid/peer_gid)"),
        None => format!("{uid} with any gid (peer_uid/peer_gid)"),
    }
}

//! Who may talk to the Bridge (spec-agent-bridge.md §2.2).

use std::fmt;
use std::io;

use crate::platform;

/// The identity of a connected client, as the kernel measured it when the
/// client connected.
///
/// Handed to every [`BridgeService::handle`](super::BridgeService::handle)
/// call so that the service can audit who asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PeerInfo {
    /// The peer's effective user id.
    pub uid: u32,
    /// The peer's effective group id.
    pub gid: u32,
    /// The peer's process id, when the platform reports one and the peer
    /// is visible in the Bridge's pid namespace.
    pub pid: Option<u32>,
}

/// Which peers the Bridge serves.
///
/// The uid is always checked (by default our own effective uid); the gid
/// only when one is configured. A peer whose identity cannot be measured is
/// refused.
///
/// # Security
///
/// This is the Bridge's only authentication: the socket's file mode keeps
/// other users from connecting at all, and this check refuses, before
/// anything is read, any connection that got through anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerPolicy {
    uid: u32,
    gid: Option<u32>,
}

impl Default for PeerPolicy {
    fn default() -> PeerPolicy {
        PeerPolicy::current_user()
    }
}

impl PeerPolicy {
    /// Serve only peers running as our own effective uid, of any group.
    pub fn current_user() -> PeerPolicy {
        PeerPolicy::uid(platform::effective_uid())
    }

    /// Serve only peers running as `uid`, of any group.
    pub fn uid(uid: u32) -> PeerPolicy {
        PeerPolicy { uid, gid: None }
    }

    /// Additionally require the peer's gid to be `gid`.
    ///
    /// The listener then also gives the socket directory (when it creates
    /// it, or when its group differs) and the socket this group, so that a
    /// client running as another uid of this group can reach the socket.
    pub fn with_gid(self, gid: u32) -> PeerPolicy {
        PeerPolicy {
            gid: Some(gid),
            ..self
        }
    }

    /// The uid a peer must have.
    pub fn allowed_uid(&self) -> u32 {
        self.uid
    }

    /// The gid a peer must have, if one is required.
    pub fn allowed_gid(&self) -> Option<u32> {
        self.gid
    }

    /// Whether `peer` may be served.
    pub fn permits(&self, peer: &PeerInfo) -> bool {
        self.authorize(Ok(*peer)).is_ok()
    }

    /// Decides on a measurement; an unmeasurable peer is refused.
    pub(crate) fn authorize(
        &self,
        measured: io::Result<PeerInfo>,
    ) -> Result<PeerInfo, PeerRefusal> {
        let peer = measured.map_err(|_| PeerRefusal::Unmeasured)?;
        if peer.uid != self.uid {
            return Err(PeerRefusal::Uid);
        }
        if self.gid.is_some_and(|gid| gid != peer.gid) {
            return Err(PeerRefusal::Gid);
        }
        Ok(peer)
    }
}

/// Why a peer was refused; for the log line only (the peer is told
/// `PEER_NOT_AUTHORIZED` whatever the reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PeerRefusal {
    /// `SO_PEERCRED` failed.
    Unmeasured,
    /// The uid is not the allowed one.
    Uid,
    /// The gid is not the allowed one.
    Gid,
}

impl fmt::Display for PeerRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PeerRefusal::Unmeasured => "peer identity could not be measured",
            PeerRefusal::Uid => "peer uid is not allowed",
            PeerRefusal::Gid => "peer gid is not allowed",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PEER: PeerInfo = PeerInfo {
        uid: 1000,
        gid: 100,
        pid: Some(42),
    };

    #[test]
    fn uid_is_always_checked() {
        assert_eq!(PeerPolicy::uid(1000).authorize(Ok(PEER)), Ok(PEER));
        assert_eq!(
            PeerPolicy::uid(1001).authorize(Ok(PEER)),
            Err(PeerRefusal::Uid)
        );
    }

    #[test]
    fn gid_is_checked_only_when_configured() {
        assert!(PeerPolicy::uid(1000).with_gid(100).permits(&PEER));
        assert_eq!(
            PeerPolicy::uid(1000).with_gid(101).authorize(Ok(PEER)),
            Err(PeerRefusal::Gid)
        );
        // The gid never replaces the uid check.
        assert!(!PeerPolicy::uid(0).with_gid(100).permits(&PEER));
    }

    #[test]
    fn unmeasured_peer_is_refused() {
        let failed = Err(io::Error::from(io::ErrorKind::Unsupported));
        assert_eq!(
            PeerPolicy::uid(1000).authorize(failed),
            Err(PeerRefusal::Unmeasured)
        );
    }

    #[test]
    fn default_is_our_own_uid() {
        let policy = PeerPolicy::default();
        assert_eq!(policy.allowed_uid(), platform::effective_uid());
        assert_eq!(policy.allowed_gid(), None);
    }
}

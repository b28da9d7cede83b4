//! Linux: peer credentials with `SO_PEERCRED`, our effective uid, a
//! non-blocking exclusive `flock(2)`, and the `sun_path` budget.
//!
//! Any Linux kernel the project supports has all of these; there is no
//! fallback because none is needed.

use std::io;
use std::os::fd::AsFd;
use std::path::Path;

use rustix::fs::{FlockOperation, flock};
use rustix::io::Errno;
use tokio::net::UnixStream;

use crate::rpc::PeerInfo;

/// `sizeof(sockaddr_un.sun_path)` on Linux, the terminating NUL included.
const SUN_PATH_BYTES: usize = 108;

/// Our effective uid: the owner every socket artifact must have, and the
/// default peer we serve.
pub(crate) fn effective_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The credentials the kernel recorded when the peer called `connect(2)`
/// (`getsockopt(SOL_SOCKET, SO_PEERCRED)`, see unix(7)).
///
/// They describe the connecting process at connect time, not whoever holds
/// the descriptor later, which is what an authorization check wants, and
/// cannot be forged by the peer.
///
/// This goes through tokio's `peer_cred`, which is the same `getsockopt`:
/// rustix 1.1's `socket_peercred` returns a `UCred` whose `pid` is a
/// non-zero type, but the kernel reports pid 0 when the peer lives in a pid
/// namespace the Bridge cannot see (a Bridge in a container, a client on
/// the host), and that value must be representable, not undefined.
pub(crate) fn measure_peer(stream: &UnixStream) -> io::Result<PeerInfo> {
    let credentials = stream.peer_cred()?;
    Ok(PeerInfo {
        uid: credentials.uid(),
        gid: credentials.gid(),
        pid: credentials
            .pid()
            .and_then(|pid| u32::try_from(pid).ok())
            .filter(|pid| *pid != 0),
    })
}

/// Tries to take an exclusive `flock(2)` on `fd` without waiting.
///
/// `Ok(false)` means another open file description holds it. The lock is
/// released when the last descriptor of this one closes, including when the
/// process dies, so a crashed Bridge never leaves its socket locked.
pub(crate) fn try_lock_exclusive(fd: impl AsFd) -> io::Result<bool> {
    match flock(fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(Errno::WOULDBLOCK) => Ok(false),
        Err(errno) => Err(errno.into()),
    }
}

/// Whether `path` fits a Unix socket address with its terminating NUL.
pub(crate) fn fits_socket_address(path: &Path) -> bool {
    path.as_os_str().len() < SUN_PATH_BYTES
}

//! The platform seam of the RPC socket. Only Linux is implemented; a macOS
//! or Windows twin exports the same items and nothing above this module
//! changes.
//!
//! The RPC socket (`linux::socket`): who is connecting (`SO_PEERCRED`),
//! who we are, an exclusive lock that dies with its holder (`flock(2)`),
//! and the `sun_path` budget. A macOS twin would use `getpeereid` (no pid)
//! and a 104-byte `sun_path`; Windows a named pipe and its SID. (Provider
//! process containment has its own seam in `serverfs-agent-runtime`.)

mod linux {
    pub(crate) mod socket;
}

pub(crate) use linux::socket::{
    effective_uid, fits_socket_address, measure_peer, try_lock_exclusive,
};

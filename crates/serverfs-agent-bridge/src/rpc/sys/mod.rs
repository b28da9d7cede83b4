//! The platform seam of the RPC transport: who is connecting, who we are,
//! an exclusive lock that dies with its holder, and the socket address
//! budget.
//!
//! Only Linux is implemented (`linux`: `SO_PEERCRED`, `flock(2)`, a
//! 108-byte `sun_path`). A macOS twin (`getpeereid`, no pid, a 104-byte
//! `sun_path`) or a Windows one (named pipe + SID) exports the same items,
//! and nothing above this module changes. These functions belong with the
//! crate's other platform code (`platform/linux/`) and can move there
//! unchanged.

mod linux;

pub(super) use linux::{effective_uid, fits_socket_address, measure_peer, try_lock_exclusive};

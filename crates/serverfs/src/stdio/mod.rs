//! MCP over stdio: the process's standard input and output ([`pipes`]),
//! framed as one JSON-RPC message per line ([`framing`]).

mod framing;
mod pipes;

pub use framing::LineTransport;
pub use pipes::streams;

//! Services between the MCP surface and the filesystem kernel.

mod agent;
mod approvals;
mod binary;
mod call;
mod files;
mod lease;
mod mutations;
mod placement;
mod registry;
mod search;

pub use agent::AgentService;
pub use approvals::{Answerer, HumanAnswer, HumanReach};
pub use binary::Download;
pub use call::{CallControl, Progress, ProgressSink};
pub use files::FileService;
pub use lease::{BridgeLease, NoLease, WriterLease, lease_id};
pub use registry::{RegistryError, WorkdirHandle, WorkdirRegistry};

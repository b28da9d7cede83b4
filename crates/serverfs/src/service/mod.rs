//! Services between the MCP surface and the filesystem kernel.

mod files;
mod registry;

pub use files::FileService;
pub use registry::{WorkdirHandle, WorkdirRegistry};

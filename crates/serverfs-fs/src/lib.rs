//! The confined filesystem kernel of ServerFS.
//!
//! A [`Workdir`] is an open root directory descriptor plus a [`PathPolicy`].
//! Every request path is parsed into a [`RelPath`] (pure string rules),
//! checked against the policy, then resolved *beneath the root descriptor*
//! by the kernel — `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS` on Linux, or a component-by-component
//! `O_NOFOLLOW` walk where that is unavailable (see [`Resolver`]). Nothing
//! is validated as a string and then opened by name.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use serverfs_fs::{PageLimits, PageStart, PathPolicy, Resolver, Workdir};
//!
//! let policy = PathPolicy::new(false, true, &[])?;
//! let workdir = Workdir::open("/srv/project".as_ref(), policy, Resolver::Auto)?;
//! let path = workdir.parse_path("src/main.rs")?;
//! let page = workdir.read_text(&path, &PageStart::Line(1), PageLimits { max_lines: 200, max_bytes: 512 * 1024 })?;
//! println!("{} (revision {})", page.content, page.revision);
//! # Ok(()) }
//! ```
//!
//! The API is synchronous and knows nothing of MCP; callers run it on a
//! blocking thread. Every error is an [`FsError`] with a stable code.

mod binary;
mod cleanup;
mod control;
mod edit;
mod error;
mod find;
mod line_index;
mod list;
mod mounts;
mod mutate;
mod policy;
mod publish;
mod read;
mod relpath;
mod resolve;
mod revision;
mod search;
mod stat;
mod sys;
mod timefmt;
mod walk;
mod workdir;

pub use binary::{ByteRange, BytesRead, READ_CHUNK_BYTES};
pub use cleanup::CleanupReport;
pub use control::Control;
pub use edit::{EditLimits, EditOutcome, MAX_DIFF_BYTES, TextEdit, apply_edits};
pub use error::FsError;
pub use find::{FindLimits, FindResult, NamePattern};
pub use list::{DirEntryInfo, DirectoryPage, EntryDetail};
pub use mounts::MountTable;
pub use mutate::{Deleted, Replaced};
pub use policy::{PathPolicy, RESERVED_SENTINEL, RESERVED_TEMP_PREFIX, is_reserved};
pub use read::{LinePosition, PageLimits, PageStart, TextPage};
pub use relpath::{MAX_COMPONENT_BYTES, MAX_PATH_BYTES, RelPath};
pub use resolve::{Resolver, openat2_available};
pub use revision::Revision;
pub use search::{SearchLimits, SearchMatch, SearchQuery, SearchResult};
pub use stat::{EntryMetadata, mime_type_of};
pub use timefmt::rfc3339_seconds;
pub use workdir::{EntryKind, Workdir};

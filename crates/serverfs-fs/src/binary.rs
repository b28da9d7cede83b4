//! Reading raw bytes for binary download, whole or by range.

use rustix::fs::fstat;
use sha2::{Digest, Sha256};

use crate::{Control, FsError, RelPath, Revision, Workdir};

/// The most a range read asks of the kernel (and hashes) at once: between
/// two chunks it counts its progress and looks for a cancellation.
pub const READ_CHUNK_BYTES: usize = 1 << 20;

/// Which bytes to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    /// First byte.
    pub offset: u64,
    /// At most this many bytes; `None` means "the whole file", which must
    /// then fit `limit`.
    pub max_bytes: Option<u64>,
    /// The per-call ceiling (the workdir's binary transfer limit).
    pub limit: u64,
}

/// Bytes read from a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BytesRead {
    /// The bytes.
    pub data: Vec<u8>,
    /// Total file size.
    pub size: u64,
    /// SHA-256 (lowercase hex) of `data`.
    pub sha256: String,
    /// Revision of the file, unchanged during the read.
    pub revision: Revision,
    /// True when bytes follow this range.
    pub has_more: bool,
}

impl Workdir {
    /// Reads `range` of the regular file at `path`. When `expected` is
    /// given (the revision of a previous range), the file must still have
    /// it, so that ranges of different versions are never mixed. `control`
    /// counts the bytes read and can stop the read between chunks.
    ///
    /// # Errors
    ///
    /// The type codes; `REVISION_CONFLICT` (`expected` given and stale);
    /// `BINARY_FILE_TOO_LARGE` (whole-file read over the limit);
    /// `FILE_CHANGED_DURING_READ`; `REQUEST_CANCELLED`.
    pub fn read_bytes(
        &self,
        path: &RelPath,
        range: ByteRange,
        expected: Option<&str>,
        control: &Control,
    ) -> Result<BytesRead, FsError> {
        let (fd, stat) = self.open_for_reading(path)?;
        let revision = Revision::from_stat(&stat);
        if expected.is_some_and(|e| e != revision.as_str()) {
            return Err(FsError::RevisionConflict);
        }
        let size = u64::try_from(stat.st_size).unwrap_or(0);
        let want = match range.max_bytes {
            None if size > range.limit => {
                return Err(FsError::BinaryTooLarge { limit: range.limit });
            }
            None => size,
            Some(max) => max.min(range.limit),
        };
        let start = range.offset.min(size);
        let len = want.min(size - start);
        let mut data = vec![0u8; usize::try_from(len).unwrap_or(0)];
        let mut filled = 0usize;
        // Each chunk is hashed as it arrives: the hash of a large range
        // costs as much as its read, and this way a cancel stops both
        // (and the chunk is hashed while it is still in the cache).
        let mut hasher = Sha256::new();
        while filled < data.len() {
            if control.is_cancelled() {
                return Err(FsError::Cancelled);
            }
            let end = data.len().min(filled + READ_CHUNK_BYTES);
            let n = rustix::io::pread(&fd, &mut data[filled..end], start + filled as u64)
                .map_err(FsError::from_errno)?;
            if n == 0 {
                break; // shrank under us; caught by the revision check below
            }
            hasher.update(&data[filled..filled + n]);
            filled += n;
            control.advance(n as u64);
        }
        if Revision::from_stat(&fstat(&fd).map_err(FsError::from_errno)?) != revision
            || filled != data.len()
        {
            return Err(FsError::ChangedDuringRead);
        }
        let sha256 = hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Ok(BytesRead {
            has_more: start + len < size,
            data,
            size,
            sha256,
            revision,
        })
    }
}

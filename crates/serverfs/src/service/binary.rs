//! The binary transfer tools: whole or ranged downloads, base64 uploads
//! that create or (revision-guarded) replace.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serverfs_fs::{ByteRange, Control, mime_type_of};
use serverfs_protocol::ErrorCode;
use sha2::{Digest, Sha256};

use crate::audit::AuditRecord;
use crate::mcp::error::ToolError;
use crate::mcp::params::{DownloadBinaryFileParams, UploadBinaryFileParams};
use crate::mcp::results::{DownloadBinaryFileResult, UploadBinaryFileResult};
use crate::service::call::{CallControl, OnCancel, Progress};
use crate::service::files::run_blocking;
use crate::service::{FileService, WorkdirHandle};

/// A downloaded range: metadata plus the bytes (sent as an embedded blob).
pub struct Download {
    /// Structured metadata.
    pub meta: DownloadBinaryFileResult,
    /// The bytes.
    pub data: Vec<u8>,
}

impl FileService {
    /// `download_binary_file`: a read the client can cancel and watch.
    pub async fn download_binary_file(
        &self,
        params: DownloadBinaryFileParams,
        audit: &AuditRecord,
        call: &CallControl,
    ) -> Result<Download, ToolError> {
        if params.max_bytes == Some(0) {
            return Err(ToolError::invalid_argument("max_bytes must be at least 1"));
        }
        let (workdir, path) =
            self.locate_checked(&params.workdir, &params.path, audit, require_binary)?;
        let range = ByteRange {
            offset: params.offset,
            max_bytes: params.max_bytes,
            limit: workdir.config.max_binary_transfer_bytes,
        };
        let expected = params.expected_revision;
        let control = Arc::new(Control::new());
        let kernel = control.clone();
        let reading = run_blocking(&workdir, &path, move |workdir, path| {
            workdir
                .fs
                .read_bytes(path, range, expected.as_deref(), &kernel)
        });
        let read = call
            .watch(reading, OnCancel::Stop(&control), || Progress {
                done: control.done(),
                total: None,
                message: format!("{} bytes read", control.done()),
            })
            .await?;
        let mime_type = mime_type_of(path.file_name().unwrap_or(""));
        audit.set(|a| {
            a.bytes_returned = Some(read.data.len() as u64);
            a.mime_type = Some(mime_type.clone());
            a.revision = Some(read.revision.as_str().to_owned());
        });
        Ok(Download {
            meta: DownloadBinaryFileResult {
                workdir: params.workdir,
                path: path.as_string(),
                size: read.size,
                mime_type,
                sha256: read.sha256,
                revision: read.revision.as_str().to_owned(),
                offset: params.offset.min(read.size),
                bytes_returned: read.data.len() as u64,
                has_more: read.has_more,
            },
            data: read.data,
        })
    }

    /// `upload_binary_file`. Progress counts the payload's bytes as they
    /// are decoded and hashed (out of its decoded size), then stays there
    /// while the file is written; a cancel never interrupts the upload
    /// (its publication is atomic either way).
    pub async fn upload_binary_file(
        &self,
        params: UploadBinaryFileParams,
        audit: &AuditRecord,
        call: &CallControl,
    ) -> Result<UploadBinaryFileResult, ToolError> {
        let target =
            self.authorize_mutation(&params.workdir, &params.path, audit, require_binary)?;
        let expected = match (params.overwrite, params.expected_revision) {
            (true, None) => {
                return Err(coded(
                    ErrorCode::ExpectedRevisionRequired,
                    "overwrite: true needs expected_revision (from stat_file)",
                ));
            }
            (false, Some(_)) => {
                return Err(coded(
                    ErrorCode::ExpectedRevisionNotAllowed,
                    "expected_revision is only accepted with overwrite: true",
                ));
            }
            (_, expected) => expected,
        };
        let limit = target.workdir.config.max_binary_transfer_bytes;
        let encoded = params.data_base64;
        let total = decoded_len(&encoded);
        let decoded = Arc::new(AtomicU64::new(0));
        let counter = decoded.clone();
        let upload = async {
            // Decoding and hashing up to the transfer cap is CPU work: keep
            // it off the async worker threads that serve other calls.
            let payload = tokio::task::spawn_blocking(move || {
                decode_payload(&encoded, limit, DECODE_CHUNK_CHARS, &counter)
            })
            .await
            .map_err(|join| ToolError::internal(format!("upload decoding failed: {join}")))??;
            let Payload { data, sha256 } = payload;
            let bytes_written = data.len() as u64;
            let revisions = self
                .mutate(&target, move |fs, path| match expected {
                    Some(expected) => fs
                        .replace_file(path, &expected, &data)
                        .map(|r| (Some(r.revision_before), r.revision)),
                    None => fs.create_file(path, &data).map(|r| (None, r)),
                })
                .await?;
            Ok((bytes_written, sha256, revisions))
        };
        let (bytes_written, sha256, (revision_before, revision)) = call
            .watch(upload, OnCancel::Finish, || {
                let done = decoded.load(Ordering::Relaxed);
                Progress {
                    done,
                    total: Some(total),
                    message: if done < total {
                        format!("{done} of {total} bytes decoded")
                    } else {
                        format!("{done} bytes decoded; writing")
                    },
                }
            })
            .await?;
        audit.set(|a| {
            a.bytes_written = Some(bytes_written);
            a.revision = Some(revision.as_str().to_owned());
        });
        Ok(UploadBinaryFileResult {
            workdir: params.workdir,
            path: target.path.as_string(),
            created: revision_before.is_none(),
            replaced: revision_before.is_some(),
            bytes_written,
            sha256,
            revision_before: revision_before.map(|r| r.as_str().to_owned()),
            revision: revision.as_str().to_owned(),
        })
    }
}

fn require_binary(workdir: &WorkdirHandle) -> Result<(), ToolError> {
    if workdir.config.binary_transfer {
        Ok(())
    } else {
        Err(coded(
            ErrorCode::BinaryTransferDisabled,
            &format!(
                "binary transfer is not enabled for workdir '{}'",
                workdir.config.alias.as_str()
            ),
        ))
    }
}

/// Base64 characters an upload decodes (and hashes) at a time: between two
/// chunks it counts its progress. A multiple of 4, so that every chunk but
/// the last is whole quanta.
const DECODE_CHUNK_CHARS: usize = 4 << 20;

/// A decoded upload and its SHA-256 (lowercase hex).
#[derive(Debug, PartialEq)]
struct Payload {
    data: Vec<u8>,
    sha256: String,
}

/// The size `encoded` decodes to, if it is valid (the progress total).
fn decoded_len(encoded: &str) -> u64 {
    let padding = encoded.bytes().rev().take(2).filter(|b| *b == b'=').count();
    ((encoded.len() / 4 * 3).saturating_sub(padding)) as u64
}

/// Strict RFC 4648 standard base64 (padded, no whitespace, no URL-safe
/// alphabet), with the size checked before decoding so an oversized
/// payload costs no decode. Decoded and hashed `chunk_chars` characters
/// at a time, each chunk's bytes added to `decoded` once done.
fn decode_payload(
    encoded: &str,
    limit: u64,
    chunk_chars: usize,
    decoded: &AtomicU64,
) -> Result<Payload, ToolError> {
    let too_large = || {
        coded(
            ErrorCode::BinaryPayloadTooLarge,
            &format!("payload exceeds the binary transfer limit of {limit} bytes"),
        )
    };
    if encoded.len() as u64 > limit.div_ceil(3) * 4 {
        return Err(too_large());
    }
    if !encoded.is_ascii() {
        return Err(coded(
            ErrorCode::InvalidBase64,
            "data_base64 contains non-ASCII characters",
        ));
    }
    let invalid = |e: base64::DecodeError| {
        coded(
            ErrorCode::InvalidBase64,
            &format!("data_base64 is not strict standard base64: {e}"),
        )
    };
    let mut data = Vec::with_capacity(usize::try_from(decoded_len(encoded)).unwrap_or(0));
    let mut hasher = Sha256::new();
    let bytes = encoded.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        let end = bytes.len().min(start + chunk_chars);
        let chunk = &bytes[start..end];
        // Padding belongs to the very end: a chunk before it decodes on its
        // own only without any (as part of the whole it would be invalid).
        if end < bytes.len()
            && let Some(at) = chunk.iter().position(|b| *b == b'=')
        {
            return Err(invalid(base64::DecodeError::InvalidByte(start + at, b'=')));
        }
        let before = data.len();
        STANDARD
            .decode_vec(chunk, &mut data)
            .map_err(|e| invalid(shifted(e, start)))?;
        hasher.update(&data[before..]);
        decoded.fetch_add((data.len() - before) as u64, Ordering::Relaxed);
        start = end;
    }
    if data.len() as u64 > limit {
        return Err(too_large());
    }
    let sha256 = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok(Payload { data, sha256 })
}

/// A chunk's decoding error with its offset in the whole payload.
fn shifted(error: base64::DecodeError, by: usize) -> base64::DecodeError {
    use base64::DecodeError::{InvalidByte, InvalidLastSymbol, InvalidLength, InvalidPadding};
    match error {
        InvalidByte(at, byte) => InvalidByte(at + by, byte),
        InvalidLength(at) => InvalidLength(at + by),
        InvalidLastSymbol(at, byte) => InvalidLastSymbol(at + by, byte),
        InvalidPadding => InvalidPadding,
    }
}

fn coded(code: ErrorCode, message: &str) -> ToolError {
    ToolError {
        code: code.into(),
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::{AtomicU64, DECODE_CHUNK_CHARS, Ordering, Payload, decode_payload, decoded_len};
    use crate::mcp::error::ToolCode;
    use base64::Engine;
    use serverfs_protocol::ErrorCode;

    /// Decodes in one chunk (the payloads here are far below a real one).
    fn decode(encoded: &str, limit: u64) -> Result<Vec<u8>, ToolCode> {
        decode_payload(encoded, limit, DECODE_CHUNK_CHARS, &AtomicU64::new(0))
            .map(|p| p.data)
            .map_err(|e| e.code)
    }

    #[test]
    fn strict_base64() {
        assert_eq!(decode("", 10).unwrap(), b"");
        assert_eq!(decode("YQ==", 10).unwrap(), b"a");
        for bad in ["YQ=", "Y Q==", "***", "YQ", "YQ==\n", "-_-_", "YR=="] {
            assert_eq!(
                decode(bad, 10).unwrap_err(),
                ErrorCode::InvalidBase64,
                "{bad:?}"
            );
        }
        assert_eq!(decode("é", 10).unwrap_err(), ErrorCode::InvalidBase64);
        // 3 bytes fit a limit of 3; 4 do not (caught after decoding), and an
        // encoding longer than any valid payload is refused before decoding.
        assert_eq!(decode("YWJj", 3).unwrap(), b"abc");
        assert_eq!(decode("YWJjZA==", 4).unwrap(), b"abcd");
        assert_eq!(
            decode("YWJjZA==", 3).unwrap_err(),
            ErrorCode::BinaryPayloadTooLarge
        );
        assert_eq!(
            decode("YWJjYWJj", 3).unwrap_err(),
            ErrorCode::BinaryPayloadTooLarge
        );
    }

    #[test]
    fn chunks_decode_as_the_whole_and_count_their_bytes() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        for len in [0, 1, 2, 3, 998, 999, 1000] {
            let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes[..len]);
            assert_eq!(decoded_len(&encoded), len as u64);
            let counted = AtomicU64::new(0);
            // Chunks of 8 characters (6 bytes): many, the last one short.
            let Payload { data, sha256 } = decode_payload(&encoded, 1 << 20, 8, &counted).unwrap();
            assert_eq!(data, &bytes[..len]);
            assert_eq!(counted.load(Ordering::Relaxed), len as u64);
            let whole = decode_payload(&encoded, 1 << 20, DECODE_CHUNK_CHARS, &AtomicU64::new(0));
            assert_eq!(whole.unwrap().sha256, sha256);
        }
        // Padding inside the payload is refused even where it ends a chunk
        // (each half alone would be valid), and an error names its offset
        // in the whole payload.
        for (bad, offset) in [("YQ==YQ==", "offset 2"), ("YWJjYWJjYQ*=", "offset 10")] {
            let error = decode_payload(bad, 1 << 20, 4, &AtomicU64::new(0)).unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidBase64, "{bad}");
            assert!(error.message.contains(offset), "{bad}: {}", error.message);
        }
    }
}

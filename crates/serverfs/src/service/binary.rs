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

    /// `upload_binary_file`. Progress says when the payload is decoded and
    /// the write begins; a cancel never interrupts the write (its
    /// publication is atomic either way).
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
        let decoded = AtomicU64::new(0);
        let upload = async {
            // Decoding and hashing up to the transfer cap is CPU work: keep
            // it off the async worker threads that serve other calls.
            let (data, sha256) = tokio::task::spawn_blocking(move || {
                let data = decode_payload(&encoded, limit)?;
                let sha256: String = Sha256::digest(&data)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                Ok::<_, ToolError>((data, sha256))
            })
            .await
            .map_err(|join| ToolError::internal(format!("upload decoding failed: {join}")))??;
            let bytes_written = data.len() as u64;
            decoded.store(bytes_written, Ordering::Relaxed);
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
                    total: None,
                    message: format!("{done} bytes decoded; writing"),
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

/// Strict RFC 4648 standard base64 (padded, no whitespace, no URL-safe
/// alphabet), with the size checked before decoding so an oversized
/// payload costs no decode.
fn decode_payload(encoded: &str, limit: u64) -> Result<Vec<u8>, ToolError> {
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
    let data = STANDARD.decode(encoded).map_err(|e| {
        coded(
            ErrorCode::InvalidBase64,
            &format!("data_base64 is not strict standard base64: {e}"),
        )
    })?;
    if data.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(data)
}

fn coded(code: ErrorCode, message: &str) -> ToolError {
    ToolError {
        code: code.into(),
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::decode_payload;
    use serverfs_protocol::ErrorCode;

    #[test]
    fn strict_base64() {
        assert_eq!(decode_payload("", 10).unwrap(), b"");
        assert_eq!(decode_payload("YQ==", 10).unwrap(), b"a");
        for bad in ["YQ=", "Y Q==", "***", "YQ", "YQ==\n", "-_-_", "YR=="] {
            assert_eq!(
                decode_payload(bad, 10).unwrap_err().code,
                ErrorCode::InvalidBase64,
                "{bad:?}"
            );
        }
        assert_eq!(
            decode_payload("é", 10).unwrap_err().code,
            ErrorCode::InvalidBase64
        );
        // 3 bytes fit a limit of 3; 4 do not (caught after decoding), and an
        // encoding longer than any valid payload is refused before decoding.
        assert_eq!(decode_payload("YWJj", 3).unwrap(), b"abc");
        assert_eq!(decode_payload("YWJjZA==", 4).unwrap(), b"abcd");
        assert_eq!(
            decode_payload("YWJjZA==", 3).unwrap_err().code,
            ErrorCode::BinaryPayloadTooLarge
        );
        assert_eq!(
            decode_payload("YWJjYWJj", 3).unwrap_err().code,
            ErrorCode::BinaryPayloadTooLarge
        );
    }
}

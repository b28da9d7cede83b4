//! The resource template `serverfs://{workdir}/{path}`: a whole small text
//! file in one read, through the same code path as `read_text_file`.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use rmcp::ErrorData;
use rmcp::model::{ReadResourceResult, ResourceContents, ResourceTemplate};
use serverfs_protocol::ErrorCode;

use super::error::{ToolCode, ToolError};
use super::params::ReadTextFileParams;
use crate::audit::AuditRecord;
use crate::service::FileService;

const SCHEME: &str = "serverfs://";

/// The URI of a file: `serverfs://<alias>/<path>`, each path component
/// percent-encoded (`/` kept as the separator).
pub fn uri(workdir: &str, path: &str) -> String {
    let encoded: Vec<String> = path
        .split('/')
        .map(|c| utf8_percent_encode(c, COMPONENT).to_string())
        .collect();
    format!("{SCHEME}{workdir}/{}", encoded.join("/"))
}

/// Everything but RFC 3986 unreserved characters is encoded in a component.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The template clients see in `resources/templates/list`.
pub fn template() -> ResourceTemplate {
    ResourceTemplate::new(format!("{SCHEME}{{workdir}}/{{path}}"), "ServerFS file")
        .with_description(
            "A whole UTF-8 text file of a workdir. Files longer than one read_text_file page \
             are refused with RESOURCE_TOO_LARGE; page them with read_text_file.",
        )
        .with_mime_type("text/plain")
}

/// Reads `uri` completely, or fails with a coded error.
pub async fn read(
    files: &FileService,
    uri: &str,
    token_name: Option<String>,
) -> Result<ReadResourceResult, ErrorData> {
    let mut audit = AuditRecord::start("read_resource");
    audit.set(|a| a.token_name = token_name);
    let outcome = read_text(files, uri, &mut audit).await;
    audit.finish(outcome.as_ref().err().map(|e| e.code));
    outcome
        .map(|text| ReadResourceResult::new(vec![ResourceContents::text(text, uri)]))
        .map_err(to_error_data)
}

async fn read_text(
    files: &FileService,
    uri: &str,
    audit: &mut AuditRecord,
) -> Result<String, ToolError> {
    let (workdir, path) = parse_uri(uri)?;
    let params = ReadTextFileParams {
        workdir,
        path,
        start_line: None,
        // Capped to the workdir's max_read_lines by the service.
        max_lines: Some(u64::MAX),
        cursor: None,
        tail_lines: None,
    };
    let page = files.read_text_file(params, audit).await?;
    if page.has_more {
        return Err(ToolError {
            code: ErrorCode::ResourceTooLarge.into(),
            message: format!(
                "{}:{} is larger than one page; use read_text_file",
                page.workdir, page.path
            ),
        });
    }
    Ok(page.content)
}

fn parse_uri(uri: &str) -> Result<(String, String), ToolError> {
    let invalid = || ToolError {
        code: ErrorCode::InvalidResourceUri.into(),
        message: format!(
            "expected {SCHEME}{{workdir}}/{{path}}, got '{}'",
            super::error::echo(uri)
        ),
    };
    let rest = uri.strip_prefix(SCHEME).ok_or_else(invalid)?;
    let (workdir, path) = rest.split_once('/').unwrap_or((rest, ""));
    let decode = |s: &str| {
        percent_decode_str(s)
            .decode_utf8()
            .map(|c| c.into_owned())
            .map_err(|_| invalid())
    };
    Ok((decode(workdir)?, decode(path)?))
}

fn to_error_data(error: ToolError) -> ErrorData {
    let code = error.code;
    let (text, data) = error.into_parts();
    let data = Some(data);
    match code {
        ToolCode::File(ErrorCode::PathNotFound | ErrorCode::WorkdirNotFound) => {
            ErrorData::resource_not_found(text, data)
        }
        ToolCode::File(ErrorCode::InternalError) => ErrorData::internal_error(text, data),
        _ => ErrorData::invalid_params(text, data),
    }
}

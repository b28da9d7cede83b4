//! The tool catalog: names, descriptions, annotations and schemas, in the
//! fixed order `tools/list` reports them.

use rmcp::handler::server::tool::{schema_for_input, schema_for_output};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde_json::json;
use serverfs_config::ServerSettings;

use super::params::{ListDirectoryParams, ListWorkdirsParams, ReadTextFileParams, StatFileParams};
use super::results::{ListDirectoryResult, ListWorkdirsResult, ReadTextFileResult, StatFileResult};

/// `list_workdirs`.
pub const LIST_WORKDIRS: &str = "list_workdirs";
/// `list_directory`.
pub const LIST_DIRECTORY: &str = "list_directory";
/// `stat_file`.
pub const STAT_FILE: &str = "stat_file";
/// `read_text_file`.
pub const READ_TEXT_FILE: &str = "read_text_file";

/// Every tool, in `tools/list` order.
pub const TOOL_NAMES: &[&str] = &[LIST_WORKDIRS, LIST_DIRECTORY, STAT_FILE, READ_TEXT_FILE];

/// Builds the catalog. Server-configured defaults (such as the default
/// `limit`) are written into the published input schemas.
pub fn tools(settings: &ServerSettings) -> Vec<Tool> {
    let mut list_directory = tool::<ListDirectoryParams, ListDirectoryResult>(
        LIST_DIRECTORY,
        "List one page of a directory's entries, sorted by name: name, path, type \
         (file/directory/symlink/other), size and modification time. Hidden and denied \
         entries are not shown; symlinks are listed but never followed.",
    );
    set_default(
        &mut list_directory,
        "limit",
        u64::from(settings.default_list_limit.min(settings.max_list_entries)),
    );
    vec![
        tool::<ListWorkdirsParams, ListWorkdirsResult>(
            LIST_WORKDIRS,
            "List the configured workdirs with their aliases, descriptions, access \
             (read-only or read-write) and capabilities. Call this first.",
        ),
        list_directory,
        tool::<StatFileParams, StatFileResult>(
            STAT_FILE,
            "Describe one file, directory or symlink without following it: type, size, \
             modification time, MIME type and revision token.",
        ),
        tool::<ReadTextFileParams, ReadTextFileResult>(
            READ_TEXT_FILE,
            "Read a page of a UTF-8 text file by line (start_line, max_lines), line endings \
             untouched. When has_more is true, continue with next_cursor (fast, exact) or \
             next_start_line. Returns the file's revision token.",
        ),
    ]
}

fn tool<P: JsonSchema + 'static, R: JsonSchema + 'static>(
    name: &'static str,
    description: &'static str,
) -> Tool {
    // The parameter types are plain structs, so their schemas are objects;
    // should that ever break, publish an open object rather than refuse to
    // start.
    let input = schema_for_input::<P>().unwrap_or_else(|_| {
        let mut open = JsonObject::new();
        open.insert("type".into(), json!("object"));
        open.into()
    });
    Tool::new(name, description, input)
        .with_raw_output_schema(schema_for_output::<R>())
        .with_annotations(ToolAnnotations::from_raw(
            None,
            Some(true),
            None,
            None,
            Some(false),
        ))
}

fn set_default(tool: &mut Tool, property: &str, value: u64) {
    let mut schema = (*tool.input_schema).clone();
    if let Some(prop) = schema
        .get_mut("properties")
        .and_then(|p| p.get_mut(property))
        .and_then(|p| p.as_object_mut())
    {
        prop.insert("default".into(), json!(value));
    }
    tool.input_schema = schema.into();
}

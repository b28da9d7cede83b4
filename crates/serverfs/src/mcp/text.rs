//! The text block sent beside every result's `structuredContent`.
//!
//! Many clients hand the model only a result's `content` (the MCP spec's
//! backwards-compatibility rule asks servers to repeat structured content
//! as text for them), so by default the text carries everything the model
//! needs to use the result and make the next call. It is a denser
//! rendering than the serialized JSON, chosen after measuring both
//! (issue 17; figures in `docs/tools.md`):
//!
//! - **line 1, the header**: the structured content as compact JSON, every
//!   field under its structured name — `revision`, `next_cursor`,
//!   `has_more`, `truncated_reason`… are exactly what the next call takes,
//!   and JSON quoting makes them unambiguous whatever a file name holds;
//! - **the body**, after it: the one bulk field of the result (file lines,
//!   matches, entries, a diff, an agent's response) in its natural text
//!   form instead of one escaped JSON string — file text verbatim, matches
//!   as ripgrep prints them (`path:line:text`, context `path-line-text`),
//!   entries one per line. In the header that field holds a short note
//!   saying what follows and in which format.
//!
//! The body is what makes the difference: JSON escapes every newline,
//! quote and backslash of the file and repeats each match's field names,
//! while the body is the text a model would see from `cat` or `rg`. Text
//! that a model copies into the next call (an `old_text` to edit) is then
//! byte for byte what the file holds, with no unescaping to get wrong.
//! All metadata comes *before* the file's text, so nothing in a file can
//! pose as it.
//!
//! `[server] text_content = "summary"` (`SERVERFS_TEXT_CONTENT=summary`)
//! sends a one-line summary instead, for deployments whose clients all
//! pass `structuredContent` to the model (no result is then sent twice).

use serde::Serialize;
use serde_json::Value;

/// What the text block carries: the whole result ([`TextContent::Full`],
/// the default) or the one-line summary; chosen by `[server]
/// text_content`.
pub use serverfs_config::TextContent;

/// A result's bulk field, rendered as text after the header.
#[derive(Debug)]
pub struct Body {
    /// The structured field the body stands for.
    pub field: &'static str,
    /// What the header shows in that field: what follows, in which form.
    pub note: String,
    /// The rendering.
    pub text: String,
}

/// How a result renders as its text block.
pub trait ModelText: Serialize {
    /// One short line for `text_content = "summary"`; never the payload.
    fn summary(&self) -> String;

    /// The bulk field as text, when the result has one.
    fn body(&self) -> Option<Body> {
        None
    }
}

/// The text block of `result`, whose structured content is `structured`
/// (the same value, serialized).
pub fn render<T: ModelText>(result: &T, structured: &mut Value, mode: TextContent) -> String {
    match mode {
        TextContent::Summary => result.summary(),
        TextContent::Full => {
            let body = result.body();
            let (Some(body), Value::Object(fields)) = (body, &mut *structured) else {
                return structured.to_string();
            };
            // The bulk value leaves the header for the note, and comes back
            // afterwards: the structured content is sent as it was.
            let bulk = fields.insert(body.field.to_owned(), Value::String(body.note));
            let mut text = structured.to_string();
            if let (Value::Object(fields), Some(bulk)) = (&mut *structured, bulk) {
                fields.insert(body.field.to_owned(), bulk);
            }
            text.push('\n');
            text.push_str(&body.text);
            text
        }
    }
}

/// A path as a line of a body shows it: as it is, unless a control
/// character (a tab, a newline in a file name) would break the line or the
/// columns; then JSON-quoted, escapes and all.
pub fn shown_path(path: &str) -> std::borrow::Cow<'_, str> {
    if path.chars().any(char::is_control) || path.starts_with('"') {
        std::borrow::Cow::Owned(Value::String(path.to_owned()).to_string())
    } else {
        std::borrow::Cow::Borrowed(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[derive(Serialize)]
    struct Page {
        path: String,
        content: String,
        next_cursor: Option<String>,
    }

    impl ModelText for Page {
        fn summary(&self) -> String {
            format!("{} page", self.path)
        }

        fn body(&self) -> Option<Body> {
            Some(Body {
                field: "content",
                note: "<below>".to_owned(),
                text: self.content.clone(),
            })
        }
    }

    #[test]
    fn full_text_is_a_json_header_then_the_body_and_the_structure_is_kept() {
        let page = Page {
            path: "a\"b.txt".to_owned(),
            content: "line \"one\"\n\tline two\n".to_owned(),
            next_cursor: Some("c1".to_owned()),
        };
        let mut structured = serde_json::to_value(&page).unwrap();
        let before = structured.clone();
        let text = render(&page, &mut structured, TextContent::Full);
        assert_eq!(
            text,
            "{\"path\":\"a\\\"b.txt\",\"content\":\"<below>\",\"next_cursor\":\"c1\"}\n\
             line \"one\"\n\tline two\n"
        );
        // Field order included: the bulk field goes back where it was.
        assert_eq!(structured.to_string(), before.to_string());
        assert_eq!(
            render(&page, &mut structured, TextContent::Summary),
            "a\"b.txt page"
        );
    }

    #[test]
    fn paths_with_control_characters_are_quoted() {
        assert_eq!(shown_path("src/main.rs"), "src/main.rs");
        assert_eq!(shown_path("a\tb"), "\"a\\tb\"");
        assert_eq!(shown_path("a\nb"), "\"a\\nb\"");
        assert_eq!(shown_path("\"q"), "\"\\\"q\"");
        assert_eq!(json!(shown_path("x")), json!("x"));
    }
}

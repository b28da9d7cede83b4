//! What a human or a model is shown of text an agent or a provider wrote:
//! every character that a terminal, a chat client or a form could act on
//! or hide is rendered visibly escaped, so what is approved is what is
//! shown (issue 27, item 6).
//!
//! A command holding `ESC [ 2 K`, a carriage return or U+202E (right-to-left
//! override) is displayed by a terminal as a different command; a
//! zero-width space makes two commands look alike. Such characters are
//! *hidden*: C0 controls except `\n` and `\t`, DEL, C1 controls, the line
//! and paragraph separators U+2028/U+2029, and every format character
//! (Unicode general category Cf: the bidirectional controls U+061C,
//! U+200E/F, U+202A–U+202E, U+2066–U+2069, the zero-width U+200B–U+200D,
//! U+2060–U+2064, U+FEFF, the soft hyphen U+00AD, tag characters…).
//! [`escape`] shows each as `\u{hex}` (lowercase, no leading zeros):
//! `rm\u{202e}txt.exe`, `echo ok\u{d}rm -rf x`.
//!
//! `\n` and `\t` stay as they are, deliberately: a multi-line command is
//! shown on several lines, which hides nothing (a line cannot be drawn
//! over another without a carriage return, which is escaped), and
//! escaping them would make every multi-line script and agent message
//! unreadable.
//!
//! # One function, applied twice
//!
//! Both processes link this crate, so there is one definition of what is
//! hidden and how it looks. The Bridge applies [`escape`] to every
//! approval, question and event payload an adapter hands it, after
//! redaction and before it is stored ([`escape_strings`]); `serverfs`
//! applies [`escape_if_hidden`] again to everything the Bridge returns
//! before it becomes a tool result, a form or a task message — the Bridge
//! is a separate process, and tasks stored before this rule existed hold
//! raw text.
//!
//! # Distinct inputs stay distinct
//!
//! A literal `\u{202e}` typed by an agent must not look like an escaped
//! U+202E. [`escape`] therefore doubles every backslash of a run that
//! stands right before `u{` or before a hidden character, so the output
//! decodes to exactly one input. Text without hidden characters and
//! without a backslash before `u{` is returned unchanged (no allocation).
//! Because the output never holds a hidden character, [`escape_if_hidden`]
//! leaves it alone: the second pass does not escape twice.
//!
//! Identifiers that a caller passes back verbatim (a field named `id` or
//! ending in `_id`/`_ids`: `option_id`, `request_id`…) are not escaped by
//! [`escape_strings`]; they are tokens, not text to read, and escaping
//! them would make the request unanswerable. A form shows an option's
//! label, never its id.

use std::borrow::Cow;

use serde_json::Value;

/// Format characters (Unicode 15.1 general category Cf) as inclusive
/// ranges: bidirectional controls, zero-width characters, the soft hyphen,
/// byte-order mark, interlinear annotations, tag characters…
const FORMAT_RANGES: &[(char, char)] = &[
    ('\u{ad}', '\u{ad}'),
    ('\u{600}', '\u{605}'),
    ('\u{61c}', '\u{61c}'),
    ('\u{6dd}', '\u{6dd}'),
    ('\u{70f}', '\u{70f}'),
    ('\u{890}', '\u{891}'),
    ('\u{8e2}', '\u{8e2}'),
    ('\u{180e}', '\u{180e}'),
    ('\u{200b}', '\u{200f}'),
    ('\u{202a}', '\u{202e}'),
    ('\u{2060}', '\u{2064}'),
    ('\u{2066}', '\u{206f}'),
    ('\u{feff}', '\u{feff}'),
    ('\u{fff9}', '\u{fffb}'),
    ('\u{110bd}', '\u{110bd}'),
    ('\u{110cd}', '\u{110cd}'),
    ('\u{13430}', '\u{1343f}'),
    ('\u{1bca0}', '\u{1bca3}'),
    ('\u{1d173}', '\u{1d17a}'),
    ('\u{e0001}', '\u{e0001}'),
    ('\u{e0020}', '\u{e007f}'),
];

/// Whether `c` is hidden: a control character other than `\n` and `\t`
/// (C0, DEL, C1), a line or paragraph separator, or a format character.
pub fn is_hidden(c: char) -> bool {
    if c == '\n' || c == '\t' {
        return false;
    }
    c.is_control()
        || c == '\u{2028}'
        || c == '\u{2029}'
        || FORMAT_RANGES
            .iter()
            .any(|&(low, high)| (low..=high).contains(&c))
}

/// `text` as it may be shown: every hidden character as `\u{hex}`, and the
/// backslashes of a run that stands before `u{` or a hidden character
/// doubled (see the module docs); anything else unchanged.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !needs_escape(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut backslashes = 0usize;
    for (at, c) in text.char_indices() {
        if c == '\\' {
            backslashes += 1;
            continue;
        }
        // A run of backslashes is doubled when what follows could read as
        // (or is) an escape; otherwise it is kept as it was.
        let escaped_next = is_hidden(c) || text[at..].starts_with("u{");
        let run = if escaped_next {
            2 * backslashes
        } else {
            backslashes
        };
        out.extend(std::iter::repeat_n('\\', run));
        backslashes = 0;
        if is_hidden(c) {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out.extend(std::iter::repeat_n('\\', backslashes));
    Cow::Owned(out)
}

/// [`escape`], but only for text that still holds a hidden character: the
/// defensive second pass over text that may have been escaped already
/// (then it holds none and is returned as it is).
pub fn escape_if_hidden(text: &str) -> Cow<'_, str> {
    if text.chars().any(is_hidden) {
        escape(text)
    } else {
        Cow::Borrowed(text)
    }
}

/// Whether [`escape`] changes `text`.
fn needs_escape(text: &str) -> bool {
    text.chars().any(is_hidden) || text.contains("\\u{")
}

/// Whether a field named `key` holds an identifier a caller passes back
/// verbatim (never escaped, see the module docs).
fn is_identifier(key: &str) -> bool {
    key == "id" || key.ends_with("_id") || key.ends_with("_ids")
}

/// Applies `escape` to every string in `value` (object keys excepted, and
/// the values of identifier fields).
pub fn escape_strings(value: &mut Value, escape: fn(&str) -> Cow<'_, str>) {
    match value {
        Value::String(text) => {
            let shown = match escape(text) {
                Cow::Owned(shown) => Some(shown),
                Cow::Borrowed(_) => None,
            };
            if let Some(shown) = shown {
                *text = shown;
            }
        }
        Value::Array(items) => {
            for item in items {
                escape_strings(item, escape);
            }
        }
        Value::Object(fields) => {
            for (key, field) in fields.iter_mut() {
                if !is_identifier(key) {
                    escape_strings(field, escape);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `value` with [`escape_strings`] applied through its JSON form: one rule
/// for every payload type, including fields added later.
///
/// # Errors
///
/// The value does not survive a JSON round trip (a type whose
/// `Deserialize` does not accept what its `Serialize` writes).
pub fn escaped<T: serde::Serialize + serde::de::DeserializeOwned>(
    value: &T,
    escape: fn(&str) -> Cow<'_, str>,
) -> Result<T, serde_json::Error> {
    let mut json = serde_json::to_value(value)?;
    escape_strings(&mut json, escape);
    serde_json::from_value(json)
}

#[cfg(test)]
#[path = "display_tests.rs"]
mod tests;

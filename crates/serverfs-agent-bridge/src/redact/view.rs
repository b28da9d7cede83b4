//! The decoded view of a text that redaction scans: the encoded forms of a
//! slash (and the JSON escapes that stand for a token boundary) turned into
//! what they mean, with a map back to the original bytes, so a path written
//! `%2Fsrv%2Fwork` or `\/srv\/work` is found like `/srv/work` while the text
//! around it is copied as it was.
//!
//! Decoded, one level deep:
//!
//! * `%2F` / `%2f` (percent-encoding) → `/`;
//! * a run of backslashes before `/` (`\/`, `\\/`: JSON and double JSON
//!   escaping) → `/`;
//! * a run of backslashes before `u002f` / `u002F` (a JSON `\u` escape) → `/`;
//! * a run of backslashes before `n`, `r` or `t` → a space, before `"` → `"`
//!   (JSON escapes of characters that end a path token, so a path after
//!   `\n` starts where it would after a newline).
//!
//! Every other character stands for itself. Only boundary characters and
//! `/` are ever decoded, so a path token of the view and its original
//! spelling have the same segments: redaction renders from the view without
//! changing a file name.

use std::borrow::Cow;

/// A decoded text and where each of its positions came from.
pub(super) struct View<'t> {
    text: Cow<'t, str>,
    /// `(view position, original position)` at every point where the
    /// distance between them changes, ascending; empty when nothing was
    /// decoded.
    shifts: Vec<(usize, usize)>,
    original_len: usize,
}

impl<'t> View<'t> {
    /// The view of `original`. Linear in its length.
    pub(super) fn new(original: &'t str) -> View<'t> {
        if !original.contains(['%', '\\']) {
            return View {
                text: Cow::Borrowed(original),
                shifts: Vec::new(),
                original_len: original.len(),
            };
        }
        let bytes = original.as_bytes();
        let mut text = String::with_capacity(original.len());
        let mut shifts = Vec::new();
        let mut at = 0;
        while at < original.len() {
            let (decoded, used) = decode_at(bytes, at);
            if let Some(decoded) = decoded {
                text.push(decoded);
                at += used;
                shifts.push((text.len(), at));
                continue;
            }
            // Not an encoded unit: copy up to the next candidate byte (past
            // a whole run of backslashes, so a long run is read once).
            let step = match bytes[at] {
                b'\\' => bytes[at..].iter().take_while(|b| **b == b'\\').count(),
                _ => original[at..].chars().next().map_or(1, char::len_utf8),
            };
            let next = original[at + step..]
                .find(['%', '\\'])
                .map_or(original.len(), |offset| at + step + offset);
            text.push_str(&original[at..next]);
            at = next;
        }
        View {
            text: Cow::Owned(text),
            shifts,
            original_len: original.len(),
        }
    }

    /// The decoded text.
    pub(super) fn text(&self) -> &str {
        &self.text
    }

    /// The original position of view position `at` (a character boundary
    /// of the view; its length maps to the original's).
    pub(super) fn original(&self, at: usize) -> usize {
        if at >= self.text.len() {
            return self.original_len;
        }
        let index = self.shifts.partition_point(|(view, _)| *view <= at);
        match index.checked_sub(1).and_then(|last| self.shifts.get(last)) {
            Some((view, original)) => original + (at - view),
            None => at,
        }
    }
}

/// The character the encoded unit at byte `at` stands for, and how many
/// bytes it takes; `(None, 0)` when no encoded unit starts there.
fn decode_at(bytes: &[u8], at: usize) -> (Option<char>, usize) {
    match bytes.get(at) {
        Some(b'%') => match bytes.get(at + 1..at + 3) {
            Some([b'2', b'F' | b'f']) => (Some('/'), 3),
            _ => (None, 0),
        },
        Some(b'\\') => {
            let run = bytes[at..].iter().take_while(|b| **b == b'\\').count();
            let after = at + run;
            match bytes.get(after) {
                Some(b'/') => (Some('/'), run + 1),
                Some(b'n' | b'r' | b't') => (Some(' '), run + 1),
                Some(b'"') => (Some('"'), run + 1),
                Some(b'u') => match bytes.get(after + 1..after + 5) {
                    Some([b'0', b'0', b'2', b'f' | b'F']) => (Some('/'), run + 5),
                    _ => (None, 0),
                },
                _ => (None, 0),
            }
        }
        _ => (None, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_slashes_and_maps_back() {
        let original = r#"a%2Fsrv\/work\\\/x\u002Fy\n"z"#;
        let view = View::new(original);
        assert_eq!(view.text(), "a/srv/work/x/y \"z");
        for (at, _) in view.text().char_indices() {
            let back = view.original(at);
            assert!(original.is_char_boundary(back), "{at} -> {back}");
        }
        assert_eq!(view.original(1), 1);
        assert_eq!(view.original(2), 4);
        assert_eq!(&original[view.original(6)..view.original(10)], "work");
        assert_eq!(view.original(view.text().len()), original.len());
    }

    #[test]
    fn leaves_everything_else() {
        for text in ["100% sure", "%2G", r"C:\dir\x", "%", "\\", "é%2", r"\u0041"] {
            assert_eq!(View::new(text).text(), text);
        }
    }
}

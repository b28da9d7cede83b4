//! `edit_text_file`: ordered exact-text replacements, all or nothing.

use std::io::Read;
use std::time::{Duration, Instant};

use rustix::fs::fstat;

use crate::{FsError, RelPath, Revision, Workdir};

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";
/// Unified diffs longer than this are cut (and flagged) so one edit of a
/// large file cannot produce an unbounded response.
pub const MAX_DIFF_BYTES: usize = 64 * 1024;
/// Time the diff algorithm may take before it settles for a coarser diff.
const DIFF_DEADLINE: Duration = Duration::from_millis(500);

/// One replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextEdit {
    /// Exact text to find (never a pattern).
    pub old_text: String,
    /// Replacement.
    pub new_text: String,
    /// How many non-overlapping occurrences must exist; all are replaced.
    pub expected_count: usize,
}

/// Limits of one edit call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EditLimits {
    /// Source file, result file and the sum of all edit texts, in bytes.
    pub max_write_bytes: u64,
    /// Edits per call.
    pub max_edits: usize,
}

/// What an edit did (or, for a dry run, would do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditOutcome {
    /// Number of edits applied.
    pub edits_applied: usize,
    /// On-disk size before (BOM included).
    pub bytes_before: u64,
    /// On-disk size after (BOM included).
    pub bytes_after: u64,
    /// Revision before.
    pub revision_before: Revision,
    /// Revision after; equal to `revision_before` for a dry run.
    pub revision: Revision,
    /// Unified diff of the change (line endings as in the file).
    pub diff: String,
    /// True when `diff` was cut at [`MAX_DIFF_BYTES`].
    pub diff_truncated: bool,
}

impl Workdir {
    /// Applies `edits` in order to the UTF-8 text file at `path` (whose
    /// revision must be `expected`) and publishes the result atomically,
    /// keeping its BOM, line endings, owner, mode and extended attributes.
    /// With `dry_run`, computes the same outcome and diff without writing.
    ///
    /// # Errors
    ///
    /// `TOO_MANY_EDITS`, `BINARY_CONTENT_NOT_ALLOWED`, `WRITE_TOO_LARGE`
    /// (checked before touching the file), then the type codes,
    /// `REVISION_CONFLICT`, `MULTIPLE_HARDLINKS_NOT_SUPPORTED`,
    /// `WRITE_TOO_LARGE` (file), `FILE_CHANGED_DURING_READ`, `BINARY_FILE`,
    /// `UNSUPPORTED_TEXT_ENCODING`, `EDIT_CONFLICT`, `WRITE_TOO_LARGE`
    /// (result), `METADATA_PRESERVATION_FAILED`, `REVISION_CONFLICT` (final
    /// check), `MUTATION_IO_ERROR`.
    pub fn edit_text(
        &self,
        path: &RelPath,
        expected: &str,
        edits: &[TextEdit],
        limits: EditLimits,
        dry_run: bool,
    ) -> Result<EditOutcome, FsError> {
        validate_edits(edits, limits)?;
        let target = self.open_for_replace(path, expected)?;
        let size = u64::try_from(target.stat.st_size).unwrap_or(0);
        if size > limits.max_write_bytes {
            return Err(FsError::WriteTooLarge {
                what: "file",
                limit: limits.max_write_bytes,
            });
        }
        let mut original = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        let file = std::fs::File::from(target.fd.try_clone().map_err(|e| FsError::MutationIo {
            reason: e.kind().to_string(),
        })?);
        file.take(limits.max_write_bytes + 1)
            .read_to_end(&mut original)
            .map_err(|e| FsError::MutationIo {
                reason: e.kind().to_string(),
            })?;
        let now = fstat(&target.fd).map_err(FsError::from_mutation_errno)?;
        if Revision::from_stat(&now) != target.revision_before {
            return Err(FsError::ChangedDuringRead);
        }
        let (bom, body) = match original.strip_prefix(UTF8_BOM) {
            Some(rest) => (UTF8_BOM, rest),
            None => (&b""[..], &original[..]),
        };
        if memchr::memchr(0, body).is_some() {
            return Err(FsError::BinaryFile);
        }
        let text = std::str::from_utf8(body).map_err(|_| FsError::InvalidUtf8)?;
        let edited = apply_edits(text, edits, limits.max_write_bytes)?;
        let mut result = Vec::with_capacity(bom.len() + edited.len());
        result.extend_from_slice(bom);
        result.extend_from_slice(edited.as_bytes());
        if result.len() as u64 > limits.max_write_bytes {
            return Err(FsError::WriteTooLarge {
                what: "edited file",
                limit: limits.max_write_bytes,
            });
        }
        let (diff, diff_truncated) = unified_diff(&path.as_string(), text, &edited);
        let revision = if dry_run {
            target.revision_before.clone()
        } else {
            target.publish(&result)?
        };
        Ok(EditOutcome {
            edits_applied: edits.len(),
            bytes_before: original.len() as u64,
            bytes_after: result.len() as u64,
            revision_before: target.revision_before.clone(),
            revision,
            diff,
            diff_truncated,
        })
    }
}

/// Checks the edit list itself, before any filesystem access.
fn validate_edits(edits: &[TextEdit], limits: EditLimits) -> Result<(), FsError> {
    if edits.len() > limits.max_edits {
        return Err(FsError::TooManyEdits {
            max: limits.max_edits,
        });
    }
    let mut total: u64 = 0;
    for edit in edits {
        if edit.old_text.contains('\0') || edit.new_text.contains('\0') {
            return Err(FsError::BinaryContent);
        }
        total += (edit.old_text.len() + edit.new_text.len()) as u64;
    }
    if total > limits.max_write_bytes {
        return Err(FsError::WriteTooLarge {
            what: "edit texts",
            limit: limits.max_write_bytes,
        });
    }
    Ok(())
}

/// Applies each edit to the result of the previous ones. An empty
/// `old_text` only fills an empty file (with `expected_count` 1).
pub fn apply_edits(text: &str, edits: &[TextEdit], max_bytes: u64) -> Result<String, FsError> {
    let too_large = || FsError::WriteTooLarge {
        what: "edited file",
        limit: max_bytes,
    };
    let mut current = text.to_owned();
    for (i, edit) in edits.iter().enumerate() {
        let conflict = |reason: String| FsError::EditConflict {
            index: i + 1,
            reason,
        };
        if edit.expected_count == 0 {
            return Err(conflict("expected_count must be at least 1".to_owned()));
        }
        if edit.old_text.is_empty() {
            if current.is_empty() && edit.expected_count == 1 {
                if edit.new_text.len() as u64 > max_bytes {
                    return Err(too_large());
                }
                current = edit.new_text.clone();
                continue;
            }
            return Err(conflict(
                "old_text may be empty only to fill an empty file".to_owned(),
            ));
        }
        let found = current.matches(edit.old_text.as_str()).count();
        if found != edit.expected_count {
            return Err(conflict(format!(
                "expected {} occurrence(s) of old_text, found {found}",
                edit.expected_count
            )));
        }
        // Size the result before building it: a short old_text replaced
        // many times by a long new_text could otherwise ask for gigabytes.
        let grown = (current.len() as u64)
            .checked_sub(found as u64 * edit.old_text.len() as u64)
            .and_then(|rest| {
                rest.checked_add((found as u64).checked_mul(edit.new_text.len() as u64)?)
            });
        if grown.is_none_or(|size| size > max_bytes) {
            return Err(too_large());
        }
        current = current.replace(edit.old_text.as_str(), &edit.new_text);
    }
    Ok(current)
}

/// A unified diff with three lines of context, cut at [`MAX_DIFF_BYTES`]
/// on a line boundary. The diff algorithm is quadratic in the worst case,
/// so it gets a deadline, after which it settles for a coarser (still
/// correct) diff: the mutation lock and writer lease are held meanwhile.
fn unified_diff(name: &str, before: &str, after: &str) -> (String, bool) {
    let diff = similar::TextDiff::configure()
        .deadline(Instant::now() + DIFF_DEADLINE)
        .diff_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string();
    if diff.len() <= MAX_DIFF_BYTES {
        return (diff, false);
    }
    // Cut at the last newline within the bound (searching bytes: the bound
    // itself may fall inside a multi-byte character).
    let cut = memchr::memrchr(b'\n', &diff.as_bytes()[..MAX_DIFF_BYTES]).map_or(0, |i| i + 1);
    (diff[..cut].to_owned(), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old: &str, new: &str, count: usize) -> TextEdit {
        TextEdit {
            old_text: old.to_owned(),
            new_text: new.to_owned(),
            expected_count: count,
        }
    }

    #[test]
    fn edits_apply_in_order_and_replace_all() {
        let out = apply_edits(
            "a-b-a\r\n",
            &[edit("a", "x", 2), edit("x-b", "y", 1)],
            1 << 20,
        )
        .unwrap();
        assert_eq!(out, "y-x\r\n");
    }

    #[test]
    fn counts_must_match() {
        let err = apply_edits("aaa", &[edit("aa", "b", 2)], 1 << 20).unwrap_err();
        assert_eq!(
            err,
            FsError::EditConflict {
                index: 1,
                reason: "expected 2 occurrence(s) of old_text, found 1".to_owned()
            }
        );
        let err =
            apply_edits("abc", &[edit("b", "B", 1), edit("zzz", "", 1)], 1 << 20).unwrap_err();
        assert!(matches!(err, FsError::EditConflict { index: 2, .. }));
    }

    #[test]
    fn empty_old_text_only_fills_an_empty_file() {
        assert_eq!(
            apply_edits("", &[edit("", "new\n", 1)], 1 << 20).unwrap(),
            "new\n"
        );
        assert!(apply_edits("x", &[edit("", "new", 1)], 1 << 20).is_err());
        assert!(apply_edits("", &[edit("", "new", 2)], 1 << 20).is_err());
    }

    #[test]
    fn growth_is_refused_before_it_is_built() {
        let text = "a".repeat(1 << 20);
        // A million one-byte matches each replaced by a kilobyte would need
        // a gigabyte; the size is computed first and refused.
        let huge = edit("a", &"b".repeat(1000), 1 << 20);
        let err = apply_edits(&text, &[huge], 1 << 20).unwrap_err();
        assert_eq!(err.code(), serverfs_protocol::ErrorCode::WriteTooLarge);
        // Exactly at the limit is fine.
        let same = edit("a", "b", 1 << 20);
        assert_eq!(apply_edits(&text, &[same], 1 << 20).unwrap().len(), 1 << 20);
    }

    #[test]
    fn long_non_ascii_diffs_are_cut_on_a_line_boundary() {
        // Multi-byte characters everywhere: the cut point falls inside one.
        let before: String = (0..3_000)
            .map(|i| format!("{i:04} {}\n", "é".repeat(20)))
            .collect();
        let after = before.replace('é', "è");
        let full = similar::TextDiff::from_lines(before.as_str(), after.as_str())
            .unified_diff()
            .context_radius(3)
            .header("a/f.txt", "b/f.txt")
            .to_string();
        assert!(
            !full.is_char_boundary(MAX_DIFF_BYTES),
            "the bound must fall inside a character"
        );
        let (diff, truncated) = unified_diff("f.txt", &before, &after);
        assert!(truncated);
        assert!(diff.len() <= MAX_DIFF_BYTES && diff.ends_with('\n'));
    }

    #[test]
    fn diff_is_bounded() {
        // Long lines, few of them: enough diff text, little diff work.
        let before: String = (0..1_500)
            .map(|i| format!("line {i:04} {}\n", "x".repeat(40)))
            .collect();
        let after = before.replace("line", "LINE");
        let (diff, truncated) = unified_diff("f.txt", &before, &after);
        assert!(truncated);
        assert!(diff.len() <= MAX_DIFF_BYTES);
        assert!(diff.starts_with("--- a/f.txt\n+++ b/f.txt\n"));
        assert!(diff.ends_with('\n'));
    }
}

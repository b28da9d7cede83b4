//! Bounds on what a provider hands the core: an event that outgrows the
//! store's event cap (64 KiB by default) would be dropped whole, so
//! adapters cut provider text and structures to fit first, on character
//! boundaries, and say that they did.

use serde_json::Value;

/// Longest string field of an item event, in bytes: with an item's other
/// fields it stays well under the core's event cap.
pub const MAX_ITEM_TEXT_BYTES: usize = 16 * 1024;

/// Largest structured field of an item event (a list of file changes, a
/// tool input), as compact JSON; a larger one is replaced by a summary.
pub const MAX_ITEM_JSON_BYTES: usize = 32 * 1024;

/// The longest prefix of `text` of at most `max` bytes that ends on a
/// character boundary.
pub fn utf8_prefix(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The length of `value` as compact JSON, without building the text.
pub fn json_len(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing a `Value` to a writer that never fails cannot fail; were it
    // to, the count so far is a lower bound, never a panic.
    let _lower_bound = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// `value` if it fits [`MAX_ITEM_JSON_BYTES`], else `{"count", "truncated":
/// true}` with the number of its entries; `true` when it was replaced.
pub fn bounded_json(value: &Value) -> (Value, bool) {
    if json_len(value) <= MAX_ITEM_JSON_BYTES {
        return (value.clone(), false);
    }
    let count = match value {
        Value::Array(list) => list.len(),
        Value::Object(map) => map.len(),
        _ => 1,
    };
    (
        serde_json::json!({ "count": count, "truncated": true }),
        true,
    )
}

/// `text` cut to [`MAX_ITEM_TEXT_BYTES`]; `true` when it was cut.
pub fn bounded_text(text: &str) -> (&str, bool) {
    let kept = utf8_prefix(text, MAX_ITEM_TEXT_BYTES);
    (kept, kept.len() < text.len())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn prefixes_end_on_character_boundaries() {
        assert_eq!(utf8_prefix("héllo", 2), "h");
        assert_eq!(utf8_prefix("héllo", 3), "hé");
        assert_eq!(utf8_prefix("abc", 10), "abc");
        let long = "é".repeat(MAX_ITEM_TEXT_BYTES);
        let (kept, cut) = bounded_text(&long);
        assert!(cut && kept.len() <= MAX_ITEM_TEXT_BYTES && kept.chars().all(|c| c == 'é'));
        assert_eq!(bounded_text("short"), ("short", false));
    }

    #[test]
    fn json_is_measured_and_large_structures_summarised() {
        let value = json!({ "a": [1, 2], "b": "x" });
        assert_eq!(json_len(&value), value.to_string().len());
        assert_eq!(bounded_json(&value), (value.clone(), false));
        let big = Value::Array(vec![json!("0123456789"); 4000]);
        assert_eq!(
            bounded_json(&big),
            (json!({ "count": 4000, "truncated": true }), true)
        );
    }
}

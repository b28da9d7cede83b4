use proptest::prelude::*;
use serde_json::json;

use super::*;

/// The inverse of [`escape`], for the tests: a run of `k` backslashes
/// before `u{` is `k / 2` backslashes, then an escape when `k` is odd or
/// a literal `u{` when it is even; every other character is itself.
fn unescape(shown: &str) -> Option<String> {
    let chars: Vec<char> = shown.chars().collect();
    let mut out = String::new();
    let mut at = 0;
    while at < chars.len() {
        if chars[at] != '\\' {
            out.push(chars[at]);
            at += 1;
            continue;
        }
        let start = at;
        while at < chars.len() && chars[at] == '\\' {
            at += 1;
        }
        let run = at - start;
        let before_escape = chars.get(at) == Some(&'u') && chars.get(at + 1) == Some(&'{');
        if !before_escape {
            out.extend(std::iter::repeat_n('\\', run));
            continue;
        }
        out.extend(std::iter::repeat_n('\\', run / 2));
        if run % 2 == 1 {
            let close = chars[at..].iter().position(|&c| c == '}')? + at;
            let hex: String = chars[at + 2..close].iter().collect();
            out.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
            at = close + 1;
        }
    }
    Some(out)
}

/// The corpus of the issue: terminal escapes, a carriage return hiding a
/// second command, the right-to-left override, zero-width and other
/// format characters, C1 controls and separators.
const CORPUS: &[&str] = &[
    "echo safe\u{1b}[2K\u{1b}[1Grm -rf ~",
    "echo ok\rrm -rf ~",
    "cat \u{202e}txt.exe",
    "rm\u{200b} -rf\u{200d} x\u{feff}",
    "a\u{85}b\u{9b}31mc\u{7f}d",
    "first\u{2028}second\u{2029}third",
    "\u{2066}isolated\u{2069} \u{61c}\u{200e}\u{200f}\u{ad}",
    "tag\u{e0041}\u{e007f}",
    "\u{0}nul\u{7}bell\u{8}backspace",
];

#[test]
fn the_corpus_is_shown_with_every_hidden_character_escaped() {
    let shown: Vec<String> = CORPUS.iter().map(|s| escape(s).into_owned()).collect();
    assert_eq!(
        shown,
        [
            "echo safe\\u{1b}[2K\\u{1b}[1Grm -rf ~",
            "echo ok\\u{d}rm -rf ~",
            "cat \\u{202e}txt.exe",
            "rm\\u{200b} -rf\\u{200d} x\\u{feff}",
            "a\\u{85}b\\u{9b}31mc\\u{7f}d",
            "first\\u{2028}second\\u{2029}third",
            "\\u{2066}isolated\\u{2069} \\u{61c}\\u{200e}\\u{200f}\\u{ad}",
            "tag\\u{e0041}\\u{e007f}",
            "\\u{0}nul\\u{7}bell\\u{8}backspace",
        ]
    );
}

#[test]
fn newlines_tabs_and_printable_text_are_kept_and_a_literal_escape_is_marked() {
    let plain = "grep -n 'a\\|b' *.rs\n\tcd ~/x && ls C:\\dir\\ ; echo \"√ é 中文 🙂\"";
    assert!(matches!(escape(plain), Cow::Borrowed(_)));
    assert_eq!(escape("say \\u{202e}"), "say \\\\u{202e}");
    assert_eq!(escape("say \\\u{202e}"), "say \\\\\\u{202e}");
    assert_ne!(escape("say \\u{202e}"), escape("say \u{202e}"));
    // The second pass leaves the first pass's output as it is.
    let once = escape("x\\u{1}\u{1b}").into_owned();
    assert_eq!(escape_if_hidden(&once), once);
}

#[test]
fn strings_are_escaped_except_identifiers() {
    let mut value = json!({
        "command_display": "ls\u{202e}",
        "option_id": "opt\u{202e}",
        "options": [{"option_id": "o\u{1b}", "label": "Allow\u{1b}[8m"}],
        "selected_option_ids": ["a\u{200b}"],
        "id": "model\u{200b}",
        "nested": {"text": ["x\ry"]},
        "n": 1,
    });
    escape_strings(&mut value, escape);
    assert_eq!(
        value,
        json!({
            "command_display": "ls\\u{202e}",
            "option_id": "opt\u{202e}",
            "options": [{"option_id": "o\u{1b}", "label": "Allow\\u{1b}[8m"}],
            "selected_option_ids": ["a\u{200b}"],
            "id": "model\u{200b}",
            "nested": {"text": ["x\\u{d}y"]},
            "n": 1,
        })
    );
}

/// Characters that make the property interesting: backslashes, `u`, `{`,
/// `}`, hex digits, hidden characters of every kind, and plain text.
fn tricky() -> impl Strategy<Value = String> {
    let alphabet = prop::sample::select(vec![
        '\\',
        'u',
        '{',
        '}',
        'a',
        '2',
        'e',
        ' ',
        '\n',
        '\t',
        '\r',
        '\u{1b}',
        '\u{0}',
        '\u{7f}',
        '\u{85}',
        '\u{9f}',
        '\u{ad}',
        '\u{200b}',
        '\u{200e}',
        '\u{202e}',
        '\u{2028}',
        '\u{2066}',
        '\u{feff}',
        '\u{e0041}',
        'é',
        '中',
    ]);
    prop::collection::vec(alphabet, 0..24).prop_map(|chars| chars.into_iter().collect::<String>())
}

proptest! {
    #![proptest_config(ProptestConfig {
        // PROPTEST_CASES (the soak's long profile) raises it.
        cases: ProptestConfig::default().cases.max(512),
        ..ProptestConfig::default()
    })]

    #[test]
    fn property_no_hidden_character_survives_and_the_input_is_recoverable(text in tricky()) {
        let shown = escape(&text);
        prop_assert!(!shown.chars().any(is_hidden), "{shown:?}");
        prop_assert_eq!(unescape(&shown), Some(text.clone()));
        prop_assert_eq!(escape_if_hidden(&shown), shown.clone());
    }

    #[test]
    fn property_distinct_inputs_look_distinct(a in tricky(), b in tricky()) {
        prop_assume!(a != b);
        prop_assert_ne!(escape(&a), escape(&b));
    }

    #[test]
    fn property_printable_text_is_unchanged(text in "[ -~\u{a0}-\u{ac}\u{ae}-\u{1ff}\n\t]{0,40}") {
        prop_assume!(!text.contains("\\u{"));
        prop_assert_eq!(escape(&text), text.as_str());
    }

    #[test]
    fn property_any_string_comes_out_without_hidden_characters(text in any::<String>()) {
        prop_assert!(!escape(&text).chars().any(is_hidden));
        prop_assert!(!escape_if_hidden(&text).chars().any(is_hidden));
    }
}

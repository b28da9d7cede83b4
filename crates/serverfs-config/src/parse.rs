//! The value rules of the environment adapter (spec §2.2).
//!
//! Upstream deliberately mixes strict and lenient parsing: settings that
//! widen access or size budgets are strict (a typo aborts startup), while
//! a few tuning knobs and the Bridge master switch are lenient and fall back
//! towards the safe default. Each function here is one of those rules.

use crate::error::ConfigError;

const TRUE_WORDS: [&str; 4] = ["true", "1", "yes", "on"];
const FALSE_WORDS: [&str; 4] = ["false", "0", "no", "off"];

/// Strict boolean: trimmed and case-insensitive `true|1|yes|on` or
/// `false|0|no|off`; absent or empty means "not set" (`None`); anything else
/// is an error naming `key`.
pub(crate) fn strict_bool(key: &str, raw: Option<&str>) -> Result<Option<bool>, ConfigError> {
    let Some(text) = raw.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    let lower = text.to_ascii_lowercase();
    if TRUE_WORDS.contains(&lower.as_str()) {
        Ok(Some(true))
    } else if FALSE_WORDS.contains(&lower.as_str()) {
        Ok(Some(false))
    } else {
        Err(ConfigError::InvalidValue {
            key: key.to_owned(),
            expected: "a boolean (true, false, 1, 0, yes, no, on or off)",
            got: raw.unwrap_or_default().to_owned(),
        })
    }
}

/// Lenient boolean: true only for `1|true|yes|on` (trimmed, any case);
/// anything else, garbage included, is false. Used for switches that must
/// fail towards "off".
pub(crate) fn lenient_bool(raw: Option<&str>) -> bool {
    raw.map(|t| t.trim().to_ascii_lowercase())
        .is_some_and(|t| TRUE_WORDS.contains(&t.as_str()))
}

/// Strict positive integer: absent or empty means "not set"; a non-integer,
/// zero or a negative number is an error naming `key`.
pub(crate) fn strict_int(key: &str, raw: Option<&str>) -> Result<Option<i64>, ConfigError> {
    strict_integer(key, raw, false)
}

/// Strict non-negative integer: as [`strict_int`], but zero is accepted
/// (a duration where 0 means "do not wait").
pub(crate) fn strict_uint(key: &str, raw: Option<&str>) -> Result<Option<i64>, ConfigError> {
    strict_integer(key, raw, true)
}

fn strict_integer(
    key: &str,
    raw: Option<&str>,
    zero_allowed: bool,
) -> Result<Option<i64>, ConfigError> {
    let Some(text) = raw.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    let invalid = |expected| ConfigError::InvalidValue {
        key: key.to_owned(),
        expected,
        got: raw.unwrap_or_default().to_owned(),
    };
    let (kind, kind_max) = if zero_allowed {
        (
            "a non-negative integer",
            "a non-negative integer of at most 9223372036854775807",
        )
    } else {
        (
            "a positive integer",
            "a positive integer of at most 9223372036854775807",
        )
    };
    if !is_integer_syntax(text) {
        return Err(invalid(kind));
    }
    match text.parse::<i64>() {
        Ok(value) if value > 0 || (zero_allowed && value == 0) => Ok(Some(value)),
        Ok(_) => Err(invalid(kind)),
        Err(_) => Err(invalid(kind_max)),
    }
}

/// Lenient positive integer: absent, empty, unparsable or `<= 0` gives
/// `None`, and the caller uses the default.
pub(crate) fn lenient_int(raw: Option<&str>) -> Option<i64> {
    let text = raw?.trim();
    if !is_integer_syntax(text) {
        return None;
    }
    text.parse::<i64>().ok().filter(|v| *v > 0)
}

/// Lenient positive float (seconds in upstream's variables): absent, empty,
/// unparsable, non-finite or `<= 0` gives `None`.
pub(crate) fn lenient_float(raw: Option<&str>) -> Option<f64> {
    let value = raw?.trim().parse::<f64>().ok()?;
    (value.is_finite() && value > 0.0).then_some(value)
}

/// Strict positive decimal number (seconds in the Bridge's variables):
/// absent or empty means "not set"; anything but `+?digits[.digits]` or
/// `+?.digits` (no exponent, `inf` or `nan`), zero or a negative number is
/// an error naming `key`. Bounds are checked by validation.
pub(crate) fn strict_float(key: &str, raw: Option<&str>) -> Result<Option<f64>, ConfigError> {
    let Some(text) = raw.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    let unsigned = text.strip_prefix('+').unwrap_or(text);
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let digits = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    // Rust's float parser also takes `1e3`, `inf` and `NaN`; a variable
    // holding one of those is far more likely a mistake than a duration.
    let syntax_ok = digits(whole)
        && digits(fraction)
        && !(whole.is_empty() && fraction.is_empty())
        && !unsigned.ends_with('.');
    match unsigned.parse::<f64>() {
        Ok(value) if syntax_ok && value > 0.0 && value.is_finite() => Ok(Some(value)),
        Ok(_) | Err(_) => Err(ConfigError::InvalidValue {
            key: key.to_owned(),
            expected: "a positive number of seconds, such as 10 or 2.5",
            got: raw.unwrap_or_default().to_owned(),
        }),
    }
}

/// Seconds to whole milliseconds, rounding to nearest; saturates on huge
/// values, which the bounds check then rejects with the variable's name.
pub(crate) fn seconds_to_ms(seconds: f64) -> i64 {
    // `as` from f64 saturates (and the value is finite and positive here).
    (seconds * 1000.0).round() as i64
}

/// Comma-separated list: items trimmed, empty items dropped.
pub(crate) fn list(raw: Option<&str>) -> Vec<String> {
    raw.unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Strict comma-separated list (variable names in the Bridge's
/// variables): absent, empty or blank means "not set"; items are trimmed,
/// and an empty item (`A,,B`, a trailing comma) is an error naming `key`
/// rather than dropped, since it most likely marks a name lost in editing.
/// The items themselves are checked by validation.
pub(crate) fn strict_list(
    key: &str,
    raw: Option<&str>,
) -> Result<Option<Vec<String>>, ConfigError> {
    let Some(text) = raw.filter(|t| !t.trim().is_empty()) else {
        return Ok(None);
    };
    let items: Vec<String> = text.split(',').map(|item| item.trim().to_owned()).collect();
    if items.iter().any(String::is_empty) {
        return Err(ConfigError::InvalidValue {
            key: key.to_owned(),
            expected: "a comma-separated list without empty items",
            got: text.to_owned(),
        });
    }
    Ok(Some(items))
}

/// `+?[0-9]+`, the integer syntax accepted in variables (no underscores,
/// no exponent, no radix prefix).
fn is_integer_syntax(text: &str) -> bool {
    let digits = text.strip_prefix('+').unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_bool_accepts_both_word_sets_in_any_case_and_spacing() {
        for word in ["true", "TRUE", " Yes ", "1", "on", "On"] {
            assert_eq!(strict_bool("K", Some(word)), Ok(Some(true)), "{word:?}");
        }
        for word in ["false", "False", " no", "0", "off", "OFF "] {
            assert_eq!(strict_bool("K", Some(word)), Ok(Some(false)), "{word:?}");
        }
        assert_eq!(strict_bool("K", None), Ok(None));
        assert_eq!(strict_bool("K", Some("")), Ok(None));
        assert_eq!(strict_bool("K", Some("   ")), Ok(None));
    }

    #[test]
    fn strict_bool_rejects_anything_else_naming_the_key() {
        for word in ["y", "2", "enabled", "tru", "yes please"] {
            let err = strict_bool("WORKDIR_01_READ_ONLY", Some(word)).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "WORKDIR_01_READ_ONLY: expected a boolean (true, false, 1, 0, yes, no, on or off), got {word:?}"
                )
            );
        }
    }

    #[test]
    fn lenient_bool_is_true_only_for_the_true_words() {
        for word in ["1", "true", "YES", " on "] {
            assert!(lenient_bool(Some(word)), "{word:?}");
        }
        for word in ["0", "false", "", "garbage", "2", "y"] {
            assert!(!lenient_bool(Some(word)), "{word:?}");
        }
        assert!(!lenient_bool(None));
    }

    #[test]
    fn strict_int_rules() {
        assert_eq!(strict_int("K", Some("42")), Ok(Some(42)));
        assert_eq!(strict_int("K", Some(" +7 ")), Ok(Some(7)));
        assert_eq!(strict_int("K", Some("")), Ok(None));
        assert_eq!(strict_int("K", None), Ok(None));
        let err = strict_int("WORKDIR_03_MAX_READ_BYTES", Some("abc")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "WORKDIR_03_MAX_READ_BYTES: expected a positive integer, got \"abc\""
        );
        for bad in ["0", "-5", "1.5", "1e3", "0x10", "1_000", "12a", "+", "- 1"] {
            assert!(strict_int("K", Some(bad)).is_err(), "{bad:?} accepted");
        }
        let huge = strict_int("K", Some("99999999999999999999")).unwrap_err();
        assert!(
            huge.to_string().contains("at most 9223372036854775807"),
            "{huge}"
        );
    }

    #[test]
    fn strict_uint_accepts_zero_and_nothing_negative() {
        assert_eq!(strict_uint("K", Some("0")), Ok(Some(0)));
        assert_eq!(strict_uint("K", Some(" +0 ")), Ok(Some(0)));
        assert_eq!(strict_uint("K", Some("15")), Ok(Some(15)));
        assert_eq!(strict_uint("K", Some(" ")), Ok(None));
        assert_eq!(strict_uint("K", None), Ok(None));
        let err = strict_uint("SERVERFS_HTTP_SHUTDOWN_GRACE_MS", Some("-1")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "SERVERFS_HTTP_SHUTDOWN_GRACE_MS: expected a non-negative integer, got \"-1\""
        );
        for bad in ["1.5", "ten", "1e3", "-0"] {
            assert!(strict_uint("K", Some(bad)).is_err(), "{bad:?} accepted");
        }
        let huge = strict_uint("K", Some("99999999999999999999")).unwrap_err();
        assert!(
            huge.to_string().contains("at most 9223372036854775807"),
            "{huge}"
        );
    }

    #[test]
    fn lenient_int_falls_back_silently() {
        assert_eq!(lenient_int(Some("10")), Some(10));
        assert_eq!(lenient_int(Some(" 10 ")), Some(10));
        for bad in ["", "0", "-1", "abc", "1.5", "99999999999999999999"] {
            assert_eq!(lenient_int(Some(bad)), None, "{bad:?}");
        }
        assert_eq!(lenient_int(None), None);
    }

    #[test]
    fn lenient_float_falls_back_silently() {
        assert_eq!(lenient_float(Some("2.5")), Some(2.5));
        assert_eq!(lenient_float(Some(" 15 ")), Some(15.0));
        for bad in ["", "0", "-1", "abc", "inf", "NaN", "0.0"] {
            assert_eq!(lenient_float(Some(bad)), None, "{bad:?}");
        }
        assert_eq!(seconds_to_ms(2.5), 2500);
        assert_eq!(seconds_to_ms(0.0004), 0);
        assert_eq!(seconds_to_ms(1e300), i64::MAX);
    }

    #[test]
    fn strict_float_accepts_plain_decimals_only() {
        assert_eq!(strict_float("K", Some("2.5")), Ok(Some(2.5)));
        assert_eq!(strict_float("K", Some(" 10 ")), Ok(Some(10.0)));
        assert_eq!(strict_float("K", Some("+.5")), Ok(Some(0.5)));
        assert_eq!(strict_float("K", Some("0.001")), Ok(Some(0.001)));
        assert_eq!(strict_float("K", Some(" ")), Ok(None));
        assert_eq!(strict_float("K", None), Ok(None));
        let err = strict_float("SERVERFS_CODEX_REQUEST_TIMEOUT_SECONDS", Some("soon")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "SERVERFS_CODEX_REQUEST_TIMEOUT_SECONDS: expected a positive number of seconds, \
             such as 10 or 2.5, got \"soon\""
        );
        for bad in [
            "0", "0.0", "-1", "-0.5", "1e3", "inf", "NaN", "1.", ".", "+", "1.2.3", "1_0", "10s",
            "0x10", "- 1",
        ] {
            assert!(strict_float("K", Some(bad)).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn strict_list_trims_and_refuses_empty_items() {
        assert_eq!(
            strict_list("K", Some(" A, b_2 ,C")),
            Ok(Some(vec!["A".to_owned(), "b_2".to_owned(), "C".to_owned()]))
        );
        assert_eq!(strict_list("K", Some("A")), Ok(Some(vec!["A".to_owned()])));
        assert_eq!(strict_list("K", Some("")), Ok(None));
        assert_eq!(strict_list("K", Some("  ")), Ok(None));
        assert_eq!(strict_list("K", None), Ok(None));
        for bad in ["A,,B", "A,", ",A", " , ", "A, ,B", ","] {
            assert_eq!(
                strict_list("SERVERFS_CLAUDE_ENV_PASSTHROUGH", Some(bad))
                    .unwrap_err()
                    .to_string(),
                format!(
                    "SERVERFS_CLAUDE_ENV_PASSTHROUGH: expected a comma-separated list \
                     without empty items, got {bad:?}"
                ),
            );
        }
    }

    #[test]
    fn list_trims_and_drops_empty_items() {
        assert_eq!(list(Some(" a, b ,,c ,")), vec!["a", "b", "c"]);
        assert_eq!(list(Some("")), Vec::<String>::new());
        assert_eq!(list(Some(" , ")), Vec::<String>::new());
        assert_eq!(list(None), Vec::<String>::new());
    }
}

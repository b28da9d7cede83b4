//! RFC 3339 timestamps without a date-time dependency.

/// Formats seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (UTC,
/// whole seconds, always 20 characters for years 0000–9999).
pub fn rfc3339_seconds(epoch_seconds: i64) -> String {
    let days = epoch_seconds.div_euclid(86_400);
    let secs_of_day = epoch_seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute, second) = (
        secs_of_day / 3600,
        secs_of_day % 3600 / 60,
        secs_of_day % 60,
    );
    if !(0..=9999).contains(&year) {
        return format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z");
    }
    // Digits written in place: a listing formats one per entry, and the
    // formatting machinery was a sixth of `list_directory`'s time.
    let mut out = *b"0000-00-00T00:00:00Z";
    let mut put = |at: usize, width: usize, mut value: i64| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (value % 10) as u8;
            value /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, month);
    put(8, 2, day);
    put(11, 2, hour);
    put(14, 2, minute);
    put(17, 2, second);
    out.iter().map(|b| char::from(*b)).collect()
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day), by
/// counting 400-year eras of 146 097 days from 0000-03-01 (so that the leap
/// day is the last day of each counted year).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::rfc3339_seconds;

    #[test]
    fn known_instants() {
        assert_eq!(rfc3339_seconds(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_seconds(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_seconds(1_709_251_199), "2024-02-29T23:59:59Z");
        assert_eq!(rfc3339_seconds(1_798_675_200), "2026-12-31T00:00:00Z");
        assert_eq!(rfc3339_seconds(-1), "1969-12-31T23:59:59Z");
        assert_eq!(rfc3339_seconds(4_102_444_800), "2100-01-01T00:00:00Z");
        assert_eq!(rfc3339_seconds(253_402_300_799), "9999-12-31T23:59:59Z");
        // Outside four-digit years, the general formatting.
        assert_eq!(rfc3339_seconds(253_402_300_800), "10000-01-01T00:00:00Z");
        assert_eq!(rfc3339_seconds(-62_167_219_201), "-001-12-31T23:59:59Z");
    }
}

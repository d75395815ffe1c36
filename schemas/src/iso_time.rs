//! ISO-8601 timestamps as JavaScript writes them (`Date.prototype.toISOString`, UTC with
//! milliseconds), to and from unix milliseconds: pi session entries and Cursor bubbles
//! (`createdAt`) use this form.

/// `2026-11-22T06:59:00.123Z` for unix ms (UTC, as JavaScript's `toISOString`).
pub fn format_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    let (h, min, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    if y > 9999 {
        // Past the four digits the fixed layout has room for (year 10000 and on).
        return format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{:03}Z", ms % 1000);
    }
    // Digits written in place: the sinks write one per entry, and `format!` costs ten times more.
    let mut b = *b"0000-00-00T00:00:00.000Z";
    for (range, v) in [(0..4, y), (5..7, m), (8..10, d), (11..13, h), (14..16, min), (17..19, s), (20..23, ms % 1000)] {
        let mut v = v;
        for c in b[range].iter_mut().rev() {
            *c = b'0' + (v % 10) as u8;
            v /= 10;
        }
    }
    // ASCII digits and separators: always UTF-8.
    std::str::from_utf8(&b).map(str::to_owned).unwrap_or_default()
}

/// Unix ms of `YYYY-MM-DDTHH:MM:SS[.fff…][Z|±HH:MM]` (the fraction is read to milliseconds; no
/// offset means UTC); `None` for anything else or a time before 1970.
pub fn parse_ms(s: &str) -> Option<u64> {
    let s = s.trim();
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u64> {
        let t = s.get(r)?;
        if t.bytes().all(|c| c.is_ascii_digit()) {
            t.parse().ok()
        } else {
            None
        }
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if b[16] != b':' || !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut millis = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let ms_digits = &frac[..digits.min(3)];
        millis = ms_digits.parse::<u64>().ok()? * 10u64.pow(3 - ms_digits.len() as u32);
        rest = &frac[digits..];
    }
    let offset_min: i64 = match rest {
        "" | "Z" | "z" => 0,
        o if o.len() == 6 && matches!(&o[..1], "+" | "-") && &o[3..4] == ":" => {
            let oh: i64 = o[1..3].parse().ok()?;
            let om: i64 = o[4..6].parse().ok()?;
            let v = oh * 60 + om;
            if o.starts_with('-') {
                -v
            } else {
                v
            }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d)?;
    let local = (days * 86_400 + h * 3600 + mi * 60 + sec) as i64;
    let utc = local.checked_sub(offset_min * 60)?;
    u64::try_from(utc).ok().map(|secs| secs * 1000 + millis)
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian calendar
/// (H. Hinnant's `civil_from_days`, for non-negative day counts).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// (year, month, day) → days since 1970-01-01 (H. Hinnant's `days_from_civil`); `None` before 1970.
fn days_from_civil(y: u64, m: u64, d: u64) -> Option<u64> {
    let y = if m <= 2 { y.checked_sub(1)? } else { y };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe).checked_sub(719_468)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_matches_javascript() {
        // new Date(0).toISOString(), new Date(1794300000040).toISOString(), a leap day.
        assert_eq!(format_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_ms(1_794_300_000_040), "2026-11-10T08:40:00.040Z");
        assert_eq!(format_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(format_ms(1_767_225_599_999), "2025-12-31T23:59:59.999Z");
    }

    proptest::proptest! {
        /// The digits written in place are what `format!` writes, to year 10000 and past it.
        #[test]
        fn format_writes_what_format_macro_writes(ms in proptest::prop_oneof![0u64..4_102_444_800_000, 0u64..u64::MAX / 4]) {
            let secs = ms / 1000;
            let (days, rem) = (secs / 86_400, secs % 86_400);
            let (y, m, d) = civil_from_days(days);
            let expected = format!(
                "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
                rem / 3600,
                (rem % 3600) / 60,
                rem % 60,
                ms % 1000
            );
            proptest::prop_assert_eq!(format_ms(ms), expected);
        }
    }

    #[test]
    fn parse_inverts_format() {
        for ms in [0, 1_794_300_000_040, 951_782_400_000, 1_767_225_599_999, 1_780_338_804_592] {
            assert_eq!(parse_ms(&format_ms(ms)), Some(ms), "{ms}");
        }
        // A real bubble's createdAt; fractions of other lengths; offsets.
        assert_eq!(parse_ms("2026-06-01T18:33:24.592Z"), Some(1_780_338_804_592));
        assert_eq!(parse_ms("2026-06-01T18:33:24.5Z"), Some(1_780_338_804_500));
        assert_eq!(parse_ms("2026-06-01T18:33:24.592123Z"), Some(1_780_338_804_592));
        assert_eq!(parse_ms("2026-06-01T18:33:24Z"), Some(1_780_338_804_000));
        assert_eq!(parse_ms("2026-06-01T20:33:24.592+02:00"), Some(1_780_338_804_592));
        for bad in ["", "yesterday", "2026-13-01T00:00:00Z", "2026-06-01T18:33:24.Z", "1969-12-31T23:59:59Z"] {
            assert_eq!(parse_ms(bad), None, "{bad}");
        }
    }
}

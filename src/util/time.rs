//! ISO-8601 UTC timestamps as milliseconds since the Unix epoch: the current time,
//! formatting (`YYYY-MM-DDTHH:MM:SS.mmmZ`, like `Date.prototype.toISOString`) and a strict
//! RFC 3339 parser (`Z` or `±HH:MM` offset, optional fraction).

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the epoch now.
pub fn now_ms() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
    }
}

// Howard Hinnant's days_from_civil / civil_from_days.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Largest accepted instant (year 9999), so every value formats as four-digit years.
const MAX_MS: i64 = 253_402_300_799_999;

/// Now as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn now_iso() -> String {
    format_iso(now_ms())
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` of `ms` (clamped to years 0000..=9999). Written digit by
/// digit: every service call stamps one or more (issue 13; `format!` cost ~4k
/// instructions a stamp).
pub fn format_iso(ms: i64) -> String {
    // Calls microseconds apart stamp the same millisecond: the last one's text is kept
    // per thread (a decision stamps two: the record's and the store's).
    thread_local! {
        static LAST: std::cell::Cell<(i64, [u8; 24])> = const { std::cell::Cell::new((i64::MIN, [0; 24])) };
    }
    let ms = ms.clamp(-62_167_219_200_000, MAX_MS);
    let (last_ms, last) = LAST.get();
    let out = if last_ms == ms {
        last
    } else {
        let out = iso_bytes(ms);
        LAST.set((ms, out));
        out
    };
    // Only ASCII digits and separators were written.
    String::from_utf8(out.to_vec()).unwrap_or_default()
}

/// [`format_iso`] of a clamped `ms`, as bytes.
fn iso_bytes(ms: i64) -> [u8; 24] {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let mut out = [0u8; 24];
    let fields: [(i64, usize, usize); 7] = [
        (y, 0, 4),
        (m, 5, 2),
        (d, 8, 2),
        (rem / 3_600_000, 11, 2),
        ((rem / 60_000) % 60, 14, 2),
        ((rem / 1000) % 60, 17, 2),
        (rem % 1000, 20, 3),
    ];
    for (mut v, at, width) in fields {
        for i in (at..at + width).rev() {
            // 0..=9 after the clamp: the cast cannot truncate.
            out[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    }
    for (at, sep) in [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
        (23, b'Z'),
    ] {
        out[at] = sep;
    }
    out
}

fn digits(s: &[u8], from: usize, n: usize) -> Option<i64> {
    let part = s.get(from..from.checked_add(n)?)?;
    let mut v: i64 = 0;
    for b in part {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(b - b'0');
    }
    Some(v)
}

/// The optional `.fff…` at `i`: its milliseconds (digits past the third ignored) and the
/// index after it; `None` for a dot without digits.
fn fraction_ms(s: &[u8], mut i: usize) -> Option<(i64, usize)> {
    let mut millis = 0;
    if s.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while let Some(b) = s.get(i).filter(|b| b.is_ascii_digit()) {
            if i - start < 3 {
                millis = millis * 10 + i64::from(b - b'0');
            }
            i += 1;
        }
        let n = i - start;
        if n == 0 {
            return None;
        }
        for _ in n..3 {
            millis *= 10;
        }
    }
    Some((millis, i))
}

/// The offset at `i` that ends the text: `Z` or `±hh:mm`, in minutes east of UTC.
fn offset_minutes(s: &[u8], i: usize) -> Option<i64> {
    match s.get(i) {
        Some(b'Z' | b'z') if i + 1 == s.len() => Some(0),
        Some(sign @ (b'+' | b'-')) if i + 6 == s.len() => {
            let oh = digits(s, i + 1, 2)?;
            let om = digits(s, i + 4, 2)?;
            if s.get(i + 3) != Some(&b':') || oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 60 + om;
            Some(if *sign == b'-' { -o } else { o })
        }
        _ => None,
    }
}

/// Parse an RFC 3339 timestamp (`2026-07-25T04:10:00Z`, `…00.123+02:00`) to epoch ms.
pub fn parse_iso(text: &str) -> Option<i64> {
    let s = text.as_bytes();
    if s.len() < 20 || s.len() > 40 {
        return None;
    }
    let year = digits(s, 0, 4)?;
    let month = digits(s, 5, 2)?;
    let day = digits(s, 8, 2)?;
    let hour = digits(s, 11, 2)?;
    let minute = digits(s, 14, 2)?;
    let second = digits(s, 17, 2)?;
    if s.get(4) != Some(&b'-')
        || s.get(7) != Some(&b'-')
        || !matches!(s.get(10), Some(b'T' | b't'))
        || s.get(13) != Some(&b':')
        || s.get(16) != Some(&b':')
    {
        return None;
    }
    if !(1..=12).contains(&month) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let max_day = *month_days.get(usize::try_from(month - 1).ok()?)?;
    if day < 1 || day > max_day {
        return None;
    }
    let (millis, i) = fraction_ms(s, 19)?;
    let offset_min = offset_minutes(s, i)?;
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second.min(59) - offset_min * 60;
    Some(secs * 1000 + millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_and_parse_round_trip() {
        assert_eq!(format_iso(0), "1970-01-01T00:00:00.000Z");
        let t = parse_iso("2026-07-25T04:10:00.000Z").unwrap();
        assert_eq!(format_iso(t), "2026-07-25T04:10:00.000Z");
        assert_eq!(parse_iso("2026-07-25T06:10:00+02:00"), Some(t));
        assert_eq!(parse_iso("2026-07-25T04:10:00.5Z"), Some(t + 500));
        assert_eq!(
            parse_iso("2024-02-29T00:00:00Z").map(format_iso).unwrap(),
            "2024-02-29T00:00:00.000Z"
        );
        for bad in [
            "2023-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-07-25 04:10:00Z",
            "x",
            "2026-07-25T04:10:00",
            "2026-07-25T04:10:00.Z",
        ] {
            assert_eq!(parse_iso(bad), None, "{bad}");
        }
        for ms in [-1i64, 1, 86_399_999, 951_782_400_000, 4_102_444_800_123] {
            assert_eq!(parse_iso(&format_iso(ms)), Some(ms));
        }
        // The kept last stamp: the same instant again, another, then the first again
        // (and the clamp applies before the comparison).
        for (ms, text) in [
            (1, "1970-01-01T00:00:00.001Z"),
            (1, "1970-01-01T00:00:00.001Z"),
            (2, "1970-01-01T00:00:00.002Z"),
            (1, "1970-01-01T00:00:00.001Z"),
            (i64::MAX, "9999-12-31T23:59:59.999Z"),
            (MAX_MS, "9999-12-31T23:59:59.999Z"),
        ] {
            assert_eq!(format_iso(ms), text, "{ms}");
        }
    }

    /// The digit-by-digit writer agrees with `format!` over the whole clamped range
    /// (both ends, and a seeded walk of instants between them).
    #[test]
    fn format_iso_writes_what_format_writes() {
        let by_format = |ms: i64| {
            let ms = ms.clamp(-62_167_219_200_000, MAX_MS);
            let rem = ms.rem_euclid(86_400_000);
            let (y, m, d) = civil_from_days(ms.div_euclid(86_400_000));
            format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                y,
                m,
                d,
                rem / 3_600_000,
                (rem / 60_000) % 60,
                (rem / 1000) % 60,
                rem % 1000
            )
        };
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut instants = vec![i64::MIN, -62_167_219_200_000, -1, 0, MAX_MS, i64::MAX];
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            instants.push((x % 316_000_000_000_000) as i64 - 62_200_000_000_000);
        }
        for ms in instants {
            assert_eq!(format_iso(ms), by_format(ms), "{ms}");
        }
    }
}

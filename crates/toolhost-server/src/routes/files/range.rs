//! The `Range` header of a download (RFC 9110 §14): one byte range, `bytes=a-b`, `bytes=a-` or
//! `bytes=-n`, read against the size of the file.

use std::ops::Range;

/// What a download answers with, given its `Range` header and the file's size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Wanted {
    /// The whole file (200): no range asked, a range unit other than `bytes` (which RFC 9110
    /// says to ignore), several ranges (this server sends them as the whole file), or an
    /// `If-Range` it cannot judge (it sends no validators).
    Whole,
    /// Part of the file (206): these bytes, never empty.
    Part(Range<u64>),
    /// No byte of the range is in the file (416).
    Unsatisfiable,
}

/// Reads `header` (the `Range` value, if any) for a file of `size` bytes. A malformed byte
/// range is an error saying what is wrong with it.
pub(super) fn wanted(header: Option<&str>, if_range: bool, size: u64) -> Result<Wanted, String> {
    let Some(header) = header else {
        return Ok(Wanted::Whole);
    };
    let Some((unit, set)) = header.split_once('=') else {
        return Err(format!(
            "the Range header {header:?} is not `bytes=FIRST-LAST`, `bytes=FIRST-` or `bytes=-COUNT`"
        ));
    };
    if !unit.trim().eq_ignore_ascii_case("bytes") || if_range {
        return Ok(Wanted::Whole);
    }
    let specs: Vec<&str> = set.split(',').map(str::trim).collect();
    let mut parsed = Vec::with_capacity(specs.len());
    for spec in &specs {
        parsed.push(
            spec_range(spec, size).map_err(|why| {
                format!("the Range header {header:?} is malformed: {spec:?} {why}")
            })?,
        );
    }
    if parsed.len() > 1 {
        return Ok(Wanted::Whole);
    }
    Ok(match parsed.pop().flatten() {
        Some(range) => Wanted::Part(range),
        None => Wanted::Unsatisfiable,
    })
}

/// One byte-range spec: `Ok(None)` when it is well formed but no byte of it is in the file.
fn spec_range(spec: &str, size: u64) -> Result<Option<Range<u64>>, &'static str> {
    let (first, last) = spec
        .split_once('-')
        .ok_or("has no `-` between its first and last byte")?;
    let number = |text: &str| -> Result<u64, &'static str> {
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err("has a position that is not a whole number");
        }
        text.parse().map_err(|_| "has a position too large to read")
    };
    if first.is_empty() {
        // `-n`: the last n bytes.
        let count = number(last)?;
        if count == 0 || size == 0 {
            return Ok(None);
        }
        return Ok(Some(size.saturating_sub(count)..size));
    }
    let first = number(first)?;
    let end = if last.is_empty() {
        size
    } else {
        let last = number(last)?;
        if last < first {
            return Err("ends before it starts");
        }
        last.saturating_add(1).min(size)
    };
    if first >= size {
        return Ok(None);
    }
    Ok(Some(first..end))
}

#[cfg(test)]
mod tests {
    use super::{wanted, Wanted};

    fn part(range: std::ops::Range<u64>) -> Result<Wanted, String> {
        Ok(Wanted::Part(range))
    }

    #[test]
    fn single_ranges_are_read_against_the_size() {
        assert_eq!(wanted(None, false, 10), Ok(Wanted::Whole));
        assert_eq!(wanted(Some("bytes=0-3"), false, 10), part(0..4));
        assert_eq!(wanted(Some("bytes=4-"), false, 10), part(4..10));
        assert_eq!(wanted(Some("bytes=-3"), false, 10), part(7..10));
        assert_eq!(wanted(Some("bytes=-30"), false, 10), part(0..10));
        assert_eq!(wanted(Some("bytes=8-100"), false, 10), part(8..10));
        assert_eq!(wanted(Some("BYTES = 1-1"), false, 10), part(1..2));
    }

    #[test]
    fn ranges_outside_the_file_are_unsatisfiable() {
        assert_eq!(
            wanted(Some("bytes=10-"), false, 10),
            Ok(Wanted::Unsatisfiable)
        );
        assert_eq!(
            wanted(Some("bytes=10-20"), false, 10),
            Ok(Wanted::Unsatisfiable)
        );
        assert_eq!(
            wanted(Some("bytes=-0"), false, 10),
            Ok(Wanted::Unsatisfiable)
        );
        assert_eq!(
            wanted(Some("bytes=0-"), false, 0),
            Ok(Wanted::Unsatisfiable)
        );
    }

    #[test]
    fn other_units_several_ranges_and_if_range_get_the_whole_file() {
        assert_eq!(wanted(Some("lines=1-2"), false, 10), Ok(Wanted::Whole));
        assert_eq!(wanted(Some("bytes=0-1,4-5"), false, 10), Ok(Wanted::Whole));
        assert_eq!(wanted(Some("bytes=0-1"), true, 10), Ok(Wanted::Whole));
    }

    #[test]
    fn malformed_ranges_say_what_is_wrong() {
        for (header, why) in [
            ("bytes", "is not `bytes=FIRST-LAST`"),
            ("bytes=5-2", "ends before it starts"),
            ("bytes=a-b", "not a whole number"),
            ("bytes=-", "not a whole number"),
            ("bytes=+1-2", "not a whole number"),
            ("bytes=7", "has no `-`"),
            ("bytes=0-1,x", "\"x\" has no `-`"),
            ("bytes=99999999999999999999-", "too large"),
        ] {
            let error = wanted(Some(header), false, 10).unwrap_err();
            assert!(error.contains(why), "{header}: {error}");
        }
    }
}

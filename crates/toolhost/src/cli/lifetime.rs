//! How long a token lives, as people write it: a whole number and a unit, `90d`, `12h`, `30m`.
//!
//! Used by `toolhost tokens create --expires-in` and the `[tokens]` table of `toolhost.toml`.

use serde::{Deserialize, Deserializer};
use std::fmt;
use toolhost_store::Millis;

/// The units a lifetime may be written in, with their length in milliseconds.
const UNITS: [(char, Millis); 5] = [
    ('s', 1_000),
    ('m', 60_000),
    ('h', 3_600_000),
    ('d', 86_400_000),
    ('w', 7 * 86_400_000),
];

/// The longest lifetime: 100 years, far beyond any sensible token and far below what the
/// store's clock can count.
const LONGEST: Millis = 36_500 * 86_400_000;

/// A token's lifetime, kept with the text it was written as (messages quote it back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lifetime {
    text: String,
    millis: Millis,
}

/// Why a text is not a lifetime; each reads as one sentence that quotes the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LifetimeError {
    /// Not a whole number followed by a known unit.
    NotADuration(String),
    /// Zero of some unit: a token that expires as it is made.
    Zero(String),
    /// More than [`LONGEST`].
    TooLong(String),
}

impl fmt::Display for LifetimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LifetimeError::NotADuration(text) => write!(
                f,
                "\"{text}\" is not a duration: write a whole number and a unit, s, m, h, d or w (seconds, minutes, hours, days, weeks), such as 90d, 12h or 30m"
            ),
            LifetimeError::Zero(text) => write!(
                f,
                "\"{text}\" is no time at all: a token must live longer than 0"
            ),
            LifetimeError::TooLong(text) => write!(
                f,
                "\"{text}\" is longer than the longest lifetime toolhost gives a token, 36500d (100 years)"
            ),
        }
    }
}

impl std::error::Error for LifetimeError {}

impl Lifetime {
    /// Reads `90d`, `12h`, `30m`, `45s` or `2w`.
    pub fn parse(text: &str) -> Result<Lifetime, LifetimeError> {
        let not_one = || LifetimeError::NotADuration(text.to_owned());
        let trimmed = text.trim();
        let unit = trimmed.chars().last().ok_or_else(not_one)?;
        let number = &trimmed[..trimmed.len() - unit.len_utf8()];
        let (_, unit_ms) = UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .ok_or_else(not_one)?;
        // Digits only: no sign, no fraction, no spaces inside.
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            return Err(not_one());
        }
        let count: u64 = number
            .parse()
            .map_err(|_| LifetimeError::TooLong(text.to_owned()))?;
        let millis = Millis::try_from(count)
            .ok()
            .and_then(|n| n.checked_mul(*unit_ms))
            .filter(|ms| *ms <= LONGEST)
            .ok_or_else(|| LifetimeError::TooLong(text.to_owned()))?;
        if millis == 0 {
            return Err(LifetimeError::Zero(text.to_owned()));
        }
        Ok(Lifetime {
            text: trimmed.to_owned(),
            millis,
        })
    }

    /// Its length in milliseconds (always more than 0).
    pub fn millis(&self) -> Millis {
        self.millis
    }
}

impl fmt::Display for Lifetime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Lifetime {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Lifetime::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_is_read() {
        let ms = |t: &str| Lifetime::parse(t).map(|l| l.millis());
        assert_eq!(ms("45s"), Ok(45_000));
        assert_eq!(ms("30m"), Ok(30 * 60_000));
        assert_eq!(ms("12h"), Ok(12 * 3_600_000));
        assert_eq!(ms("90d"), Ok(90 * 86_400_000));
        assert_eq!(ms("2w"), Ok(14 * 86_400_000));
        assert_eq!(ms("36500d"), Ok(LONGEST));
        assert_eq!(Lifetime::parse(" 90d ").unwrap().to_string(), "90d");
    }

    #[test]
    fn zero_nonsense_and_too_long_are_refused() {
        for zero in ["0d", "0s", "000h"] {
            assert_eq!(Lifetime::parse(zero), Err(LifetimeError::Zero(zero.into())));
        }
        for nonsense in [
            "", "d", "90", "90 d", "-5d", "+5d", "1.5h", "90x", "ninety d", "5dd", "٣d",
        ] {
            assert_eq!(
                Lifetime::parse(nonsense),
                Err(LifetimeError::NotADuration(nonsense.into())),
                "{nonsense:?}"
            );
        }
        for long in ["36501d", "99999999999999999999999w", "9223372036854775807s"] {
            assert_eq!(
                Lifetime::parse(long),
                Err(LifetimeError::TooLong(long.into()))
            );
        }
    }
}

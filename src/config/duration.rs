//! Go-style durations (`30s`, `2m`, `1h30m`, `500ms`), the form the Go mm's
//! agent files use for `watchdogTimeout` and `firstTokenTimeout`.

use std::time::Duration;

/// Why a duration does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("empty duration")]
    Empty,
    #[error("duration {0:?} needs a unit (ms, s, m, h)")]
    NoUnit(String),
    #[error("invalid duration {0:?}: expected a number")]
    NoNumber(String),
    #[error("invalid duration {0:?}")]
    BadNumber(String),
    #[error("invalid duration {text:?}: unknown unit {unit:?} (use ms, s, m or h)")]
    Unit { text: String, unit: String },
    #[error("duration {0:?} is too long (at most {max})", max = format(MAX))]
    TooLong(String),
}

/// Parses a Go duration string. A bare `0` is zero; anything else needs a unit.
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let s = text.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err(DurationError::Empty);
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| DurationError::NoUnit(text.to_string()))?;
        if num_len == 0 {
            return Err(DurationError::NoNumber(text.to_string()));
        }
        let value: f64 = rest[..num_len]
            .parse()
            .map_err(|_| DurationError::BadNumber(text.to_string()))?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            other => {
                return Err(DurationError::Unit {
                    text: text.to_string(),
                    unit: other.to_string(),
                });
            }
        };
        total += value * factor;
        rest = &rest[unit_len..];
    }
    // Go's own limit is about 290 years; anything past a day is a typo
    // here, and a number too big for a Duration must not panic.
    match Duration::try_from_secs_f64(total) {
        Ok(d) if d <= MAX => Ok(d),
        _ => Err(DurationError::TooLong(text.to_string())),
    }
}

/// The longest duration an agent file may give.
pub const MAX: Duration = Duration::from_secs(24 * 3600);

/// Formats a duration the way a user would write it back.
pub fn format(d: Duration) -> String {
    let secs = d.as_secs();
    if d.subsec_millis() != 0 && secs < 10 {
        return format!("{}ms", d.as_millis());
    }
    if secs >= 3600 && secs.is_multiple_of(3600) {
        format!("{}h", secs / 3600)
    } else if secs >= 60 && secs.is_multiple_of(60) {
        format!("{}m", secs / 60)
    } else {
        format!("{secs}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_durations() {
        assert_eq!(parse("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse("0").unwrap(), Duration::ZERO);
    }

    #[test]
    fn refuses_what_go_refuses() {
        for bad in [
            "",
            "30",
            "s",
            "3x",
            "1m-2s",
            "two minutes",
            "1e30h",
            "99999999999999999999999h",
            "25h",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should fail");
        }
    }

    #[test]
    fn formats_round_figures() {
        assert_eq!(format(Duration::from_secs(120)), "2m");
        assert_eq!(format(Duration::from_secs(45)), "45s");
        assert_eq!(format(Duration::from_millis(250)), "250ms");
    }
}

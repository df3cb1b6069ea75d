//! Human units in specs and on the command line: sizes (`64KiB`, `1MiB`, `4096`) and
//! durations (`500ms`, `20s`, `5m`). Specs store them as these strings and the types below
//! (de)serialize them, so a YAML file reads as a person wrote it.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

/// Parses `4096`, `64KiB`, `1MiB`, `2GiB`, `1kB`, `1MB` or `1GB` into bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size (examples: 4096, 64KiB, 1MiB)"))?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "kB" | "KB" => 1000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        u => {
            return Err(format!(
                "unknown size unit {u:?} in {s:?} (use B, KiB, MiB, GiB, kB, MB, GB)"
            ));
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?} is too large"))
}

/// Formats bytes in the largest binary unit that divides them exactly (`65536` → `64KiB`).
pub fn format_size(n: u64) -> String {
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if n != 0 && n.is_multiple_of(1 << shift) {
            return format!("{}{unit}", n >> shift);
        }
    }
    format!("{n}B")
}

/// Parses `500ms`, `20s`, `1.5s`, `5m`, `1h`, or plain seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (examples: 500ms, 20s, 5m, 1h)"))?;
    let secs = match unit.trim() {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        u => {
            return Err(format!(
                "unknown duration unit {u:?} in {s:?} (use ms, s, m, h)"
            ));
        }
    };
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| *d <= MAX_DURATION)
        .ok_or_else(|| format!("{s:?} is out of range (at most 7 days)"))
}

/// The longest duration a spec or flag takes (7 days): every phase of pqbench is seconds to
/// hours, and a deadline computed from a longer one (`Instant + d`) can overflow, which
/// panics.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);

fn within_max<E: de::Error>(d: Duration) -> Result<Dur, E> {
    if d <= MAX_DURATION {
        Ok(Dur(d))
    } else {
        Err(E::custom(format!(
            "{} is out of range (at most 7 days)",
            format_duration(d)
        )))
    }
}

/// Formats a duration as whole seconds, or milliseconds when it is not whole seconds.
pub fn format_duration(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.subsec_nanos().is_multiple_of(1_000_000) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

/// A byte count written as `64KiB` in specs (a bare integer is accepted too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Size(pub u64);

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_size(self.0))
    }
}

impl Serialize for Size {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_size(self.0))
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Size;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size such as 64KiB, 1MiB or 4096")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Size, E> {
                Ok(Size(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Size, E> {
                u64::try_from(v)
                    .map(Size)
                    .map_err(|_| E::custom("a size cannot be negative"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Size, E> {
                parse_size(v).map(Size).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// A duration written as `20s` or `500ms` in specs (a bare number means seconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Dur(pub Duration);

impl Dur {
    /// Whether it is zero (a default that a serialized spec leaves out).
    pub fn is_zero(&self) -> bool {
        self.0.is_zero()
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(self.0))
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl de::Visitor<'_> for V {
            type Value = Dur;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration such as 20s, 500ms or 5m")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Dur, E> {
                within_max(Duration::from_secs(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dur, E> {
                u64::try_from(v)
                    .map_err(|_| E::custom("a duration cannot be negative"))
                    .and_then(|s| within_max(Duration::from_secs(s)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Dur, E> {
                Duration::try_from_secs_f64(v)
                    .map_err(|_| E::custom("duration out of range"))
                    .and_then(within_max)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Dur, E> {
                parse_duration(v).map(Dur).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_round_trip() {
        for (s, n) in [
            ("64KiB", 65536),
            ("1MiB", 1 << 20),
            ("1000B", 1000),
            ("0B", 0),
        ] {
            assert_eq!(parse_size(s), Ok(n));
            assert_eq!(format_size(n), s);
        }
        assert_eq!(parse_size("1kB"), Ok(1000));
        assert!(parse_size("64 kib").is_err());
        assert!(parse_size("-1").is_err());
        for (s, ms) in [("20s", 20_000), ("500ms", 500), ("5m", 300_000)] {
            assert_eq!(parse_duration(s), Ok(Duration::from_millis(ms)));
        }
        assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(format_duration(Duration::from_secs(20)), "20s");
        let v: Vec<Size> = serde_json::from_str(r#"["64KiB", 4096]"#).expect("sizes");
        assert_eq!(v, [Size(65536), Size(4096)]);
        let d: Vec<Dur> = serde_json::from_str(r#"["20s", 5, 0.5]"#).expect("durs");
        assert_eq!(d[2], Dur(Duration::from_millis(500)));
        assert!(serde_json::from_str::<Size>(r#""64 parsecs""#).is_err());
    }
}

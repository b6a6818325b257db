//! The string formats kube-apiserver validates in custom resources (apiextensions-apiserver
//! restricts kube-openapi's registry to these); any other `format` is informational.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use base64::Engine;
use regex::Regex;

fn re(pattern: &str) -> Option<Regex> {
    Regex::new(pattern).ok()
}

static UUID: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID3: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID4: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"));
static UUID5: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"));
static DATE_TIME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:[Zz]|[+-]\d{2}:?\d{2})?$")
});
static DATE: LazyLock<Option<Regex>> = LazyLock::new(|| re(r"^(\d{4})-(\d{2})-(\d{2})$"));
static DURATION: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"^[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$|^0$|^\d+\s*(?:ns|us|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?)$",
    )
});
static HOSTNAME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"^(?:[a-zA-Z0-9\p{S}\p{L}](?:[a-zA-Z0-9\p{S}\p{L}-]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(?:\.[a-zA-Z0-9\p{S}\p{L}](?:[a-zA-Z0-9\p{S}\p{L}-]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)*$",
    )
});
static EMAIL: LazyLock<Option<Regex>> = LazyLock::new(|| re(r"^[^@\s<>]+@[^@\s<>]+$"));
static URI: LazyLock<Option<Regex>> = LazyLock::new(|| re(r"^(?:/[^\s]*|[a-zA-Z][a-zA-Z0-9+.-]*:[^\s]*)$"));
static MAC: LazyLock<Option<Regex>> = LazyLock::new(|| {
    re(
        r"^(?:[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){5}|[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){7}|[0-9a-fA-F]{2}(?:[:-][0-9a-fA-F]{2}){19}|[0-9a-fA-F]{4}(?:\.[0-9a-fA-F]{4}){2,9})$",
    )
});
static HEXCOLOR: LazyLock<Option<Regex>> = LazyLock::new(|| re(r"^#?(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGBCOLOR: LazyLock<Option<Regex>> =
    LazyLock::new(|| re(r"^rgb\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*\)$"));
static SSN: LazyLock<Option<Regex>> = LazyLock::new(|| re(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$"));
static BSON: LazyLock<Option<Regex>> = LazyLock::new(|| re(r"^[0-9a-fA-F]{24}$"));

fn matches(re: &LazyLock<Option<Regex>>, text: &str) -> bool {
    re.as_ref().is_none_or(|r| r.is_match(text))
}

fn valid_date(y: &str, m: &str, d: &str) -> bool {
    let (Ok(y), Ok(m), Ok(d)) = (y.parse::<u32>(), m.parse::<u32>(), d.parse::<u32>()) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// Whether `text` is valid for `format`; `None` when the format is not validated.
pub fn check(format: &str, text: &str) -> Option<bool> {
    Some(match format {
        "date-time" | "datetime" => DATE_TIME
            .as_ref()
            .and_then(|r| r.captures(text))
            .is_some_and(|c| {
                let num = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u32>().ok());
                valid_date(&c[1], &c[2], &c[3])
                    && num(4).is_some_and(|h| h < 24)
                    && num(5).is_some_and(|m| m < 60)
                    && num(6).is_none_or(|s| s < 61)
            }),
        "date" => DATE
            .as_ref()
            .and_then(|r| r.captures(text))
            .is_some_and(|c| valid_date(&c[1], &c[2], &c[3])),
        "byte" => base64::engine::general_purpose::STANDARD.decode(text).is_ok(),
        "uuid" => matches(&UUID, text),
        "uuid3" => matches(&UUID3, text),
        "uuid4" => matches(&UUID4, text),
        "uuid5" => matches(&UUID5, text),
        "ipv4" => text.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => text.parse::<Ipv6Addr>().is_ok(),
        "cidr" => text.split_once('/').is_some_and(|(ip, bits)| {
            let Ok(bits) = bits.parse::<u8>() else {
                return false;
            };
            (ip.parse::<Ipv4Addr>().is_ok() && bits <= 32) || (ip.parse::<Ipv6Addr>().is_ok() && bits <= 128)
        }),
        "mac" => matches(&MAC, text),
        "hostname" => text.len() <= 255 && matches(&HOSTNAME, text),
        "email" => matches(&EMAIL, text),
        "uri" => matches(&URI, text),
        "duration" => matches(&DURATION, text),
        "hexcolor" => matches(&HEXCOLOR, text),
        "rgbcolor" => RGBCOLOR
            .as_ref()
            .and_then(|r| r.captures(text))
            .is_some_and(|c| (1..=3).all(|i| c[i].parse::<u16>().is_ok_and(|v| v <= 255))),
        "ssn" => matches(&SSN, text),
        "bsonobjectid" => matches(&BSON, text),
        "password" => true,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn formats() {
        assert_eq!(check("date-time", "2024-01-02T03:04:05Z"), Some(true));
        assert_eq!(check("date-time", "2024-02-30T03:04:05Z"), Some(false));
        assert_eq!(check("date-time", "yesterday"), Some(false));
        assert_eq!(check("byte", "aGVsbG8="), Some(true));
        assert_eq!(check("byte", "not base64!"), Some(false));
        assert_eq!(check("int32", "x"), None);
        assert_eq!(check("ipv4", "10.0.0.1"), Some(true));
        assert_eq!(check("cidr", "10.0.0.0/33"), Some(false));
        assert_eq!(check("duration", "1h30m"), Some(true));
        assert_eq!(check("uuid", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"), Some(true));
    }
}

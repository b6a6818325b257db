//! The length of a MessagePack value, read from its markers alone: a glance
//! ([`super::Store::glance`]) passes over a cached object's metadata without serde, which
//! would visit every string in it and check it as UTF-8 (half a glance's instructions).

/// The length in bytes of the MessagePack value at the start of `bytes`; `None` when it
/// is cut short or holds the reserved marker (`0xc1`).
pub(super) fn value_len(bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    let mut values: u64 = 1;
    while values > 0 {
        values -= 1;
        let (skip, nested) = lengths(bytes, at)?;
        at = at.checked_add(skip)?;
        values = values.checked_add(nested)?;
    }
    (at <= bytes.len()).then_some(at)
}

/// For the value whose marker is at `at`: the bytes it takes before any nested values
/// (marker, length fields, payload), and how many nested values follow it.
fn lengths(bytes: &[u8], at: usize) -> Option<(usize, u64)> {
    let marker = *bytes.get(at)?;
    let length = |width: usize| -> Option<usize> {
        let field = bytes.get(at + 1..at + 1 + width)?;
        Some(
            field
                .iter()
                .fold(0usize, |length, byte| length << 8 | usize::from(*byte)),
        )
    };
    let count = |width: usize| length(width).map(|n| n as u64);
    Some(match marker {
        // positive and negative fixint, nil, false, true
        0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (1, 0),
        0x80..=0x8f => (1, 2 * u64::from(marker & 0x0f)),
        0x90..=0x9f => (1, u64::from(marker & 0x0f)),
        0xa0..=0xbf => (1 + usize::from(marker & 0x1f), 0),
        // bin and str with a 1-, 2- or 4-byte length
        0xc4 | 0xd9 => (2 + length(1)?, 0),
        0xc5 | 0xda => (3 + length(2)?, 0),
        0xc6 | 0xdb => (5 + length(4)?, 0),
        // ext with a 1-, 2- or 4-byte length, then its type byte
        0xc7 => (3 + length(1)?, 0),
        0xc8 => (4 + length(2)?, 0),
        0xc9 => (6 + length(4)?, 0),
        // float 32, 64; uint and int 8, 16, 32, 64
        0xca => (5, 0),
        0xcb => (9, 0),
        0xcc | 0xd0 => (2, 0),
        0xcd | 0xd1 => (3, 0),
        0xce | 0xd2 => (5, 0),
        0xcf | 0xd3 => (9, 0),
        // fixext 1, 2, 4, 8, 16: type byte and data
        0xd4 => (3, 0),
        0xd5 => (4, 0),
        0xd6 => (6, 0),
        0xd7 => (10, 0),
        0xd8 => (18, 0),
        // array and map with a 2- or 4-byte count
        0xdc => (3, count(2)?),
        0xdd => (5, count(4)?),
        0xde => (3, 2 * count(2)?),
        0xdf => (5, 2 * count(4)?),
        0xc1 => return None,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;
    use crate::testing::fixtures::any_json;

    fn encoded(value: &impl serde::Serialize) -> Vec<u8> {
        rmp_serde::to_vec_named(value).unwrap_or_default()
    }

    #[test]
    fn every_kind_of_value_is_measured_and_a_cut_one_is_not() {
        let long = "x".repeat(70_000);
        let values = [
            json!(null),
            json!(true),
            json!(7),
            json!(-3),
            json!(300),
            json!(-70_000),
            json!(u64::MAX),
            json!(1.5),
            json!("short"),
            json!("a".repeat(40)),
            json!("b".repeat(300)),
            json!(long),
            json!([1, [2, [3, {"a": "b"}]], {}]),
            json!((0..20).collect::<Vec<_>>()),
            json!((0..70_000).collect::<Vec<_>>()),
            json!({"metadata": {"name": "m", "labels": {"a": "b"}}, "spec": {"replicas": 3}}),
            Value::Object((0..20).map(|i| (i.to_string(), json!(i))).collect()),
        ];
        for value in values {
            let mut bytes = encoded(&value);
            let length = bytes.len();
            bytes.extend_from_slice(&[0x91, 0x01]);
            assert_eq!(value_len(&bytes), Some(length), "{value:.60}");
            assert_eq!(value_len(&bytes[..length - 1]), None, "{value:.60} cut short");
        }
        assert_eq!(value_len(&[0xc1]), None, "the reserved marker");
        assert_eq!(value_len(&[]), None);
    }

    #[test]
    fn bin_and_ext_values_are_measured() {
        for (bytes, length) in [
            (&[0xc4, 2, 7, 7][..], 4),
            (&[0xc5, 0, 2, 7, 7][..], 5),
            (&[0xc6, 0, 0, 0, 2, 7, 7][..], 7),
            (&[0xd4, 1, 2][..], 3),
            (&[0xd8, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0][..], 18),
            (&[0xc7, 2, 9, 1, 2][..], 5),
            (&[0xc8, 0, 1, 9, 1][..], 5),
        ] {
            assert_eq!(value_len(bytes), Some(length), "{bytes:x?}");
        }
    }

    proptest! {
        #[test]
        fn a_value_is_as_long_as_its_encoding(value in any_json(20), tail in prop::collection::vec(any::<u8>(), 0..4)) {
            let mut bytes = encoded(&value);
            let length = bytes.len();
            bytes.extend_from_slice(&tail);
            prop_assert_eq!(value_len(&bytes), Some(length));
        }
    }
}

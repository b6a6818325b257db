//! The JSON text of the value a deserializer stands at, cut from serde_json's input rather
//! than decoded: what [`super::RawObject`] keeps of a provider payload, and what the
//! caches' lenient decoding (`runtime::lenient`) decodes an object from.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, Error as _, MapAccess, Unexpected, Visitor};

/// serde_json's name for a raw value: asked for a newtype struct of this name, its
/// deserializers hand over the value's JSON text rather than decoding it (the protocol of
/// `serde_json::value::RawValue`, whose own decoding accepts nothing else).
const RAW_VALUE: &str = "$serde_json::private::RawValue";

/// The JSON text of the next value. serde_json's deserializers hand over the text they
/// read (borrowed from the input where they can; a `Value` prints itself). Any other
/// deserializer, or one that buffered the value first (serde does that to a watch event
/// whose `object` comes before its `type`), has the value streamed into compact JSON, in
/// its own key order.
pub(crate) fn json_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Cow<'de, str>, D::Error> {
    deserializer.deserialize_newtype_struct(RAW_VALUE, TextVisitor)
}

/// [`json_text`] as a seed: the text of a map's value or a sequence's element.
pub(crate) struct JsonText;

impl<'de> DeserializeSeed<'de> for JsonText {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        json_text(deserializer)
    }
}

/// `deserializer`'s next value streamed into compact JSON text, without building a tree.
pub(crate) fn transcoded<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let mut text = Vec::with_capacity(1024);
    serde_transcode::transcode(deserializer, &mut serde_json::Serializer::new(&mut text))
        .map_err(D::Error::custom)?;
    String::from_utf8(text).map_err(D::Error::custom)
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    /// serde_json's raw value: one entry, the protocol's name, then the text.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        match map.next_key_seed(TextSeed)? {
            Some(key) if key == RAW_VALUE => map.next_value_seed(TextSeed),
            _ => Err(A::Error::invalid_type(Unexpected::Map, &self)),
        }
    }

    /// Any other deserializer: the value streamed into text.
    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        transcoded(deserializer).map(Cow::Owned)
    }
}

/// A string, borrowed from the input when the deserializer allows it.
struct TextSeed;

impl<'de> DeserializeSeed<'de> for TextSeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for TextSeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON text")
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(text))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(text.to_owned()))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(text))
    }
}

/// Whether serde_json, parsing valid JSON `text` and printing it compactly, gives `text`
/// back byte for byte: no whitespace between tokens, no escape sequence in a string, and
/// no number but an integer of at most 18 digits (a fraction, an exponent, `-0` or a
/// wider integer may print otherwise). Strict on purpose: a `false` only costs the caller
/// a transcoding. An API server prints objects this way unless a string holds a quote, a
/// backslash, a control character or one of `<`, `>` and `&` (which Go escapes).
pub(crate) fn prints_back_unchanged(text: &str) -> bool {
    let mut in_string = false;
    let mut number = Number::None;
    for byte in text.bytes() {
        if in_string {
            match byte {
                b'"' => in_string = false,
                b'\\' => return false,
                _ => {}
            }
            continue;
        }
        number = match (number, byte) {
            (_, b' ' | b'\t' | b'\n' | b'\r' | b'.' | b'+') => return false,
            (Number::None, b'-') => Number::Minus,
            (Number::None, b'0') => Number::Zero,
            (Number::None | Number::Minus, b'1'..=b'9') => Number::Digits(1),
            (Number::Digits(digits), b'0'..=b'9') if digits < 18 => Number::Digits(digits + 1),
            (Number::Minus | Number::Zero | Number::Digits(_), _)
                if byte.is_ascii_digit() || matches!(byte, b'-' | b'e' | b'E') =>
            {
                return false;
            }
            (_, b'"') => {
                in_string = true;
                Number::None
            }
            _ => Number::None,
        };
    }
    !in_string
}

/// Where [`prints_back_unchanged`] stands in a number.
#[derive(Clone, Copy)]
enum Number {
    /// Not in a number.
    None,
    /// After a leading minus.
    Minus,
    /// After a leading zero (a whole number `0`, or the start of a fraction).
    Zero,
    /// After this many digits.
    Digits(u8),
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn the_text_is_borrowed_from_a_json_input_and_printed_from_anything_else() -> TestResult {
        let json = r#"{"b": [1, 2.5], "a": "x"}"#;
        let text = json_text(&mut serde_json::Deserializer::from_str(json))?;
        assert!(matches!(text, Cow::Borrowed(t) if t == json), "{text:?}");
        let value: serde_json::Value = serde_json::from_str(json)?;
        let printed = json_text(value.clone())?;
        assert_eq!(serde_json::from_str::<serde_json::Value>(&printed)?, value);
        let Text(text) = serde_saphyr::from_str("b: [1, 2.5]\na: x\n")?;
        assert_eq!(
            text, r#"{"b":[1,2.5],"a":"x"}"#,
            "streamed in the input's key order"
        );
        Ok(())
    }

    /// A value's text, from whatever deserializer.
    struct Text(String);

    impl<'de> serde::Deserialize<'de> for Text {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            json_text(deserializer).map(|text| Self(text.into_owned()))
        }
    }

    #[test]
    fn what_prints_back_unchanged() {
        for same in [
            r#"{}"#,
            r#"{"a":[1,-2,0,true,false,null,"x y","é<&>"],"b":{"c":123456789012345678}}"#,
            r#"{"a":-123456789012345678,"e":"1.5e3"}"#,
            r#"[0,[],{}]"#,
        ] {
            assert!(prints_back_unchanged(same), "{same}");
        }
        for changed in [
            r#"{"a": 1}"#,
            "{\"a\":1}\n",
            r#"{"a":"\u003c"}"#,
            r#"{"a":"\"\\"}"#,
            r#"{"a":1.0}"#,
            r#"{"a":1e3}"#,
            r#"{"a":1E3}"#,
            r#"{"a":-0}"#,
            r#"{"a":0.5}"#,
            r#"{"a":1234567890123456789}"#,
            r#"{"a":-1234567890123456789}"#,
        ] {
            assert!(!prints_back_unchanged(changed), "{changed}");
        }
    }
}

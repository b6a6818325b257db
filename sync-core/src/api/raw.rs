//! Opaque JSON objects kept as compact text.
//!
//! `providerSpec.value` and `providerStatus` are arbitrary provider payloads the sync
//! controllers carry but do not interpret. As a `serde_json::Value` tree each costs
//! kilobytes of small allocations per cached object; as compact JSON text it costs its
//! length. Unknown fields are preserved byte for byte; a hook parses it into the
//! provider's own type when it needs to ([`RawObject::parse`]).

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{DeserializeOwned, Deserializer, Error as _};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::json_text::{json_text, prints_back_unchanged, transcoded};

/// A JSON object held as compact text.
#[derive(Clone, PartialEq, Eq)]
pub struct RawObject(Box<str>);

impl RawObject {
    /// The object's compact JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Parses the object into a provider's type.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.0)
    }

    /// The object as a `serde_json::Value`.
    pub fn to_value(&self) -> Value {
        // The text was produced from a JSON object, so it always parses.
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }

    /// From a JSON object; anything else is an error.
    pub fn from_value(value: &Value) -> Result<Self, serde_json::Error> {
        if !value.is_object() {
            return Err(serde_json::Error::custom(format!(
                "expected a JSON object, got {value}"
            )));
        }
        Ok(Self(serde_json::to_string(value)?.into_boxed_str()))
    }
}

impl Default for RawObject {
    fn default() -> Self {
        Self("{}".into())
    }
}

impl fmt::Debug for RawObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// In a human-readable format (JSON, YAML) the object; in a binary one (the caches'
/// MessagePack, `runtime::store`) its compact JSON text as one string, which is copied
/// rather than parsed and printed again on every cache write and read.
impl Serialize for RawObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !serializer.is_human_readable() {
            return serializer.serialize_str(&self.0);
        }
        // Streamed from the text, so that any serializer (JSON, YAML) writes an object,
        // without building a tree first.
        let mut text = serde_json::Deserializer::from_str(&self.0);
        serde_transcode::Transcoder::new(&mut text).serialize(serializer)
    }
}

/// Kept as compact JSON text, in the input's order (an API server sends object keys
/// sorted, as a `Value` would print them), without building a tree first: every list
/// decodes a Machine's providerSpec. serde_json's input is cut as it is when serde_json
/// would print it back unchanged (an API server's compact JSON, most of the time), and
/// streamed into compact text otherwise. From a binary format, the text `serialize` wrote
/// there.
impl<'de> Deserialize<'de> for RawObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if !deserializer.is_human_readable() {
            // What `serialize` wrote in a binary format: the compact text itself.
            let text = String::deserialize(deserializer)?;
            if !text.starts_with('{') {
                return Err(D::Error::custom(format!(
                    "expected a JSON object's text, got {text}"
                )));
            }
            return Ok(Self(text.into_boxed_str()));
        }
        let text = json_text(deserializer)?;
        let text = if prints_back_unchanged(&text) {
            text.into_owned()
        } else {
            transcoded(&mut serde_json::Deserializer::from_str(&text)).map_err(D::Error::custom)?
        };
        if !text.starts_with('{') {
            return Err(D::Error::custom(format!("expected a JSON object, got {text}")));
        }
        Ok(Self(text.into_boxed_str()))
    }
}

impl JsonSchema for RawObject {
    fn schema_name() -> Cow<'static, str> {
        "RawObject".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        super::schema::preserve_unknown_object(generator)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::testing::fixtures::any_json;

    #[test]
    fn keeps_unknown_fields_and_round_trips() {
        let json = r#"{"kind":"AWSMachineProviderConfig","future":{"field":[1,2]},"ami":{"id":"ami-1"}}"#;
        let raw: RawObject = serde_json::from_str(json).unwrap_or_default();
        assert_eq!(
            raw.to_value(),
            serde_json::from_str::<Value>(json).unwrap_or_default()
        );
        let again: RawObject =
            serde_json::from_str(&serde_json::to_string(&raw).unwrap_or_default()).unwrap_or_default();
        assert_eq!(again, raw);
        #[derive(Deserialize)]
        struct Ami {
            id: String,
        }
        #[derive(Deserialize)]
        struct Provider {
            ami: Ami,
        }
        assert_eq!(
            raw.parse::<Provider>().map(|p| p.ami.id).ok().as_deref(),
            Some("ami-1")
        );
    }

    #[test]
    fn decodes_to_compact_text_in_the_input_order() {
        let raw: RawObject =
            serde_json::from_str(r#"{ "b": [1, 2.5, {"d": null}], "a": "x\"y" }"#).unwrap_or_default();
        assert_eq!(raw.as_str(), r#"{"b":[1,2.5,{"d":null}],"a":"x\"y"}"#);
        let from_yaml: RawObject = serde_saphyr::from_str("a: 1\nb: [x]\n").unwrap_or_default();
        assert_eq!(from_yaml.as_str(), r#"{"a":1,"b":["x"]}"#);
    }

    /// The text an input gives is the text a full transcoding gives, whether it was cut
    /// as it came or transcoded: escapes, whitespace, floats, `-0` and integers of any width.
    #[test]
    fn cut_text_is_what_a_transcoding_prints() -> Result<(), serde_json::Error> {
        for json in [
            r#"{"a":"\u003c\u0026\u003e","b":"\/","c":"\u00e9"}"#,
            r#"{"a":-0,"b":1E3,"c":1.50,"d":123456789012345678901234,"e":-9223372036854775808}"#,
            r#"{"a":123456789012345678,"b":1234567890123456789,"c":[0,-1,true,false,null]}"#,
            "{\"a\" :\t{\"b\":\r\n[ ]}}",
        ] {
            assert_transcoded(json)?;
        }
        Ok(())
    }

    fn assert_transcoded(json: &str) -> Result<(), serde_json::Error> {
        let raw: RawObject = serde_json::from_str(json)?;
        let transcoded = transcoded(&mut serde_json::Deserializer::from_str(json))?;
        assert_eq!(raw.as_str(), transcoded, "{json}");
        Ok(())
    }

    proptest! {
        #[test]
        fn any_object_cut_or_transcoded_alike(value in any_json(6), pretty in any::<bool>()) {
            let object = serde_json::json!({ "v": value });
            let json = if pretty {
                serde_json::to_string_pretty(&object)
            } else {
                serde_json::to_string(&object)
            };
            prop_assert!(json.is_ok());
            prop_assert!(assert_transcoded(&json.unwrap_or_default()).is_ok());
        }
    }

    #[test]
    fn only_objects_are_accepted() {
        assert!(serde_json::from_str::<RawObject>("[1]").is_err());
        assert!(serde_json::from_str::<RawObject>("\"x\"").is_err());
        assert!(serde_json::from_value::<RawObject>(serde_json::json!({"a": 1})).is_ok());
    }

    #[test]
    fn a_binary_format_carries_the_text_and_reads_it_back() -> Result<(), Box<dyn std::error::Error>> {
        let raw: RawObject = serde_json::from_str(r#"{"b":[1,2.5],"a":{"c":"<&>"}}"#)?;
        let packed = rmp_serde::to_vec_named(&raw)?;
        assert_eq!(rmp_serde::from_slice::<String>(&packed)?, raw.as_str());
        assert_eq!(rmp_serde::from_slice::<RawObject>(&packed)?, raw);
        let not_an_object = rmp_serde::to_vec_named("[1]")?;
        assert!(rmp_serde::from_slice::<RawObject>(&not_an_object).is_err());
        // Human-readable formats still get the object.
        assert_eq!(serde_json::to_string(&raw)?, raw.as_str());
        Ok(())
    }
}

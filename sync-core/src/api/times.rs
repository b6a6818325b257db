//! Timestamps in the caches' binary form.
//!
//! k8s-openapi prints a `Time` through a strftime pattern and parses it back as RFC 3339
//! text, whatever the format. The caches' MessagePack (`runtime::store`, not
//! human-readable) writes a timestamp as its seconds and nanoseconds instead: printing
//! them was a fifth of packing a Machine. JSON and YAML see the usual text.
//!
//! For a field, `serialize_with` and `deserialize_with` (schemars reads `with` as a
//! type): `super::times::optional::{serialize, deserialize}` on an `Option<Time>`,
//! `super::times::conditions::…` on an `Option<Vec<Condition>>`, which is not for a field
//! of a `#[serde(flatten)]` struct: serde buffers such a field and replays it as
//! human-readable (an `Option<Time>` is read in either form for that reason).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use std::fmt;

use serde::de::Visitor;
use serde::{Deserialize, Deserializer, Serialize, Serializer, de};

/// A timestamp as seconds and nanoseconds since the Unix epoch.
pub(crate) type Stamp = (i64, i32);

/// `time` as a [`Stamp`].
pub(crate) fn stamp(time: &Time) -> Stamp {
    (time.0.as_second(), time.0.subsec_nanosecond())
}

/// A [`Stamp`] read back; out of range (a torn cache entry) is an error.
pub(crate) fn from_stamp<E: de::Error>((seconds, nanoseconds): Stamp) -> Result<Time, E> {
    Timestamp::new(seconds, nanoseconds).map(Time).map_err(E::custom)
}

/// `items` written as a sequence, each as `row` makes it: the binary forms' lists
/// (conditions here, managed field entries and owners in the caches' metadata).
pub(crate) struct Rows<'a, T, F>(pub &'a [T], pub F);

impl<'a, T, R: Serialize, F: Fn(&'a T) -> R> Serialize for Rows<'a, T, F> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(&self.1))
    }
}

/// An `Option<Time>` field.
pub(crate) mod optional {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(time: &Option<Time>, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            time.serialize(serializer)
        } else {
            time.as_ref().map(stamp).serialize(serializer)
        }
    }

    /// The numbers from a binary format; from a human-readable one either form: a field
    /// of a flattened struct (`SyncStatus` in a MAPI status) is buffered by serde and
    /// replayed as human-readable, though MessagePack wrote its numbers.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Time>, D::Error> {
        if deserializer.is_human_readable() {
            deserializer.deserialize_option(Optional)
        } else {
            Option::<Stamp>::deserialize(deserializer)?
                .map(from_stamp)
                .transpose()
        }
    }

    struct Optional;

    impl<'de> Visitor<'de> for Optional {
        type Value = Option<Time>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an optional timestamp")
        }

        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
            deserializer.deserialize_any(TextOrStamp).map(Some)
        }
    }

    /// The API's RFC 3339 text, or a [`Stamp`].
    struct TextOrStamp;

    impl<'de> Visitor<'de> for TextOrStamp {
        type Value = Time;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an RFC 3339 timestamp, or seconds and nanoseconds")
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<Time, E> {
            text.parse::<Timestamp>().map(Time).map_err(E::custom)
        }

        fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Time, A::Error> {
            from_stamp(Stamp::deserialize(de::value::SeqAccessDeserializer::new(seq))?)
        }
    }
}

/// An `Option<Vec<Condition>>` field (`metav1.Condition`): in the binary form each
/// condition is an array in field order, its time a [`Stamp`]. Every field is listed by
/// name (no `..`), so one a new k8s-openapi adds fails the build here.
pub(crate) mod conditions {
    use super::*;

    type Binary = (Stamp, String, Option<i64>, String, String, String);

    fn binary(condition: &Condition) -> (Stamp, &str, Option<i64>, &str, &str, &str) {
        let Condition {
            last_transition_time,
            message,
            observed_generation,
            reason,
            status,
            type_,
        } = condition;
        (
            stamp(last_transition_time),
            message,
            *observed_generation,
            reason,
            status,
            type_,
        )
    }

    fn condition<E: de::Error>(binary: Binary) -> Result<Condition, E> {
        let (time, message, observed_generation, reason, status, type_) = binary;
        Ok(Condition {
            last_transition_time: from_stamp(time)?,
            message,
            observed_generation,
            reason,
            status,
            type_,
        })
    }

    pub(crate) fn serialize<S: Serializer>(
        conditions: &Option<Vec<Condition>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match conditions {
            Some(conditions) if !serializer.is_human_readable() => {
                serializer.serialize_some(&Rows(conditions, binary))
            }
            _ => conditions.serialize(serializer),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Vec<Condition>>, D::Error> {
        if deserializer.is_human_readable() {
            return Option::<Vec<Condition>>::deserialize(deserializer);
        }
        Option::<Vec<Binary>>::deserialize(deserializer)?
            .map(|binaries| binaries.into_iter().map(condition).collect())
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    struct Fields {
        #[serde(default, skip_serializing_if = "Option::is_none", with = "optional")]
        time: Option<Time>,
        #[serde(default, skip_serializing_if = "Option::is_none", with = "conditions")]
        conditions: Option<Vec<Condition>>,
    }

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn fields() -> Result<Fields, Box<dyn std::error::Error>> {
        let time = Time(Timestamp::new(1_764_979_200, 250)?);
        Ok(Fields {
            time: Some(time.clone()),
            conditions: Some(vec![Condition {
                last_transition_time: time,
                message: "m".into(),
                observed_generation: Some(3),
                reason: "R".into(),
                status: "True".into(),
                type_: "Ready".into(),
            }]),
        })
    }

    /// JSON keeps the API's text; MessagePack reads back the same values from numbers.
    #[test]
    fn json_keeps_the_text_and_message_pack_the_numbers() -> TestResult {
        let fields = fields()?;
        let text = serde_json::to_value(&fields)?;
        assert_eq!(text["time"], json!("2025-12-06T00:00:00Z"));
        assert_eq!(
            text["conditions"][0]["lastTransitionTime"],
            json!("2025-12-06T00:00:00Z")
        );
        let from_text: Fields = serde_json::from_value(text)?;
        assert_eq!(from_text.time.map(|t| t.0.as_second()), Some(1_764_979_200));

        let bytes = rmp_serde::to_vec_named(&fields)?;
        assert!(!bytes.windows(4).any(|w| w == b"2025"), "no timestamp text");
        assert_eq!(rmp_serde::from_slice::<Fields>(&bytes)?, fields);
        let none = Fields::default();
        assert_eq!(
            rmp_serde::from_slice::<Fields>(&rmp_serde::to_vec_named(&none)?)?,
            none
        );
        Ok(())
    }

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    struct Outer {
        name: String,
        #[serde(flatten)]
        inner: Inner,
    }

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    struct Inner {
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            serialize_with = "optional::serialize",
            deserialize_with = "optional::deserialize"
        )]
        time: Option<Time>,
    }

    /// In a flattened struct a time reads back from MessagePack (replayed by serde as
    /// human-readable) and from JSON; a missing or null one is `None`; other input fails.
    #[test]
    fn a_flattened_time_reads_back_in_either_form() -> TestResult {
        let outer = Outer {
            name: "n".into(),
            inner: Inner {
                time: Some(Time(Timestamp::new(1_764_979_200, 7)?)),
            },
        };
        let bytes = rmp_serde::to_vec_named(&outer)?;
        assert_eq!(rmp_serde::from_slice::<Outer>(&bytes)?, outer);
        let text = serde_json::to_string(&outer)?;
        assert_eq!(text, r#"{"name":"n","time":"2025-12-06T00:00:00Z"}"#);
        let from_text: Outer = serde_json::from_str(&text)?;
        assert_eq!(from_text.inner.time.map(|t| t.0.as_second()), Some(1_764_979_200));
        for absent in [r#"{"name":"n"}"#, r#"{"name":"n","time":null}"#] {
            assert_eq!(serde_json::from_str::<Outer>(absent)?.inner.time, None);
        }
        for bad in [r#"{"name":"n","time":"yesterday"}"#, r#"{"name":"n","time":5}"#] {
            assert!(serde_json::from_str::<Outer>(bad).is_err(), "{bad}");
        }
        Ok(())
    }

    /// A stamp out of range (a torn entry) is an error, not a panic.
    #[test]
    fn a_stamp_out_of_range_does_not_decode() {
        assert!(from_stamp::<serde_json::Error>((i64::MAX, 0)).is_err());
        assert!(from_stamp::<serde_json::Error>((0, 2_000_000_000)).is_err());
    }
}

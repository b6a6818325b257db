//! Per-object lenient decoding for watches.
//!
//! A list or watch event is decoded as a whole; with a typed watcher, one object that does
//! not fit the Rust type (a CRD skewed from the types, a field of the wrong JSON type)
//! fails the whole list and no object is ever cached. [`Lenient`] captures each object's
//! raw JSON and decodes it on its own, so a malformed object becomes a value the engine
//! reports (log line and Warning Event) and skips, while everything else keeps flowing.
//!
//! Capturing the text costs a pass over it before the decoding: [`OnePass`] decodes in the
//! same pass as the list or event around it, and fails all of it at an object that does
//! not fit. `runtime::watch` reads with it until that happens, then with [`Lenient`].

use std::borrow::Cow;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize, Serializer};

/// An object of type `K`, or the metadata of one that does not decode as `K`.
#[derive(Clone, Debug)]
pub enum Lenient<K> {
    /// The object decoded.
    Valid(K),
    /// It did not; its metadata and why (boxed: rare, and larger than most objects' handle).
    Malformed(Box<Malformed>),
}

/// An object that does not decode as its Rust type.
#[derive(Clone, Debug, Default)]
pub struct Malformed {
    /// Its metadata (which always decodes: it is the API server's).
    pub metadata: ObjectMeta,
    /// The decoding error, with the JSON path where it happened.
    pub error: String,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let namespace = self.metadata.namespace.as_deref().unwrap_or_default();
        let name = self.metadata.name.as_deref().unwrap_or_default();
        write!(f, "{namespace}/{name}: {}", self.error)
    }
}

#[derive(Deserialize)]
struct MetadataOnly {
    #[serde(default)]
    metadata: ObjectMeta,
}

impl<'de, K: DeserializeOwned + Resource> Deserialize<'de> for Lenient<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = crate::api::json_text::json_text(deserializer)?;
        // The common case decodes once, plainly but for the field sets (kept as their text,
        // as the caches keep them); only a failure is decoded again to name the field at
        // fault.
        if let Ok(object) = crate::runtime::field_sets::object::<K>(&text) {
            return Ok(Self::Valid(object));
        }
        let mut decoder = serde_json::Deserializer::from_str(&text);
        match serde_path_to_error::deserialize::<_, K>(&mut decoder) {
            Ok(object) => Ok(Self::Valid(object)),
            Err(error) => {
                let metadata = serde_json::from_str::<MetadataOnly>(&text)
                    .map_err(serde::de::Error::custom)?
                    .metadata;
                let path = error.path().to_string();
                let error = error.into_inner();
                Ok(Self::Malformed(Box::new(Malformed {
                    metadata,
                    error: format!("{path}: {error}"),
                })))
            }
        }
    }
}

impl<K: Serialize> Serialize for Lenient<K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Valid(object) => object.serialize(serializer),
            Self::Malformed(malformed) => {
                serde_json::json!({ "metadata": malformed.metadata }).serialize(serializer)
            }
        }
    }
}

/// `K`'s kind, group, version and plural, for a wrapper of `K`.
macro_rules! resource_type_of {
    ($k:ident) => {
        type DynamicType = $k::DynamicType;
        type Scope = $k::Scope;

        fn kind(dt: &Self::DynamicType) -> Cow<'_, str> {
            $k::kind(dt)
        }
        fn group(dt: &Self::DynamicType) -> Cow<'_, str> {
            $k::group(dt)
        }
        fn version(dt: &Self::DynamicType) -> Cow<'_, str> {
            $k::version(dt)
        }
        fn plural(dt: &Self::DynamicType) -> Cow<'_, str> {
            $k::plural(dt)
        }
    };
}

impl<K: Resource> Resource for Lenient<K> {
    resource_type_of!(K);

    fn meta(&self) -> &ObjectMeta {
        match self {
            Self::Valid(object) => object.meta(),
            Self::Malformed(malformed) => &malformed.metadata,
        }
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Self::Valid(object) => object.meta_mut(),
            Self::Malformed(malformed) => &mut malformed.metadata,
        }
    }
}

/// An object of type `K` decoded in the same pass as the document around it, its field
/// sets kept as text as [`Lenient`] keeps them. An object that does not fit `K` fails the
/// whole document (the list page, the watch event), so that nothing about it is known but
/// that the document failed.
#[derive(Clone, Debug)]
pub struct OnePass<K>(pub K);

impl<'de, K: DeserializeOwned> Deserialize<'de> for OnePass<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let seed = crate::runtime::field_sets::SetsAsTextSeed::<K>::default();
        serde::de::DeserializeSeed::deserialize(seed, deserializer).map(Self)
    }
}

impl<K: Resource> Resource for OnePass<K> {
    resource_type_of!(K);

    fn meta(&self) -> &ObjectMeta {
        self.0.meta()
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.0.meta_mut()
    }
}

#[cfg(test)]
mod tests {
    use kube::core::{ObjectList, WatchEvent};

    use super::*;
    use crate::api::capi;

    #[test]
    fn one_malformed_item_does_not_fail_the_list() {
        let list = r#"{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineList","metadata":{"resourceVersion":"7"},
            "items":[
              {"metadata":{"name":"good","namespace":"c"},"spec":{"clusterName":"x","bootstrap":{},"infrastructureRef":{"apiGroup":"g","kind":"K","name":"n"}}},
              {"metadata":{"name":"bad","namespace":"c"},"spec":{"clusterName":5,"bootstrap":{},"infrastructureRef":{"apiGroup":"g","kind":"K","name":"n"}}}
            ]}"#;
        let list: ObjectList<Lenient<capi::Machine>> =
            serde_json::from_str(list).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(&list.items[0], Lenient::Valid(m) if m.metadata.name.as_deref() == Some("good")));
        let Lenient::Malformed(bad) = &list.items[1] else {
            panic!("{:?}", list.items[1])
        };
        assert_eq!(bad.metadata.name.as_deref(), Some("bad"));
        assert!(
            bad.error
                .starts_with("spec.clusterName: invalid type: integer `5`"),
            "{}",
            bad.error
        );
    }

    /// One pass reads what the lenient decoding reads, field sets as text included,
    /// whichever key of a watch event comes first; an object that does not fit fails the
    /// event.
    #[test]
    fn one_pass_reads_the_same_object_and_fails_at_one_that_does_not_fit() {
        let object = r#"{"metadata":{"name":"a","namespace":"c","managedFields":[{"manager":"m","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:clusterName":{}}}}]},"spec":{"clusterName":"x","bootstrap":{},"infrastructureRef":{"apiGroup":"g","kind":"K","name":"n"}}}"#;
        for line in [
            format!(r#"{{"type":"MODIFIED","object":{object}}}"#),
            format!(r#"{{"object":{object},"type":"MODIFIED"}}"#),
        ] {
            let one_pass: WatchEvent<OnePass<capi::Machine>> =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
            let lenient: WatchEvent<Lenient<capi::Machine>> =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
            let (WatchEvent::Modified(OnePass(one_pass)), WatchEvent::Modified(Lenient::Valid(lenient))) =
                (one_pass, lenient)
            else {
                panic!("{line}")
            };
            assert_eq!(one_pass, lenient);
            let sets = one_pass.metadata.managed_fields.unwrap_or_default();
            assert_eq!(
                sets[0].fields_v1.as_ref().map(|f| &f.0),
                Some(&serde_json::Value::String(
                    r#"{"f:spec":{"f:clusterName":{}}}"#.into()
                )),
                "kept as text"
            );
        }
        let malformed = r#"{"type":"ADDED","object":{"metadata":{"name":"bad"},"spec":[]}}"#;
        assert!(serde_json::from_str::<WatchEvent<OnePass<capi::Machine>>>(malformed).is_err());
    }

    #[test]
    fn watch_events_decode_leniently() {
        let line = r#"{"type":"MODIFIED","object":{"metadata":{"name":"bad","namespace":"c"},"spec":[]}}"#;
        let event: WatchEvent<Lenient<capi::Machine>> =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(event, WatchEvent::Modified(Lenient::Malformed(_))));
    }

    #[test]
    fn a_watch_event_decodes_whichever_key_comes_first() {
        let object = r#"{"metadata":{"name":"a","namespace":"c"},"spec":{"clusterName":"x","bootstrap":{},"infrastructureRef":{"apiGroup":"g","kind":"K","name":"n"}}}"#;
        for line in [
            format!(r#"{{"type":"MODIFIED","object":{object}}}"#),
            format!(r#"{{"object":{object},"type":"MODIFIED"}}"#),
        ] {
            let event: WatchEvent<Lenient<capi::Machine>> =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
            let WatchEvent::Modified(Lenient::Valid(machine)) = event else {
                panic!("{line}: {event:?}")
            };
            assert_eq!(machine.metadata.name.as_deref(), Some("a"));
            assert_eq!(machine.spec.cluster_name, "x");
        }
        let malformed = r#"{"object":{"metadata":{"name":"bad","namespace":"c"},"spec":[]},"type":"ADDED"}"#;
        let event: WatchEvent<Lenient<capi::Machine>> =
            serde_json::from_str(malformed).unwrap_or_else(|e| panic!("{e}"));
        let WatchEvent::Added(Lenient::Malformed(bad)) = event else {
            panic!("{event:?}")
        };
        assert_eq!(bad.metadata.name.as_deref(), Some("bad"));
        assert!(bad.error.starts_with("spec: invalid length 0"), "{}", bad.error);
    }
}

//! An object's metadata in the caches' MessagePack: written apart from the rest of the
//! object, as arrays in field order, its timestamps as numbers.
//!
//! Decoding a cached object spent about 40 % of its time in `ObjectMeta`, most of it on
//! names (every field's key read and matched, seven keys per managed field entry) and on
//! timestamps printed and parsed as RFC 3339 text. Here a field is known by its place
//! and a timestamp is two integers. The rest of the object is written as before, with an
//! empty `metadata` ([`WithoutMeta`]), so any type's own serde code still applies.
//!
//! Every field is listed by name on both sides (no `..`): a field a new k8s-openapi adds
//! fails the build here rather than going missing from the caches.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, ManagedFieldsEntry, ObjectMeta, OwnerReference, Time,
};
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::api::times::{Rows, Stamp, from_stamp, stamp};

/// `meta` in its compact form.
pub(super) struct CompactMeta<'a>(pub &'a ObjectMeta);

impl Serialize for CompactMeta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let ObjectMeta {
            annotations,
            creation_timestamp,
            deletion_grace_period_seconds,
            deletion_timestamp,
            finalizers,
            generate_name,
            generation,
            labels,
            managed_fields,
            name,
            namespace,
            owner_references,
            resource_version,
            self_link,
            uid,
        } = self.0;
        (
            annotations,
            creation_timestamp.as_ref().map(stamp),
            deletion_grace_period_seconds,
            deletion_timestamp.as_ref().map(stamp),
            finalizers,
            generate_name,
            generation,
            labels,
            managed_fields.as_deref().map(|entries| Rows(entries, entry_row)),
            name,
            namespace,
            owner_references.as_deref().map(|owners| Rows(owners, owner_row)),
            resource_version,
            self_link,
            uid,
        )
            .serialize(serializer)
    }
}

/// A managed field entry's row: its fields in their order, the time a [`Stamp`].
fn entry_row(entry: &ManagedFieldsEntry) -> impl Serialize + '_ {
    let ManagedFieldsEntry {
        api_version,
        fields_type,
        fields_v1,
        manager,
        operation,
        subresource,
        time,
    } = entry;
    let time = time.as_ref().map(stamp);
    (
        api_version,
        fields_type,
        fields_v1,
        manager,
        operation,
        subresource,
        time,
    )
}

/// An owner reference's row: its fields in their order.
fn owner_row(owner: &OwnerReference) -> impl Serialize + '_ {
    let OwnerReference {
        api_version,
        block_owner_deletion,
        controller,
        kind,
        name,
        uid,
    } = owner;
    (api_version, block_owner_deletion, controller, kind, name, uid)
}

type Strings = Option<BTreeMap<String, String>>;

/// What [`CompactMeta`] wrote, read back: `ObjectMeta`'s fields in their order.
#[derive(Deserialize)]
pub(super) struct ReadMeta(
    Strings,
    Option<ReadTime>,
    Option<i64>,
    Option<ReadTime>,
    Option<Vec<String>>,
    Option<String>,
    Option<i64>,
    Strings,
    Option<Vec<ReadEntry>>,
    Option<String>,
    Option<String>,
    Option<Vec<ReadOwner>>,
    Option<String>,
    Option<String>,
    Option<String>,
);

impl From<ReadMeta> for ObjectMeta {
    fn from(read: ReadMeta) -> Self {
        let ReadMeta(
            annotations,
            created,
            deletion_grace_period_seconds,
            deleted,
            finalizers,
            generate_name,
            generation,
            labels,
            entries,
            name,
            namespace,
            owners,
            resource_version,
            self_link,
            uid,
        ) = read;
        Self {
            annotations,
            creation_timestamp: created.map(|t| t.0),
            deletion_grace_period_seconds,
            deletion_timestamp: deleted.map(|t| t.0),
            finalizers,
            generate_name,
            generation,
            labels,
            managed_fields: entries.map(|e| e.into_iter().map(ManagedFieldsEntry::from).collect()),
            name,
            namespace,
            owner_references: owners.map(|o| o.into_iter().map(OwnerReference::from).collect()),
            resource_version,
            self_link,
            uid,
        }
    }
}

/// A [`Stamp`] read back; out of range is an error (a torn entry), never a panic.
struct ReadTime(Time);

impl<'de> Deserialize<'de> for ReadTime {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        from_stamp(Stamp::deserialize(deserializer)?).map(Self)
    }
}

#[derive(Deserialize)]
struct ReadEntry(
    Option<String>,
    Option<String>,
    Option<FieldsV1>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<ReadTime>,
);

impl From<ReadEntry> for ManagedFieldsEntry {
    fn from(read: ReadEntry) -> Self {
        let ReadEntry(api_version, fields_type, fields_v1, manager, operation, subresource, time) = read;
        Self {
            api_version,
            fields_type,
            fields_v1,
            manager,
            operation,
            subresource,
            time: time.map(|t| t.0),
        }
    }
}

#[derive(Deserialize)]
struct ReadOwner(String, Option<bool>, Option<bool>, String, String, String);

impl From<ReadOwner> for OwnerReference {
    fn from(read: ReadOwner) -> Self {
        let ReadOwner(api_version, block_owner_deletion, controller, kind, name, uid) = read;
        Self {
            api_version,
            block_owner_deletion,
            controller,
            kind,
            name,
            uid,
        }
    }
}

/// `object` as its own serde code writes it, but for an empty `metadata` (the field of
/// that name of its outermost struct), which [`CompactMeta`] writes. A type written as a
/// map rather than a struct (a flattened one) keeps its metadata: written twice, read
/// right.
pub(super) struct WithoutMeta<'a, K>(pub &'a K);

impl<K: Serialize> Serialize for WithoutMeta<'_, K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(Outermost(serializer))
    }
}

/// Hands every call to the serializer it wraps; a struct's fields go through [`Fields`].
struct Outermost<S>(S);

/// The outermost struct's fields: `metadata` written as an empty map.
struct Fields<T>(T);

/// Serializes as an empty map: what an `ObjectMeta` with no field set decodes from.
struct Empty;

impl Serialize for Empty {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_map(Some(0))?.end()
    }
}

impl<T: SerializeStruct> SerializeStruct for Fields<T> {
    type Ok = T::Ok;
    type Error = T::Error;

    fn serialize_field<V: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &V,
    ) -> Result<(), T::Error> {
        if key == "metadata" {
            self.0.serialize_field(key, &Empty)
        } else {
            self.0.serialize_field(key, value)
        }
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), T::Error> {
        self.0.skip_field(key)
    }

    fn end(self) -> Result<T::Ok, T::Error> {
        self.0.end()
    }
}

/// A method that hands its call to the wrapped serializer.
macro_rules! forward {
    ($($method:ident($($arg:ident: $type:ty),*) -> $out:ty;)*) => {
        $(fn $method(self, $($arg: $type),*) -> Result<$out, S::Error> {
            self.0.$method($($arg),*)
        })*
    };
}

impl<S: Serializer> Serializer for Outermost<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = S::SerializeSeq;
    type SerializeTuple = S::SerializeTuple;
    type SerializeTupleStruct = S::SerializeTupleStruct;
    type SerializeTupleVariant = S::SerializeTupleVariant;
    type SerializeMap = S::SerializeMap;
    type SerializeStruct = Fields<S::SerializeStruct>;
    type SerializeStructVariant = S::SerializeStructVariant;

    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Self::SerializeStruct, S::Error> {
        self.0.serialize_struct(name, len).map(Fields)
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<S::Ok, S::Error> {
        self.0.serialize_some(value)
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_newtype_struct(name, value)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_newtype_variant(name, index, variant, value)
    }

    forward! {
        serialize_bool(v: bool) -> S::Ok;
        serialize_i8(v: i8) -> S::Ok;
        serialize_i16(v: i16) -> S::Ok;
        serialize_i32(v: i32) -> S::Ok;
        serialize_i64(v: i64) -> S::Ok;
        serialize_i128(v: i128) -> S::Ok;
        serialize_u8(v: u8) -> S::Ok;
        serialize_u16(v: u16) -> S::Ok;
        serialize_u32(v: u32) -> S::Ok;
        serialize_u64(v: u64) -> S::Ok;
        serialize_u128(v: u128) -> S::Ok;
        serialize_f32(v: f32) -> S::Ok;
        serialize_f64(v: f64) -> S::Ok;
        serialize_char(v: char) -> S::Ok;
        serialize_str(v: &str) -> S::Ok;
        serialize_bytes(v: &[u8]) -> S::Ok;
        serialize_none() -> S::Ok;
        serialize_unit() -> S::Ok;
        serialize_unit_struct(name: &'static str) -> S::Ok;
        serialize_unit_variant(name: &'static str, index: u32, variant: &'static str) -> S::Ok;
        serialize_seq(len: Option<usize>) -> S::SerializeSeq;
        serialize_tuple(len: usize) -> S::SerializeTuple;
        serialize_tuple_struct(name: &'static str, len: usize) -> S::SerializeTupleStruct;
        serialize_tuple_variant(name: &'static str, index: u32, variant: &'static str, len: usize) -> S::SerializeTupleVariant;
        serialize_map(len: Option<usize>) -> S::SerializeMap;
        serialize_struct_variant(name: &'static str, index: u32, variant: &'static str, len: usize) -> S::SerializeStructVariant;
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::DynamicObject;
    use serde_json::json;

    use super::*;
    use crate::api::mapi;
    use crate::runtime::store::Encoding;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn time(seconds: i64, nanoseconds: i32) -> Result<Time, k8s_openapi::jiff::Error> {
        k8s_openapi::jiff::Timestamp::new(seconds, nanoseconds).map(Time)
    }

    /// Every field of `ObjectMeta` set, timestamps with nanoseconds, a field set as text
    /// and one as a tree.
    fn every_field() -> Result<ObjectMeta, k8s_openapi::jiff::Error> {
        let entry = |manager: &str, fields: serde_json::Value| -> Result<_, k8s_openapi::jiff::Error> {
            Ok(ManagedFieldsEntry {
                api_version: Some("v1".into()),
                fields_type: Some("FieldsV1".into()),
                fields_v1: Some(FieldsV1(fields)),
                manager: Some(manager.into()),
                operation: Some("Update".into()),
                subresource: Some("status".into()),
                time: Some(time(1_764_979_200, 5)?),
            })
        };
        Ok(ObjectMeta {
            annotations: Some(BTreeMap::from([("a".into(), "1".into())])),
            creation_timestamp: Some(time(1_764_979_200, 0)?),
            deletion_grace_period_seconds: Some(30),
            deletion_timestamp: Some(time(1_764_979_260, 123_456_789)?),
            finalizers: Some(vec!["f".into()]),
            generate_name: Some("worker-".into()),
            generation: Some(4),
            labels: Some(BTreeMap::from([("l".into(), "2".into())])),
            managed_fields: Some(vec![
                entry("text", json!(r#"{"f:status":{}}"#))?,
                entry("tree", json!({"f:spec": {"f:a": {}}}))?,
            ]),
            name: Some("worker-a".into()),
            namespace: Some("ns".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                block_owner_deletion: Some(true),
                controller: Some(false),
                kind: "K".into(),
                name: "o".into(),
                uid: "u-2".into(),
            }]),
            resource_version: Some("7".into()),
            self_link: Some("/api/v1/namespaces/ns/configmaps/worker-a".into()),
            uid: Some("u-1".into()),
        })
    }

    fn round_trip<K: kube::Resource + Serialize + serde::de::DeserializeOwned>(
        object: &K,
    ) -> Result<(K, Vec<u8>), String> {
        let mut bytes = Vec::new();
        Encoding::MessagePack.encode(object, &mut bytes)?;
        Ok((Encoding::MessagePack.decode(&bytes)?, bytes))
    }

    #[test]
    fn every_metadata_field_reads_back() -> TestResult {
        let object = ConfigMap {
            metadata: every_field()?,
            data: Some(BTreeMap::from([("k".into(), "v".into())])),
            ..ConfigMap::default()
        };
        assert_eq!(round_trip(&object)?.0, object);
        let empty = ConfigMap::default();
        assert_eq!(round_trip(&empty)?.0, empty);
        Ok(())
    }

    /// A custom resource's metadata is written once, compactly; a type written as a map
    /// (`DynamicObject` flattens its data) has it twice and still reads back.
    #[test]
    fn the_metadata_is_written_once_where_it_can_be() -> TestResult {
        let count = |bytes: &[u8], text: &str| {
            bytes
                .windows(text.len())
                .filter(|w| *w == text.as_bytes())
                .count()
        };
        let mut machine = mapi::Machine::new("a-distinct-name", mapi::MachineSpec::default());
        machine.metadata = ObjectMeta {
            name: Some("a-distinct-name".into()),
            ..every_field()?
        };
        let (read, bytes) = round_trip(&machine)?;
        assert_eq!(read, machine);
        assert_eq!(count(&bytes, "a-distinct-name"), 1);
        assert_eq!(
            count(&bytes, "creationTimestamp"),
            0,
            "field names are not written"
        );

        let dynamic = DynamicObject {
            types: None,
            metadata: machine.metadata.clone(),
            data: json!({"spec": {"a": 1}}),
        };
        let (read, bytes) = round_trip(&dynamic)?;
        assert_eq!(read, dynamic);
        assert_eq!(count(&bytes, "a-distinct-name"), 2);
        Ok(())
    }

    /// A timestamp out of range (a torn entry) is an error, not a panic.
    #[test]
    fn a_timestamp_out_of_range_does_not_decode() -> TestResult {
        let bytes = rmp_serde::to_vec(&(i64::MAX, 0))?;
        assert!(rmp_serde::from_slice::<ReadTime>(&bytes).is_err());
        Ok(())
    }
}

//! A cached object's bytes: its encoding ([`Encoding`]), compressed against the store's
//! dictionary, after its resourceVersion, in one allocation ([`Packed`]).

use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::meta::{CompactMeta, ReadMeta, WithoutMeta};
use super::skip::value_len;

/// MessagePack's marker of an array of two: an encoded object's metadata and the rest.
const PAIR: u8 = 0x92;

/// One cached object in one allocation: its resourceVersion (compared without decoding)
/// and its encoding as an LZ4 block against the store's dictionary, each with its length
/// (little-endian `u32`) before it. One allocation, not two, saves ~30 bytes an object.
#[derive(Clone, Debug)]
pub(crate) struct Packed {
    bytes: Box<[u8]>,
}

/// The length field before the resourceVersion and before the encoded object.
const LENGTH: usize = std::mem::size_of::<u32>();

impl Packed {
    /// `encoded` compressed against `dictionary`, after `resource_version` (`None` when it
    /// does not fit a `u32`, which no API server sends). The block is compressed into
    /// `scratch` (kept by the writer, so neither zeroed nor grown again) and copied into an
    /// allocation of its exact size.
    pub(super) fn new(
        resource_version: Option<&str>,
        encoded: &[u8],
        dictionary: &[u8],
        scratch: &mut Vec<u8>,
    ) -> Option<Self> {
        let version = resource_version.unwrap_or_default().as_bytes();
        let (version_length, encoded_length) = (
            u32::try_from(version.len()).ok()?,
            u32::try_from(encoded.len()).ok()?,
        );
        let most = lz4_flex::block::get_maximum_output_size(encoded.len());
        if scratch.len() < most {
            scratch.resize(most, 0);
        }
        let written = lz4_flex::block::compress_into_with_dict(encoded, scratch, dictionary).ok()?;
        let mut bytes = Vec::with_capacity(2 * LENGTH + version.len() + written);
        bytes.extend_from_slice(&version_length.to_le_bytes());
        bytes.extend_from_slice(version);
        bytes.extend_from_slice(&encoded_length.to_le_bytes());
        bytes.extend_from_slice(&scratch[..written]);
        Some(Self {
            bytes: bytes.into_boxed_slice(),
        })
    }

    /// The resourceVersion's bytes and the rest (the encoding's length and its block).
    fn split(&self) -> (&[u8], &[u8]) {
        let (length, rest) = self.bytes.split_at(LENGTH.min(self.bytes.len()));
        let length = length.try_into().map_or(0, u32::from_le_bytes) as usize;
        rest.split_at(length.min(rest.len()))
    }

    /// The object's resourceVersion.
    pub(crate) fn resource_version(&self) -> Option<&str> {
        let (version, _) = self.split();
        std::str::from_utf8(version)
            .ok()
            .filter(|version| !version.is_empty())
    }

    /// The encoded object, decompressed against `dictionary`.
    pub(super) fn decompressed(
        &self,
        dictionary: &[u8],
    ) -> Result<Vec<u8>, lz4_flex::block::DecompressError> {
        let (_, block) = self.split();
        lz4_flex::block::decompress_size_prepended_with_dict(block, dictionary)
    }

    /// The heap bytes this entry takes.
    pub(super) fn len(&self) -> usize {
        self.bytes.len()
    }
}

/// How a store encodes an object before compressing it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Encoding {
    /// JSON, for a type whose serde code is tied to serde_json (a field that is a
    /// `serde_json::value::RawValue`); the default, for a type not known to be plain.
    #[default]
    Json,
    /// MessagePack with field names (so that optional and flattened fields, and JSON
    /// values, round-trip as in JSON), for a type with plain serde code, or one that
    /// writes a binary form when its serializer is not human-readable (`RawObject`,
    /// `InfraObject`): the pairs' kinds and the infrastructure objects. The metadata is
    /// written apart, compactly (`meta`).
    MessagePack,
}

impl Encoding {
    /// `object` encoded, appended to `into`.
    pub fn encode<K: Resource + Serialize>(self, object: &K, into: &mut Vec<u8>) -> Result<(), String> {
        match self {
            Self::Json => serde_json::to_writer(into, object).map_err(|error| error.to_string()),
            Self::MessagePack => {
                let parts = (CompactMeta(object.meta()), WithoutMeta(object));
                rmp_serde::encode::write_named(into, &parts).map_err(|error| error.to_string())
            }
        }
    }

    /// The object's fields that `V` declares, decoded from `bytes` (the encoding of a
    /// whole object): its metadata and every other field are skipped unread.
    pub fn decode_part<V: DeserializeOwned>(self, bytes: &[u8]) -> Result<V, String> {
        match self {
            Self::Json => serde_json::from_slice(bytes).map_err(|error| error.to_string()),
            // A pair, metadata first (`encode`): the metadata is passed over by its length.
            Self::MessagePack => {
                let object = (bytes.first() == Some(&PAIR))
                    .then(|| value_len(&bytes[1..]))
                    .flatten()
                    .and_then(|meta| bytes.get(1 + meta..))
                    .ok_or("not an encoded object: a pair of its metadata and the rest")?;
                rmp_serde::from_slice::<V>(object).map_err(|error| error.to_string())
            }
        }
    }

    /// `bytes` decoded as `K`.
    pub fn decode<K: Resource + DeserializeOwned>(self, bytes: &[u8]) -> Result<K, String> {
        match self {
            Self::Json => serde_json::from_slice(bytes).map_err(|error| error.to_string()),
            Self::MessagePack => {
                let (meta, mut object) =
                    rmp_serde::from_slice::<(ReadMeta, K)>(bytes).map_err(|error| error.to_string())?;
                *object.meta_mut() = meta.into();
                Ok(object)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_keeps_its_resource_version_and_json_in_one_allocation() {
        let dictionary = br#"{"metadata":{"name":"m-000001"},"spec":{"a":1}}"#;
        let json = br#"{"metadata":{"name":"m-000002"},"spec":{"a":2}}"#;
        let Some(packed) = Packed::new(Some("4711"), json, dictionary, &mut Vec::new()) else {
            panic!("an object packs");
        };
        assert_eq!(packed.resource_version(), Some("4711"));
        assert_eq!(packed.decompressed(dictionary).ok().as_deref(), Some(&json[..]));
        assert!(
            packed.len() < 2 * LENGTH + 4 + json.len(),
            "compressed against the dictionary"
        );

        let Some(unversioned) = Packed::new(None, json, dictionary, &mut vec![7; 3]) else {
            panic!("an object without a resourceVersion packs");
        };
        assert_eq!(unversioned.resource_version(), None);
        assert_eq!(
            unversioned.decompressed(dictionary).ok().as_deref(),
            Some(&json[..])
        );

        // A torn entry reads as no version and fails to decode; nothing panics.
        let torn = Packed {
            bytes: packed.bytes[..3].into(),
        };
        assert_eq!(torn.resource_version(), None);
        assert!(torn.decompressed(dictionary).is_err());
    }
}

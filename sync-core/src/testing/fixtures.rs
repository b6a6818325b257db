//! Pairs and object builders shared by the unit tests.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use kube::api::ObjectMeta;

use crate::api::{AsInfraRef, AuthoritativeApi, InfraRef, MalformedRef, SyncStatus, capi, mapi};
use crate::pair::{CapiOnly, NoOwner, SyncPair};

/// Any JSON value, nested up to four deep with up to `width` items a level: numbers of
/// every form, strings with the characters that need escaping, and long ones (more than
/// 255 bytes, which formats measure with a wider length).
pub(crate) fn any_json(width: usize) -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
    use proptest::prelude::*;
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "-?[1-9][0-9]{0,24}|0".prop_filter_map("a JSON number", |n| serde_json::from_str(&n).ok()),
        any::<String>().prop_map(Value::from),
        "[a-z<>&\"\\/ \n\u{7f}\u{2028}é]{0,8}".prop_map(Value::from),
        ".{256,300}".prop_map(Value::from),
    ];
    let size = u32::try_from(width).unwrap_or(u32::MAX);
    leaf.prop_recursive(4, 8 * size, size, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..width).prop_map(Value::from),
            prop::collection::vec(("[a-z\"é]{0,4}", inner), 0..width)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

pub(crate) const MAPI_NS: &str = "openshift-machine-api";
pub(crate) const CAPI_NS: &str = "openshift-cluster-api";

/// The Machine pair, as the macro would declare it.
pub(crate) struct MachinePair;
impl SyncPair for MachinePair {
    type Mapi = mapi::Machine;
    type Capi = capi::Machine;
    type OwnerMirror = mapi::MachineSet;
    const NAME: &'static str = "machine-sync";
    const CAPI_ONLY: CapiOnly = CapiOnly::MirrorIfOwnerMirrored;
    const INFRA_REF: Option<&'static str> = Some("spec.infrastructure_ref");
    fn infra_ref(capi: &capi::Machine) -> Result<Option<InfraRef>, MalformedRef> {
        capi.spec.infrastructure_ref.as_infra_ref()
    }
}

/// The MachineSet pair, as the macro would declare it.
pub(crate) struct SetPair;
impl SyncPair for SetPair {
    type Mapi = mapi::MachineSet;
    type Capi = capi::MachineSet;
    type OwnerMirror = NoOwner;
    const NAME: &'static str = "machineset-sync";
    const CAPI_ONLY: CapiOnly = CapiOnly::Ignore;
    const INFRA_REF: Option<&'static str> = Some("spec.template.spec.infrastructure_ref");
    fn infra_ref(capi: &capi::MachineSet) -> Result<Option<InfraRef>, MalformedRef> {
        capi.spec.template.spec.infrastructure_ref.as_infra_ref()
    }
}

pub(crate) fn meta(name: &str, namespace: &str, deleting: bool) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(namespace.into()),
        deletion_timestamp: deleting.then(|| Time(Default::default())),
        ..ObjectMeta::default()
    }
}

pub(crate) fn mapi_machine(name: &str, authority: Option<&str>, deleting: bool) -> mapi::Machine {
    mapi::Machine {
        metadata: meta(name, MAPI_NS, deleting),
        spec: mapi::MachineSpec::default(),
        status: Some(mapi::MachineStatus {
            sync: SyncStatus {
                authoritative_api: authority.map(AuthoritativeApi::from),
                ..Default::default()
            },
            ..Default::default()
        }),
    }
}

pub(crate) fn capi_machine(name: &str, owner: Option<(&str, &str)>, deleting: bool) -> capi::Machine {
    let mut metadata = meta(name, CAPI_NS, deleting);
    metadata.owner_references = owner.map(|(api_version, owner)| {
        vec![OwnerReference {
            api_version: api_version.into(),
            kind: "MachineSet".into(),
            name: owner.into(),
            uid: "u".into(),
            controller: Some(true),
            ..Default::default()
        }]
    });
    let mut spec = capi::MachineSpec::default();
    spec.infrastructure_ref.api_group = "infrastructure.cluster.x-k8s.io".into();
    spec.infrastructure_ref.kind = "DevMachine".into();
    spec.infrastructure_ref.name = name.into();
    capi::Machine {
        metadata,
        spec,
        status: None,
    }
}

pub(crate) fn mapi_machine_set(name: &str) -> mapi::MachineSet {
    mapi::MachineSet {
        metadata: meta(name, MAPI_NS, false),
        spec: Default::default(),
        status: None,
    }
}

//! Property-based round trips, 1 000 cases each: MAPI → CAPI → MAPI and CAPI → MAPI →
//! CAPI, for Machines and MachineSets. The generators cover every mapped field.
//!
//! What a round trip cannot preserve, and why (the generators produce the canonical form,
//! or the comparison normalises exactly this):
//! * MAPI `spec.metadata` labels/annotations: Cluster API has one set on the Machine, so
//!   they come back merged with the Machine's (compared as the union).
//! * Labels the Machine API controller derives (instance-type, region, zone) and the
//!   finalizer each side's conversion sets: added on the way back (ignored). The role label
//!   also comes back as `node-role.kubernetes.io/<role>` in `spec.metadata.labels` (the
//!   Node has that label already).
//! * `providerSpec.apiVersion` (`awsproviderconfig.openshift.io/v1beta1` is written back
//!   as `machine.openshift.io/v1beta1`), `credentialsSecret` (always the default),
//!   `placement.region` (always the cluster's), `metadataServiceOptions.authentication`
//!   (unset comes back `Optional`): the generators write the canonical value.
//! * Go zero values (`iops: 0`, empty strings, empty lists) come back unset; tag order comes
//!   back sorted (a map on the CAPA side); `deleteOnTermination` comes back unset; a host
//!   placement `AnyAvailable` without a host on non-host tenancy is CAPA's default and
//!   comes back unset: the generators do not produce these forms.
//! * On the CAPI side: Cluster API keys other than the cluster-name/set-name labels, more
//!   than one `node-role.kubernetes.io/` label, and CAPA defaults left unset
//!   (instanceMetadataOptions, ignition, hostAffinity) come back filled in.

mod common;

use std::collections::BTreeMap;

use common::infra;
use conversion::aws::capa::awsmachines::{
    AwsMachineAdditionalSecurityGroups, AwsMachineAmi, AwsMachineCpuOptions,
    AwsMachineCpuOptionsConfidentialCompute, AwsMachineDynamicHostAllocation, AwsMachineHostAffinity,
    AwsMachineIgnition, AwsMachineIgnitionStorageType, AwsMachineInstanceMetadataOptions,
    AwsMachineInstanceMetadataOptionsHttpEndpoint, AwsMachineInstanceMetadataOptionsHttpTokens,
    AwsMachineInstanceMetadataOptionsInstanceMetadataTags, AwsMachineMarketType,
    AwsMachineNetworkInterfaceType, AwsMachineNonRootVolumes, AwsMachineRootVolume,
    AwsMachineSpotMarketOptions, AwsMachineSubnet, AwsMachineSubnetFilters, AwsMachineTenancy,
};
use conversion::aws::capa::{AwsMachine, AwsMachineSpec, AwsMachineTemplate};
use conversion::aws::provider::{
    AwsMachineProviderConfig, AwsResourceReference, BlockDeviceMappingSpec, CpuOptions, DedicatedHost,
    DynamicHostAllocationSpec, EbsBlockDeviceSpec, Filter, HostPlacement, LocalObjectReference,
    MetadataServiceOptions, Placement, SpotMarketOptions, TagSpecification,
};
use conversion::aws::{to_capi, to_mapi};
use conversion::names;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use sync_core::api::mapi::{LifecycleHook, LifecycleHooks, ProviderSpec};
use sync_core::api::{RawObject, capi, mapi};

type Map = BTreeMap<String, String>;

/// 1 000 cases per property unless `PROPTEST_CASES` says otherwise.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(1000),
        // The runner is driven by hand (see `check`), so there is no source file to persist to.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Runs a property on a thread with a large stack: the generators are deep nests of
/// strategies, more than a debug build's default test thread stack holds.
fn check<S: Strategy>(
    strategy: impl FnOnce() -> S + Send + 'static,
    property: impl Fn(S::Value) -> Result<(), TestCaseError> + Send + 'static,
) {
    let run = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let mut runner = proptest::test_runner::TestRunner::new(config());
            runner.run(&strategy(), property).map_err(|e| e.to_string())
        })
        .map(|thread| thread.join());
    match run {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(failure))) => panic!("{failure}"),
        Ok(Err(_)) => panic!("the property panicked"),
        Err(error) => panic!("spawning the property thread: {error}"),
    }
}

fn word() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9]{0,7}"
}

/// Label keys of neither API's special forms.
fn user_map() -> impl Strategy<Value = Map> {
    btree_map("(team|app|tier|example\\.com/[a-z]{1,5})", word(), 0..3)
}

fn some_word() -> impl Strategy<Value = Option<String>> {
    option::of(word())
}

fn filters() -> impl Strategy<Value = Vec<Filter>> {
    vec(
        (word(), option::of(vec(word(), 1..3))).prop_map(|(name, values)| Filter {
            name: format!("tag:{name}"),
            values,
        }),
        1..3,
    )
}

/// An ID or filters reference (ARNs do not convert).
fn reference() -> impl Strategy<Value = AwsResourceReference> {
    prop_oneof![
        word().prop_map(|id| AwsResourceReference::id(format!("sg-{id}"))),
        filters().prop_map(|f| AwsResourceReference {
            filters: Some(f),
            ..AwsResourceReference::default()
        }),
    ]
}

fn tags() -> impl Strategy<Value = Option<Vec<TagSpecification>>> {
    option::of(btree_map(word(), word(), 1..4)).prop_map(|tags| {
        tags.map(|t| {
            t.into_iter()
                .map(|(name, value)| TagSpecification { name, value })
                .collect()
        })
    })
}

fn ebs(root: bool) -> impl Strategy<Value = EbsBlockDeviceSpec> {
    (
        option::of(any::<bool>()),
        option::of(prop_oneof![
            word().prop_map(|k| AwsResourceReference::id(format!("key-{k}"))),
            word().prop_map(|k| AwsResourceReference {
                arn: Some(format!("arn:aws:kms:us-east-2:1:key/{k}")),
                ..AwsResourceReference::default()
            }),
        ]),
        option::of(100_i64..20_000),
        option::of(125_i32..1000),
        8_i64..2000,
        option::of(prop_oneof![
            Just("gp3".to_owned()),
            Just("io1".to_owned()),
            Just("gp2".to_owned())
        ]),
    )
        .prop_map(
            move |(encrypted, kms_key, iops, throughput_mib, size, volume_type)| EbsBlockDeviceSpec {
                delete_on_termination: None,
                encrypted,
                kms_key,
                iops,
                throughput_mib: if root { throughput_mib } else { None },
                volume_size: Some(size),
                volume_type,
            },
        )
}

fn block_devices() -> impl Strategy<Value = Option<Vec<BlockDeviceMappingSpec>>> {
    (option::of(ebs(true)), vec(ebs(false), 0..3)).prop_map(|(root, others)| {
        let mut devices: Vec<BlockDeviceMappingSpec> = root
            .into_iter()
            .map(|ebs| BlockDeviceMappingSpec {
                ebs: Some(ebs),
                ..BlockDeviceMappingSpec::default()
            })
            .collect();
        for (index, ebs) in others.into_iter().enumerate() {
            devices.push(BlockDeviceMappingSpec {
                device_name: Some(format!("/dev/sd{}", (b'f' + index as u8) as char)),
                ebs: Some(ebs),
                ..BlockDeviceMappingSpec::default()
            });
        }
        (!devices.is_empty()).then_some(devices)
    })
}

fn host_placement() -> impl Strategy<Value = (Option<String>, Option<HostPlacement>)> {
    prop_oneof![
        option::of(prop_oneof![
            Just("default".to_owned()),
            Just("dedicated".to_owned())
        ])
        .prop_map(|t| (t, None)),
        Just((
            Some("host".to_owned()),
            Some(HostPlacement {
                affinity: Some("AnyAvailable".to_owned()),
                dedicated_host: None
            })
        )),
        "[0-9a-f]{8}".prop_map(|id| (
            None,
            Some(HostPlacement {
                affinity: Some("AnyAvailable".to_owned()),
                dedicated_host: Some(DedicatedHost {
                    allocation_strategy: Some("UserProvided".to_owned()),
                    id: format!("h-{id}"),
                    dynamic_host_allocation: None,
                }),
            })
        )),
        "[0-9a-f]{17}".prop_map(|id| (
            Some("host".to_owned()),
            Some(HostPlacement {
                affinity: Some("DedicatedHost".to_owned()),
                dedicated_host: Some(DedicatedHost {
                    allocation_strategy: Some("UserProvided".to_owned()),
                    id: format!("h-{id}"),
                    dynamic_host_allocation: None,
                }),
            })
        )),
        tags().prop_map(|tags| (
            None,
            Some(HostPlacement {
                affinity: Some("DedicatedHost".to_owned()),
                dedicated_host: Some(DedicatedHost {
                    allocation_strategy: Some("Dynamic".to_owned()),
                    id: String::new(),
                    dynamic_host_allocation: Some(DynamicHostAllocationSpec { tags }),
                }),
            })
        )),
    ]
}

/// A providerSpec in canonical form, covering every field the conversion maps.
fn provider_config() -> impl Strategy<Value = AwsMachineProviderConfig> {
    let identity = (
        word(),
        prop_oneof![Just("m6i.xlarge"), Just("c7i.large"), Just("r7i.2xlarge")],
        option::of(prop_oneof![
            Just("Disabled"),
            Just("AMDEncryptedVirtualizationNestedPaging")
        ]),
        tags(),
        some_word(),
        some_word(),
        some_word(),
        option::of(any::<bool>()),
        option::of(prop_oneof![Just("ENA"), Just("EFA")]),
    );
    let placement = (
        option::of(vec(reference(), 1..3)),
        option::of(reference()),
        option::of(prop_oneof![Just("us-east-2a"), Just("us-east-2b")]),
        host_placement(),
        block_devices(),
        option::of(option::of("0\\.[0-9]{2}")),
        prop_oneof![Just("Optional"), Just("Required")],
        option::of((word(), option::of(1_i32..7))),
        some_word(),
        option::of(prop_oneof![Just("OnDemand"), Just("Spot"), Just("CapacityBlock")]),
    );
    (identity, placement).prop_map(
        |(
            (ami, instance_type, confidential, tags, profile, user_data, key_name, public_ip, nic),
            (groups, subnet, zone, (tenancy, host), block_devices, spot, auth, group, reservation, market),
        )| {
            AwsMachineProviderConfig {
                api_version: Some("machine.openshift.io/v1beta1".into()),
                kind: Some("AWSMachineProviderConfig".into()),
                metadata: None,
                ami: AwsResourceReference::id(format!("ami-{ami}")),
                instance_type: instance_type.into(),
                cpu_options: confidential.map(|c| CpuOptions {
                    confidential_compute: Some(c.into()),
                }),
                tags,
                iam_instance_profile: profile.map(AwsResourceReference::id),
                user_data_secret: user_data.map(|name| LocalObjectReference { name }),
                credentials_secret: Some(LocalObjectReference {
                    name: "aws-cloud-credentials".into(),
                }),
                key_name,
                device_index: 0,
                public_ip,
                network_interface_type: nic.map(Into::into),
                security_groups: groups,
                subnet: subnet.unwrap_or_default(),
                placement: Placement {
                    region: "us-east-2".into(),
                    availability_zone: zone.unwrap_or_default().into(),
                    tenancy,
                    host,
                },
                load_balancers: None,
                block_devices,
                spot_market_options: spot.map(|max_price| SpotMarketOptions { max_price }),
                metadata_service_options: MetadataServiceOptions {
                    authentication: Some(auth.into()),
                },
                placement_group_name: group.as_ref().map(|g| g.0.clone()).unwrap_or_default(),
                placement_group_partition: group.and_then(|g| g.1),
                capacity_reservation_id: reservation.map(|r| format!("cr-{r}")).unwrap_or_default(),
                market_type: market.map(Into::into),
            }
        },
    )
}

fn lifecycle_hooks() -> impl Strategy<Value = Option<LifecycleHooks>> {
    let hooks = || {
        option::of(btree_map(word(), word(), 1..3)).prop_map(|h| {
            h.map(|h| {
                h.into_iter()
                    .map(|(name, owner)| LifecycleHook { name, owner })
                    .collect::<Vec<_>>()
            })
        })
    };
    (hooks(), hooks()).prop_map(|(pre_drain, pre_terminate)| {
        (pre_drain.is_some() || pre_terminate.is_some()).then_some(LifecycleHooks {
            pre_drain,
            pre_terminate,
        })
    })
}

fn roles() -> impl Strategy<Value = Map> {
    option::of(prop_oneof![Just("worker"), Just("infra"), Just("gpu")]).prop_map(|role| {
        role.map(|r| {
            Map::from([
                (names::MAPI_ROLE_LABEL.into(), r.into()),
                (names::MAPI_TYPE_LABEL.into(), r.into()),
            ])
        })
        .unwrap_or_default()
    })
}

/// A MAPI Machine spec of the generators' provider config.
fn mapi_spec() -> impl Strategy<Value = mapi::MachineSpec> {
    (
        provider_config(),
        lifecycle_hooks(),
        user_map(),
        user_map(),
        any::<bool>(),
    )
        .prop_map(
            |(provider, lifecycle_hooks, node_labels, node_annotations, with_provider_id)| {
                let value = serde_json::to_value(&provider)
                    .ok()
                    .and_then(|v| RawObject::from_value(&v).ok());
                let zone = if provider.placement.availability_zone.is_empty() {
                    "us-east-2a".to_owned()
                } else {
                    provider.placement.availability_zone.clone()
                };
                mapi::MachineSpec {
                    metadata: (!node_labels.is_empty() || !node_annotations.is_empty()).then(|| {
                        mapi::ObjectMeta {
                            labels: (!node_labels.is_empty()).then_some(node_labels),
                            annotations: (!node_annotations.is_empty()).then_some(node_annotations),
                            ..mapi::ObjectMeta::default()
                        }
                    }),
                    lifecycle_hooks,
                    taints: None,
                    provider_id: with_provider_id.then(|| format!("aws:///{zone}/i-0abc123")),
                    provider_spec: Some(ProviderSpec { value }),
                    authoritative_api: None,
                }
            },
        )
}

fn mapi_machine() -> impl Strategy<Value = mapi::Machine> {
    (
        word(),
        user_map(),
        roles(),
        user_map(),
        any::<bool>(),
        option::of(word()),
        mapi_spec(),
    )
        .prop_map(|(name, mut labels, role, mut annotations, delete, owner, spec)| {
            labels.extend(role);
            if delete {
                annotations.insert(names::MAPI_DELETE_MACHINE_ANNOTATION.into(), "true".into());
            }
            mapi::Machine {
                metadata: ObjectMeta {
                    name: Some(name),
                    namespace: Some(names::MAPI_NAMESPACE.into()),
                    labels: (!labels.is_empty()).then_some(labels),
                    annotations: (!annotations.is_empty()).then_some(annotations),
                    owner_references: owner.map(|set| {
                        vec![OwnerReference {
                            api_version: "machine.openshift.io/v1beta1".into(),
                            kind: "MachineSet".into(),
                            name: set,
                            uid: "u".into(),
                            controller: Some(true),
                            block_owner_deletion: Some(true),
                        }]
                    }),
                    ..ObjectMeta::default()
                },
                spec,
                status: None,
            }
        })
}

fn mapi_machine_set() -> impl Strategy<Value = mapi::MachineSet> {
    (
        word(),
        user_map(),
        user_map(),
        option::of(0_i32..10),
        option::of(1_i32..600),
        option::of(prop_oneof![Just("Random"), Just("Newest"), Just("Oldest")]),
        roles(),
        mapi_spec(),
    )
        .prop_map(
            |(name, labels, template_labels, replicas, min_ready, policy, role, mut spec)| {
                spec.provider_id = None;
                let mut template_labels = template_labels;
                template_labels.extend(role);
                template_labels.insert(names::MACHINESET_LABEL.into(), name.clone());
                mapi::MachineSet {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        namespace: Some(names::MAPI_NAMESPACE.into()),
                        labels: (!labels.is_empty()).then_some(labels),
                        ..ObjectMeta::default()
                    },
                    spec: mapi::MachineSetSpec {
                        replicas,
                        min_ready_seconds: min_ready,
                        delete_policy: Some(policy.unwrap_or("Random").into()),
                        selector: LabelSelector {
                            match_labels: Some(Map::from([(names::MACHINESET_LABEL.into(), name)])),
                            match_expressions: None,
                        },
                        template: Some(mapi::MachineTemplateSpec {
                            metadata: Some(mapi::ObjectMeta {
                                labels: Some(template_labels),
                                ..mapi::ObjectMeta::default()
                            }),
                            spec: Some(spec),
                        }),
                        authoritative_api: None,
                    },
                    status: None,
                }
            },
        )
}

/// What a round trip keeps of a MAPI object's metadata and spec: `spec.metadata` merged
/// into the object's, derived labels and finalizers dropped.
fn normalize_mapi_meta(meta: &mut ObjectMeta, spec: &mut mapi::MachineSpec) {
    let node = spec.metadata.take().unwrap_or_default();
    let mut labels = meta.labels.take().unwrap_or_default();
    labels.extend(node.labels.unwrap_or_default());
    for derived in [
        names::MAPI_INSTANCE_TYPE_LABEL,
        names::MAPI_REGION_LABEL,
        names::MAPI_ZONE_LABEL,
    ] {
        labels.remove(derived);
    }
    if let Some(role) = labels.get(names::MAPI_ROLE_LABEL).cloned() {
        labels.remove(&format!("{}/{role}", names::NODE_ROLE_LABEL_PREFIX));
    }
    meta.labels = (!labels.is_empty()).then_some(labels);
    let mut annotations = meta.annotations.take().unwrap_or_default();
    annotations.extend(node.annotations.unwrap_or_default());
    meta.annotations = (!annotations.is_empty()).then_some(annotations);
    meta.finalizers = None;
    meta.owner_references = None;
}

fn normalize_mapi_machine(mut machine: mapi::Machine) -> mapi::Machine {
    let mut spec = machine.spec;
    normalize_mapi_meta(&mut machine.metadata, &mut spec);
    machine.spec = spec;
    machine
}

fn provider_json(spec: &mapi::MachineSpec) -> serde_json::Value {
    serde_json::to_value(spec.provider_spec.as_ref().and_then(|p| p.value.as_ref())).unwrap_or_default()
}

#[test]
fn mapi_machine_to_capi_and_back() {
    check(mapi_machine, |machine| {
        let capi =
            to_capi::convert_machine(&machine, &infra()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(capi.warnings.is_empty(), "{:?}", capi.warnings);
        let back = to_mapi::convert_machine(&capi.value.machine, &capi.value.aws_machine, &infra())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let original = normalize_mapi_machine(machine);
        let back = normalize_mapi_machine(back.value);
        prop_assert_eq!(provider_json(&back.spec), provider_json(&original.spec));
        prop_assert_eq!(back, original);
        Ok(())
    });
}

#[test]
fn mapi_machine_set_to_capi_and_back() {
    check(mapi_machine_set, |set| {
        let capi =
            to_capi::convert_machine_set(&set, &infra()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back = to_mapi::convert_machine_set(&capi.value.machine_set, &capi.value.template, &infra())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let original = normalize_mapi_set(set);
        let back = normalize_mapi_set(back.value);
        prop_assert_eq!(back, original);
        Ok(())
    });
}

fn normalize_mapi_set(mut set: mapi::MachineSet) -> mapi::MachineSet {
    let mut template = set.spec.template.take().unwrap_or_default();
    let mut spec = template.spec.take().unwrap_or_default();
    let mut meta = ObjectMeta {
        labels: template.metadata.as_ref().and_then(|m| m.labels.clone()),
        annotations: template.metadata.as_ref().and_then(|m| m.annotations.clone()),
        ..ObjectMeta::default()
    };
    normalize_mapi_meta(&mut meta, &mut spec);
    template.metadata = Some(mapi::ObjectMeta {
        labels: meta.labels,
        annotations: meta.annotations,
        ..mapi::ObjectMeta::default()
    });
    template.spec = Some(spec);
    set.spec.template = Some(template);
    set
}

// ---- CAPI → MAPI → CAPI ----

fn capa_spec() -> impl Strategy<Value = AwsMachineSpec> {
    // The canonical AWSMachine spec: what the MAPI → CAPI conversion writes is a subset of
    // it, so it is generated from the MAPI generator and then varied in the fields the
    // Machine API side keeps differently.
    (provider_config(), any::<bool>()).prop_map(|(provider, spot_without_price)| {
        let machine = mapi::Machine {
            metadata: ObjectMeta {
                name: Some("m".into()),
                ..ObjectMeta::default()
            },
            spec: mapi::MachineSpec {
                provider_spec: Some(ProviderSpec {
                    value: serde_json::to_value(&provider)
                        .ok()
                        .and_then(|v| RawObject::from_value(&v).ok()),
                }),
                ..mapi::MachineSpec::default()
            },
            status: None,
        };
        let mut spec = to_capi::convert_machine(&machine, &infra())
            .map(|c| c.value.aws_machine.spec)
            .unwrap_or_default();
        if spot_without_price && spec.spot_market_options.is_some() {
            spec.spot_market_options = Some(AwsMachineSpotMarketOptions { max_price: None });
        }
        spec
    })
}

/// A CAPA spec written directly (not through the MAPI generator), for the fields whose
/// CAPA spelling has more forms than the MAPI → CAPI conversion produces.
fn capa_spec_direct() -> impl Strategy<Value = AwsMachineSpec> {
    (
        word(),
        option::of(btree_map(word(), word(), 1..3)),
        option::of(vec(
            word().prop_map(|id| AwsMachineAdditionalSecurityGroups {
                id: Some(format!("sg-{id}")),
                filters: None,
            }),
            1..3,
        )),
        option::of(filters().prop_map(|f| {
            AwsMachineSubnet {
                id: None,
                filters: Some(
                    f.into_iter()
                        .map(|f| AwsMachineSubnetFilters {
                            name: f.name,
                            values: f.values.unwrap_or_default(),
                        })
                        .collect(),
                ),
            }
        })),
        option::of((
            8_i64..500,
            option::of(100_i64..9000),
            option::of("arn:aws:kms:[a-z]{3}"),
        )),
        vec((8_i64..500, option::of("key-[a-z]{3}")), 0..3),
        prop_oneof![
            Just((Some(AwsMachineHostAffinity::Default), None, None)),
            "[0-9a-f]{8}".prop_map(|id| (Some(AwsMachineHostAffinity::Host), Some(format!("h-{id}")), None)),
            option::of(btree_map(word(), word(), 1..3)).prop_map(|tags| (
                Some(AwsMachineHostAffinity::Host),
                None,
                Some(AwsMachineDynamicHostAllocation { tags })
            )),
        ],
        option::of(prop_oneof![
            Just(AwsMachineTenancy::Default),
            Just(AwsMachineTenancy::Dedicated)
        ]),
        option::of(prop_oneof![
            Just(AwsMachineMarketType::Spot),
            Just(AwsMachineMarketType::OnDemand)
        ]),
        option::of(prop_oneof![
            Just(AwsMachineNetworkInterfaceType::Efa),
            Just(AwsMachineNetworkInterfaceType::Interface)
        ]),
        prop_oneof![
            Just(AwsMachineInstanceMetadataOptionsHttpTokens::Optional),
            Just(AwsMachineInstanceMetadataOptionsHttpTokens::Required)
        ],
        option::of(prop_oneof![
            Just(AwsMachineCpuOptionsConfidentialCompute::Disabled),
            Just(AwsMachineCpuOptionsConfidentialCompute::AmdEncryptedVirtualizationNestedPaging)
        ]),
    )
        .prop_map(
            |(
                ami,
                tags,
                groups,
                subnet,
                root,
                others,
                (affinity, host_id, dynamic),
                tenancy,
                market,
                nic,
                tokens,
                cpu,
            )| AwsMachineSpec {
                ami: Some(AwsMachineAmi {
                    id: Some(format!("ami-{ami}")),
                    eks_lookup_type: None,
                }),
                additional_tags: tags,
                additional_security_groups: groups,
                subnet,
                root_volume: root.map(|(size, iops, key)| AwsMachineRootVolume {
                    size,
                    iops,
                    encryption_key: key,
                    ..AwsMachineRootVolume::default()
                }),
                non_root_volumes: (!others.is_empty()).then(|| {
                    others
                        .into_iter()
                        .enumerate()
                        .map(|(i, (size, key))| AwsMachineNonRootVolumes {
                            device_name: Some(format!("/dev/xvd{}", (b'b' + i as u8) as char)),
                            size,
                            encryption_key: key,
                            ..AwsMachineNonRootVolumes::default()
                        })
                        .collect()
                }),
                host_affinity: affinity,
                host_id,
                dynamic_host_allocation: dynamic,
                tenancy,
                market_type: market,
                network_interface_type: nic,
                instance_metadata_options: Some(AwsMachineInstanceMetadataOptions {
                    http_endpoint: Some(AwsMachineInstanceMetadataOptionsHttpEndpoint::Enabled),
                    http_put_response_hop_limit: Some(1),
                    http_tokens: Some(tokens),
                    instance_metadata_tags: Some(
                        AwsMachineInstanceMetadataOptionsInstanceMetadataTags::Disabled,
                    ),
                }),
                ignition: Some(AwsMachineIgnition {
                    storage_type: Some(AwsMachineIgnitionStorageType::UnencryptedUserData),
                    ..AwsMachineIgnition::default()
                }),
                cpu_options: cpu.map(|c| AwsMachineCpuOptions {
                    confidential_compute: Some(c),
                }),
                instance_type: "m6i.large".into(),
                ..AwsMachineSpec::default()
            },
        )
}

fn capi_meta() -> impl Strategy<Value = (Map, Map)> {
    (
        user_map(),
        option::of(prop_oneof![Just("worker"), Just("infra")]),
        user_map(),
        option::of(btree_map(word(), word(), 1..3)),
        any::<bool>(),
    )
        .prop_map(|(mut labels, role, mut annotations, hooks, delete)| {
            if let Some(role) = role {
                labels.insert(format!("node-role.kubernetes.io/{role}"), String::new());
            }
            labels.insert(names::CLUSTER_NAME_LABEL.into(), "demo-x7k2p".into());
            for (name, owner) in hooks.into_iter().flatten() {
                annotations.insert(format!("{}/{name}", names::PRE_DRAIN_HOOK_PREFIX), owner);
            }
            if delete {
                annotations.insert(names::CAPI_DELETE_MACHINE_ANNOTATION.into(), String::new());
            }
            (labels, annotations)
        })
}

fn capi_machine_spec(infra_kind: &'static str) -> impl Strategy<Value = capi::MachineSpec> {
    (
        some_word(),
        option::of(prop_oneof![Just("us-east-2a"), Just("us-east-2c")]),
    )
        .prop_map(move |(secret, zone)| capi::MachineSpec {
            cluster_name: "demo-x7k2p".into(),
            bootstrap: capi::Bootstrap {
                config_ref: None,
                data_secret_name: secret,
            },
            infrastructure_ref: sync_core::api::ContractVersionedObjectReference {
                api_group: "infrastructure.cluster.x-k8s.io".into(),
                kind: infra_kind.into(),
                name: "filled-in".into(),
            },
            failure_domain: zone.map(Into::into),
            deletion: Some(capi::MachineDeletionSpec {
                node_deletion_timeout_seconds: Some(10),
                ..capi::MachineDeletionSpec::default()
            }),
            ..capi::MachineSpec::default()
        })
}

fn capi_pair() -> impl Strategy<Value = (capi::Machine, AwsMachine)> {
    (
        word(),
        capi_meta(),
        capi_machine_spec("AWSMachine"),
        prop_oneof![capa_spec(), capa_spec_direct()],
        any::<bool>(),
    )
        .prop_map(
            |(name, (labels, annotations), mut spec, mut aws_spec, provisioned)| {
                spec.infrastructure_ref.name = name.clone();
                if provisioned {
                    let zone = spec.failure_domain.clone().unwrap_or_default();
                    let provider_id = format!("aws:///{zone}/i-0def456");
                    spec.provider_id = Some(provider_id.clone());
                    aws_spec.provider_id = Some(provider_id);
                    aws_spec.instance_id = Some("i-0def456".into());
                }
                let meta = ObjectMeta {
                    name: Some(name),
                    namespace: Some(names::CAPI_NAMESPACE.into()),
                    labels: Some(labels),
                    annotations: (!annotations.is_empty()).then_some(annotations),
                    ..ObjectMeta::default()
                };
                let machine = capi::Machine {
                    metadata: ObjectMeta {
                        finalizers: Some(vec![names::CAPI_MACHINE_FINALIZER.into()]),
                        ..meta.clone()
                    },
                    spec,
                    status: None,
                };
                (
                    machine,
                    AwsMachine {
                        metadata: meta,
                        spec: aws_spec,
                        status: None,
                    },
                )
            },
        )
}

fn retype<From: serde::Serialize, To: serde::de::DeserializeOwned + Default>(value: &From) -> To {
    serde_json::to_value(value)
        .and_then(serde_json::from_value)
        .unwrap_or_default()
}

fn capi_set() -> impl Strategy<Value = (capi::MachineSet, AwsMachineTemplate)> {
    (
        word(),
        user_map(),
        capi_meta(),
        capi_machine_spec("AWSMachineTemplate"),
        prop_oneof![capa_spec(), capa_spec_direct()],
        option::of(0_i32..10),
        option::of(1_i32..600),
        prop_oneof![Just("Random"), Just("Newest"), Just("Oldest")],
    )
        .prop_map(
            |(
                name,
                labels,
                (template_labels, template_annotations),
                mut spec,
                aws_spec,
                replicas,
                min_ready,
                order,
            )| {
                let template_name =
                    names::template_name(&name, &serde_json::to_vec(&aws_spec).unwrap_or_default());
                spec.infrastructure_ref.name = template_name.clone();
                spec.min_ready_seconds = min_ready;
                let mut set_labels = labels;
                set_labels.insert(names::CLUSTER_NAME_LABEL.into(), "demo-x7k2p".into());
                let mut template_labels = template_labels;
                template_labels.insert(names::MACHINESET_LABEL.into(), name.clone());
                let set = capi::MachineSet {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        namespace: Some(names::CAPI_NAMESPACE.into()),
                        labels: Some(set_labels),
                        ..ObjectMeta::default()
                    },
                    spec: capi::MachineSetSpec {
                        cluster_name: "demo-x7k2p".into(),
                        replicas,
                        selector: LabelSelector {
                            match_labels: Some(Map::from([(names::MACHINESET_LABEL.into(), name.clone())])),
                            match_expressions: None,
                        },
                        machine_naming: None,
                        deletion: Some(capi::MachineSetDeletionSpec {
                            order: Some(order.into()),
                        }),
                        template: capi::MachineTemplateSpec {
                            metadata: Some(capi::TemplateMeta {
                                labels: Some(template_labels),
                                annotations: (!template_annotations.is_empty())
                                    .then_some(template_annotations),
                            }),
                            spec,
                        },
                    },
                    status: None,
                };
                let template = AwsMachineTemplate {
                    metadata: ObjectMeta {
                        name: Some(template_name),
                        namespace: Some(names::CAPI_NAMESPACE.into()),
                        labels: Some(Map::from([(names::MACHINESET_LABEL.into(), name)])),
                        ..ObjectMeta::default()
                    },
                    spec: conversion::aws::capa::AwsMachineTemplateSpec {
                        template: conversion::aws::capa::awsmachinetemplates::AwsMachineTemplateTemplate {
                            metadata: None,
                            spec: retype(&aws_spec),
                        },
                    },
                    status: None,
                };
                (set, template)
            },
        )
}

#[test]
fn capi_machine_to_mapi_and_back() {
    check(capi_pair, |(machine, aws_machine)| {
        let mapi = to_mapi::convert_machine(&machine, &aws_machine, &infra())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(mapi.warnings.is_empty(), "{:?}", mapi.warnings);
        let back = to_capi::convert_machine(&mapi.value, &infra())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&back.value.aws_machine.spec, &aws_machine.spec);
        prop_assert_eq!(&back.value.aws_machine, &aws_machine);
        prop_assert_eq!(&back.value.machine, &machine);
        Ok(())
    });
}

#[test]
fn capi_machine_set_to_mapi_and_back() {
    check(capi_set, |(set, template)| {
        let mapi = to_mapi::convert_machine_set(&set, &template, &infra())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back = to_capi::convert_machine_set(&mapi.value, &infra())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&back.value.template, &template);
        prop_assert_eq!(&back.value.machine_set, &set);
        Ok(())
    });
}

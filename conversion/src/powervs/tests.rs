//! The PowerVS half, field by field in both directions (every row asserts the converted
//! value or the exact error or warning path), the statuses, a round trip and the
//! installer's providerSpec.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use proptest::prelude::*;
use serde_json::{Value, json};
use sync_core::api::Infrastructure;
use sync_core::api::infrastructure::{InfrastructureStatus, PlatformStatus, PowerVsPlatformStatus};
use sync_core::api::mapi;

use super::capibm::{IbmPowerVsMachineSpec, IbmPowerVsMachineStatus};
use super::provider::PowerVsMachineProviderConfig;
use super::{PowerVs, Provider};
use crate::errors::{ConversionErrors, Converted, FieldPath, Report};
use crate::provider::MachineFacts;

fn facts() -> PowerVs {
    PowerVs {
        infrastructure_name: "mycluster-8kq4r".into(),
        region: "dal".into(),
        zone: "dal10".into(),
    }
}

/// An installer-shaped providerSpec.
fn base_config() -> Value {
    json!({
        "apiVersion": "machine.openshift.io/v1", "kind": "PowerVSMachineProviderConfig",
        "metadata": {"creationTimestamp": null},
        "serviceInstance": {"type": "ID", "id": "si-1"},
        "image": {"type": "Name", "name": "rhcos-1"},
        "network": {"type": "RegEx", "regex": "^DHCP.*$"},
        "userDataSecret": {"name": "worker-user-data"},
        "credentialsSecret": {"name": "powervs-credentials"},
        "keyPairName": "key-1", "systemType": "s922", "processorType": "Shared",
        "processors": "0.5", "memoryGiB": 32
    })
}

/// `base_config()` as converted.
fn base_spec() -> Value {
    json!({
        "serviceInstanceID": "",
        "serviceInstance": {"id": "si-1"},
        "image": {"name": "rhcos-1"},
        "network": {"regex": "^DHCP.*$"},
        "sshKey": "key-1", "systemType": "s922", "processorType": "Shared",
        "processors": "0.5", "memoryGiB": 32
    })
}

/// RFC 7386: `null` removes a key.
fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                if value.is_null() {
                    target.remove(key);
                } else {
                    merge(target.entry(key.clone()).or_insert(Value::Null), value);
                }
            }
        }
        (target, patch) => *target = patch.clone(),
    }
}

fn patched<T: serde::de::DeserializeOwned>(mut base: Value, patch: &Value) -> T {
    merge(&mut base, patch);
    serde_json::from_value(base).unwrap_or_else(|e| panic!("test input does not decode: {e}"))
}

type Outcome<T> = Result<Converted<T>, ConversionErrors>;

fn to_capi(patch: &Value) -> Outcome<Value> {
    let config: PowerVsMachineProviderConfig = patched(base_config(), patch);
    let mut report = Report::default();
    let infra = facts().to_infra_spec(
        &config,
        false,
        &FieldPath::new("spec.providerSpec.value"),
        &mut report,
    );
    report.finish(json!({
        "spec": serde_json::to_value(&infra.spec).unwrap_or_default(),
        "failureDomain": infra.failure_domain,
        "userDataSecret": infra.user_data_secret,
    }))
}

fn to_mapi_with(patch: &Value, user_data: Option<&str>) -> Outcome<Value> {
    let spec: IbmPowerVsMachineSpec = patched(base_spec(), patch);
    let machine = MachineFacts {
        failure_domain: None,
        user_data_secret: user_data,
        control_plane: false,
    };
    let mut report = Report::default();
    let config = facts().to_config(&spec, &machine, &FieldPath::new("spec"), &mut report);
    report.finish(serde_json::to_value(&config).unwrap_or_default())
}

fn to_mapi(patch: &Value) -> Outcome<Value> {
    to_mapi_with(patch, Some("worker-user-data"))
}

fn value_at(outcome: &Outcome<Value>, pointer: &str, row: &Value) -> Value {
    match outcome {
        Ok(converted) => {
            assert!(
                converted.warnings.is_empty(),
                "{row}: warnings {:?}",
                converted.warnings
            );
            converted.value.pointer(pointer).cloned().unwrap_or(Value::Null)
        }
        Err(errors) => panic!("{row}: {errors}"),
    }
}

fn error_paths(outcome: &Outcome<Value>) -> Vec<String> {
    match outcome {
        Ok(converted) => panic!("expected errors, got {}", converted.value),
        Err(errors) => errors.errors.iter().map(|e| e.path.to_string()).collect(),
    }
}

fn warning_paths(outcome: &Outcome<Value>) -> Vec<String> {
    match outcome {
        Ok(converted) => converted.warnings.iter().map(|w| w.path.to_string()).collect(),
        Err(errors) => panic!("expected only warnings: {errors}"),
    }
}

#[test]
fn provider_spec_fields_map_to_the_machine_spec() {
    // (providerSpec patch, pointer in the result, expected)
    let rows = [
        (json!({}), "/spec", base_spec()),
        (
            json!({"serviceInstance": {"type": "Name", "id": null, "name": "ws"}}),
            "/spec/serviceInstance",
            json!({"name": "ws"}),
        ),
        (
            json!({"serviceInstance": {"type": "RegEx", "id": null, "regex": "^w"}}),
            "/spec/serviceInstance",
            json!({"regex": "^w"}),
        ),
        (
            json!({"image": {"type": "ID", "name": null, "id": "img-1"}}),
            "/spec/image",
            json!({"id": "img-1"}),
        ),
        (
            json!({"image": {"type": "RegEx", "name": null, "regex": "^rhcos"}}),
            "/spec/image",
            json!({"regex": "^rhcos"}),
        ),
        (
            json!({"network": {"type": "ID", "regex": null, "id": "net-1"}}),
            "/spec/network",
            json!({"id": "net-1"}),
        ),
        (
            json!({"network": {"type": "Name", "regex": null, "name": "n"}}),
            "/spec/network",
            json!({"name": "n"}),
        ),
        (json!({"keyPairName": "k2"}), "/spec/sshKey", json!("k2")),
        (json!({"keyPairName": ""}), "/spec/sshKey", Value::Null),
        (json!({"systemType": "e1080"}), "/spec/systemType", json!("e1080")),
        (json!({"systemType": null}), "/spec/systemType", Value::Null),
        (
            json!({"processorType": "Dedicated"}),
            "/spec/processorType",
            json!("Dedicated"),
        ),
        (
            json!({"processorType": "Capped"}),
            "/spec/processorType",
            json!("Capped"),
        ),
        (json!({"processors": 4}), "/spec/processors", json!(4)),
        (json!({"processors": null}), "/spec/processors", Value::Null),
        (json!({"memoryGiB": 64}), "/spec/memoryGiB", json!(64)),
        (json!({"memoryGiB": null}), "/spec/memoryGiB", Value::Null),
        (json!({}), "/userDataSecret", json!("worker-user-data")),
        (json!({"userDataSecret": null}), "/userDataSecret", Value::Null),
        (json!({}), "/failureDomain", Value::Null),
        (json!({"credentialsSecret": null}), "/spec", base_spec()),
        (json!({"metadata": {}}), "/spec", base_spec()),
        (json!({"loadBalancers": []}), "/spec", base_spec()),
    ];
    for (patch, pointer, expected) in rows {
        assert_eq!(value_at(&to_capi(&patch), pointer, &patch), expected, "{patch}");
    }
}

#[test]
fn provider_spec_fields_that_do_not_convert_are_errors_at_their_paths() {
    let at = |field: &str| format!("spec.providerSpec.value.{field}");
    let rows = [
        (
            json!({"serviceInstance": {"type": "Guid"}}),
            vec![at("serviceInstance.type")],
        ),
        (
            json!({"serviceInstance": {"type": null}}),
            vec![at("serviceInstance.type")],
        ),
        (
            json!({"serviceInstance": {"id": null}}),
            vec![at("serviceInstance.id")],
        ),
        (json!({"image": {"type": "Image"}}), vec![at("image.type")]),
        (json!({"image": {"name": ""}}), vec![at("image.name")]),
        (json!({"network": {"type": null}}), vec![at("network.type")]),
        (json!({"network": {"type": "ID"}}), vec![at("network.id")]),
        (json!({"systemType": "s1234"}), vec![at("systemType")]),
        (json!({"processorType": "shared"}), vec![at("processorType")]),
        (
            json!({"credentialsSecret": {"name": "mine"}}),
            vec![at("credentialsSecret.name")],
        ),
        (json!({"metadata": {"name": "x"}}), vec![at("metadata")]),
        (
            json!({"loadBalancers": [{"name": "lb", "type": "Application"}]}),
            vec![at("loadBalancers")],
        ),
        (
            json!({"serviceInstance": {"type": "X"}, "image": {"type": "Y"}, "network": {"type": "Z"}}),
            vec![at("serviceInstance.type"), at("image.type"), at("network.type")],
        ),
    ];
    for (patch, expected) in rows {
        assert_eq!(error_paths(&to_capi(&patch)), expected, "{patch}");
    }
    let control_plane: PowerVsMachineProviderConfig = patched(
        base_config(),
        &json!({"loadBalancers": [{"name": "lb-int", "type": "Application"}]}),
    );
    let mut report = Report::default();
    facts().to_infra_spec(&control_plane, true, &FieldPath::new("p"), &mut report);
    assert!(
        report.finish(()).is_err(),
        "control plane load balancers are refused too"
    );
}

#[test]
fn provider_spec_fields_the_type_does_not_select_are_warned_about() {
    let rows = [
        (
            json!({"serviceInstance": {"name": "ws"}}),
            vec!["spec.providerSpec.value.serviceInstance.name"],
        ),
        (
            json!({"image": {"id": "i", "regex": "r"}}),
            vec![
                "spec.providerSpec.value.image.id",
                "spec.providerSpec.value.image.regex",
            ],
        ),
        (
            json!({"network": {"name": "n"}}),
            vec!["spec.providerSpec.value.network.name"],
        ),
    ];
    for (patch, expected) in rows {
        let outcome = to_capi(&patch);
        assert_eq!(warning_paths(&outcome), expected, "{patch}");
    }
    // The selected one is still used.
    let outcome = to_capi(&json!({"image": {"id": "i"}}));
    assert_eq!(
        outcome.ok().map(|c| c.value["spec"]["image"].clone()),
        Some(json!({"name": "rhcos-1"}))
    );
}

#[test]
fn machine_spec_fields_map_to_the_provider_spec() {
    let rows = [
        (
            json!({"serviceInstance": {"id": null, "name": "ws"}}),
            "/serviceInstance",
            json!({"type": "Name", "name": "ws"}),
        ),
        (
            json!({"serviceInstance": {"id": null, "regex": "^w"}}),
            "/serviceInstance",
            json!({"type": "RegEx", "regex": "^w"}),
        ),
        (
            json!({"serviceInstance": null, "serviceInstanceID": "si-old"}),
            "/serviceInstance",
            json!({"type": "ID", "id": "si-old"}),
        ),
        (json!({}), "/serviceInstance", json!({"type": "ID", "id": "si-1"})),
        (
            json!({"image": {"name": null, "id": "img-1"}}),
            "/image",
            json!({"type": "ID", "id": "img-1"}),
        ),
        (
            json!({"image": {"name": null, "regex": "^r"}}),
            "/image",
            json!({"type": "RegEx", "regex": "^r"}),
        ),
        (
            json!({"image": null, "imageRef": {"name": "rhcos-ref"}}),
            "/image",
            json!({"type": "Name", "name": "rhcos-ref"}),
        ),
        (
            json!({"network": {"regex": null, "id": "net-1"}}),
            "/network",
            json!({"type": "ID", "id": "net-1"}),
        ),
        (
            json!({"network": {"regex": null, "name": "n"}}),
            "/network",
            json!({"type": "Name", "name": "n"}),
        ),
        (
            json!({}),
            "/network",
            json!({"type": "RegEx", "regex": "^DHCP.*$"}),
        ),
        (json!({}), "/keyPairName", json!("key-1")),
        (json!({"sshKey": null}), "/keyPairName", json!("")),
        (json!({"systemType": "s1022"}), "/systemType", json!("s1022")),
        (json!({"systemType": null}), "/systemType", Value::Null),
        (
            json!({"processorType": "Dedicated"}),
            "/processorType",
            json!("Dedicated"),
        ),
        (json!({"processors": 2}), "/processors", json!(2)),
        (json!({"memoryGiB": 128}), "/memoryGiB", json!(128)),
        (
            json!({"providerID": "ibmpowervs://dal/dal10/si-1/vm-1"}),
            "/providerID",
            Value::Null,
        ),
        (json!({}), "/userDataSecret", json!({"name": "worker-user-data"})),
        (
            json!({}),
            "/credentialsSecret",
            json!({"name": "powervs-credentials"}),
        ),
        (json!({}), "/apiVersion", json!("machine.openshift.io/v1")),
        (json!({}), "/kind", json!("PowerVSMachineProviderConfig")),
        (json!({}), "/loadBalancers", Value::Null),
    ];
    for (patch, pointer, expected) in rows {
        assert_eq!(value_at(&to_mapi(&patch), pointer, &patch), expected, "{patch}");
    }
    let no_user_data = to_mapi_with(&json!({}), None);
    assert_eq!(
        value_at(&no_user_data, "/userDataSecret", &json!("none")),
        Value::Null
    );
}

#[test]
fn machine_spec_fields_that_do_not_convert_are_errors_at_their_paths() {
    let rows = [
        (json!({"serviceInstance": null}), vec!["spec.serviceInstance"]),
        (
            json!({"serviceInstance": {"id": null}}),
            vec!["spec.serviceInstance"],
        ),
        (json!({"image": null}), vec!["spec.image"]),
        (json!({"image": {"name": null}}), vec!["spec.image"]),
        (json!({"network": {"regex": null}}), vec!["spec.network"]),
        (
            json!({"serviceInstance": null, "image": null, "network": {"regex": null}}),
            vec!["spec.serviceInstance", "spec.image", "spec.network"],
        ),
    ];
    for (patch, expected) in rows {
        assert_eq!(error_paths(&to_mapi(&patch)), expected, "{patch}");
    }
}

#[test]
fn machine_spec_fields_that_lose_to_another_are_warned_about() {
    let rows = [
        (
            json!({"serviceInstanceID": "si-old"}),
            vec!["spec.serviceInstance"],
            "/serviceInstance/id",
            json!("si-old"),
        ),
        (
            json!({"imageRef": {"name": "ref"}}),
            vec!["spec.imageRef"],
            "/image/name",
            json!("rhcos-1"),
        ),
        (
            json!({"image": {"id": "img-1"}}),
            vec!["spec.image.name"],
            "/image/id",
            json!("img-1"),
        ),
        (
            json!({"network": {"id": "n-1", "name": "n"}}),
            vec!["spec.network.name", "spec.network.regex"],
            "/network/id",
            json!("n-1"),
        ),
        (
            json!({"serviceInstance": {"name": "ws", "regex": "r"}}),
            vec!["spec.serviceInstance.name", "spec.serviceInstance.regex"],
            "/serviceInstance/id",
            json!("si-1"),
        ),
    ];
    for (patch, expected, pointer, value) in rows {
        let outcome = to_mapi(&patch);
        assert_eq!(warning_paths(&outcome), expected, "{patch}");
        assert_eq!(
            outcome.ok().and_then(|c| c.value.pointer(pointer).cloned()),
            Some(value),
            "{patch}"
        );
    }
}

#[test]
fn labels_are_the_system_type_and_the_cluster_s_region_and_zone() {
    let spec: IbmPowerVsMachineSpec = patched(base_spec(), &json!({}));
    assert_eq!(
        facts().machine_labels(&spec, Some("ignored")),
        [
            ("machine.openshift.io/instance-type", "s922".to_owned()),
            ("machine.openshift.io/region", "dal".to_owned()),
            ("machine.openshift.io/zone", "dal10".to_owned()),
        ]
    );
    let bare: IbmPowerVsMachineSpec = patched(base_spec(), &json!({"systemType": null}));
    let no_zone = PowerVs {
        zone: String::new(),
        ..facts()
    };
    assert_eq!(
        no_zone.machine_labels(&bare, None),
        [("machine.openshift.io/region", "dal".to_owned())]
    );
}

#[test]
fn the_provider_id_is_left_to_cluster_api_provider_ibm_cloud() {
    let mut spec: IbmPowerVsMachineSpec = patched(base_spec(), &json!({}));
    let mut report = Report::default();
    facts().set_provider_id(
        "ibmpowervs://dal/dal10/si-1/vm-1",
        &mut spec,
        &FieldPath::new("spec"),
        &mut report,
    );
    assert_eq!(spec.provider_id, None);
    assert!(report.finish(()).is_ok_and(|c| c.warnings.is_empty()));
}

fn infrastructure(name: &str, platform: &str) -> Infrastructure {
    let mut infra = Infrastructure::new("cluster", Default::default());
    infra.status = Some(InfrastructureStatus {
        infrastructure_name: Some(name.into()),
        platform_status: Some(PlatformStatus {
            type_: Some(platform.into()),
            power_vs: Some(PowerVsPlatformStatus {
                region: Some("dal".into()),
                zone: Some("dal10".into()),
                resource_group: Some("rg".into()),
            }),
            ..PlatformStatus::default()
        }),
        ..InfrastructureStatus::default()
    });
    infra
}

#[test]
fn facts_come_from_a_power_vs_infrastructure() {
    assert_eq!(
        PowerVs::from_infrastructure(&infrastructure("mycluster-8kq4r", "PowerVS")),
        Ok(facts())
    );
    let errors = PowerVs::from_infrastructure(&infrastructure("", "AWS"))
        .err()
        .unwrap_or_default();
    let paths: Vec<String> = errors.errors.iter().map(|e| e.path.to_string()).collect();
    assert_eq!(
        paths,
        [
            "infrastructure.status.infrastructureName",
            "infrastructure.status.platformStatus.type"
        ]
    );
    let power_vs = facts();
    assert_eq!(power_vs.cluster_name(), "mycluster-8kq4r");
    assert_eq!(
        power_vs.kinds().api_version(),
        "infrastructure.cluster.x-k8s.io/v1beta2"
    );
    assert_eq!(power_vs.kinds().machine, "IBMPowerVSMachine");
    assert_eq!(power_vs.provider_spec_kind().kind, "PowerVSMachineProviderConfig");
}

fn now() -> Time {
    serde_json::from_value(json!("2026-01-02T03:04:05Z")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn the_machine_status_becomes_the_infra_machine_status() {
    let status: mapi::MachineStatus = serde_json::from_value(json!({
        "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
        "providerStatus": {"instanceId": "vm-1", "instanceState": "ACTIVE", "serviceInstanceID": "si-1"}
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    let mut report = Report::default();
    let infra =
        serde_json::to_value(facts().to_infra_status(&Default::default(), &status, &now(), &mut report))
            .unwrap_or_default();
    assert!(report.finish(()).is_ok());
    for (pointer, expected) in [
        ("/instanceID", json!("vm-1")),
        ("/instanceState", json!("ACTIVE")),
        ("/ready", json!(true)),
        ("/region", json!("dal")),
        ("/zone", json!("dal10")),
        (
            "/addresses",
            json!([{"type": "InternalIP", "address": "10.0.0.5"}]),
        ),
        ("/conditions/0/type", json!("Ready")),
        ("/conditions/0/status", json!("True")),
        ("/conditions/0/lastTransitionTime", json!("2026-01-02T03:04:05Z")),
        ("/conditions/1/type", json!("InstanceReady")),
    ] {
        assert_eq!(infra.pointer(pointer), Some(&expected), "{pointer}");
    }
    let building: mapi::MachineStatus =
        serde_json::from_value(json!({"providerStatus": {"instanceState": "BUILD"}}))
            .unwrap_or_else(|e| panic!("{e}"));
    let mut report = Report::default();
    let infra = facts().to_infra_status(&Default::default(), &building, &now(), &mut report);
    assert_eq!(infra.ready, Some(false));
    let bad: mapi::MachineStatus = serde_json::from_value(json!({"providerStatus": {"instanceId": 7}}))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut report = Report::default();
    facts().to_infra_status(&Default::default(), &bad, &now(), &mut report);
    let paths: Vec<String> = report
        .finish(())
        .err()
        .unwrap_or_default()
        .errors
        .iter()
        .map(|e| e.path.to_string())
        .collect();
    assert_eq!(paths, ["status.providerStatus"]);
}

#[test]
fn the_infra_machine_status_becomes_the_provider_status() {
    let spec: IbmPowerVsMachineSpec = patched(base_spec(), &json!({}));
    let status: IbmPowerVsMachineStatus = serde_json::from_value(json!({
        "instanceID": "vm-1", "instanceState": "ACTIVE", "ready": true
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    let converted = facts().to_provider_status(&spec, &status, &now());
    assert_eq!(converted.instance_state.as_deref(), Some("ACTIVE"));
    let value = converted.value.unwrap_or_default();
    for (pointer, expected) in [
        ("/apiVersion", json!("machine.openshift.io/v1")),
        ("/kind", json!("PowerVSMachineProviderStatus")),
        ("/instanceId", json!("vm-1")),
        ("/instanceState", json!("ACTIVE")),
        ("/serviceInstanceID", json!("si-1")),
        ("/conditions/0/type", json!("MachineCreation")),
        ("/conditions/0/status", json!("True")),
        ("/conditions/0/reason", json!("MachineCreationSucceeded")),
    ] {
        assert_eq!(value.pointer(pointer), Some(&expected), "{pointer}");
    }
    let pending = facts().to_provider_status(&spec, &IbmPowerVsMachineStatus::default(), &now());
    assert_eq!(pending.instance_state, None);
    assert_eq!(
        pending
            .value
            .and_then(|v| v.pointer("/conditions/0/status").cloned()),
        Some(json!("False"))
    );
}

#[test]
fn the_installer_s_worker_provider_spec_converts_without_problems() {
    let set: Value = serde_saphyr::from_str(include_str!(
        "../../tests/fixtures/powervs/installer-worker-machineset.yaml"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let config: PowerVsMachineProviderConfig =
        serde_json::from_value(set["spec"]["template"]["spec"]["providerSpec"]["value"].clone())
            .unwrap_or_else(|e| panic!("{e}"));
    let mut report = Report::default();
    let path = FieldPath::new("spec.template.spec.providerSpec.value");
    let infra = facts().to_infra_spec(&config, false, &path, &mut report);
    let converted = report.finish(infra).unwrap_or_else(|e| panic!("{e}"));
    assert!(converted.warnings.is_empty(), "{:?}", converted.warnings);
    let infra = converted.value;
    assert_eq!(infra.user_data_secret.as_deref(), Some("worker-user-data"));
    let machine = MachineFacts {
        failure_domain: None,
        user_data_secret: infra.user_data_secret.as_deref(),
        control_plane: false,
    };
    let mut report = Report::default();
    let back = facts().to_config(&infra.spec, &machine, &FieldPath::new("spec"), &mut report);
    assert!(report.finish(()).is_ok_and(|c| c.warnings.is_empty()));
    let expected = PowerVsMachineProviderConfig {
        metadata: None,
        ..config
    };
    assert_eq!(back, expected, "the installer's providerSpec round-trips");
}

fn resource() -> impl Strategy<Value = Value> {
    let text = "[a-z0-9^$.*-]{1,12}";
    prop_oneof![
        text.prop_map(|v| json!({"type": "ID", "id": v})),
        text.prop_map(|v| json!({"type": "Name", "name": v})),
        text.prop_map(|v| json!({"type": "RegEx", "regex": v})),
    ]
}

fn provider_spec() -> impl Strategy<Value = PowerVsMachineProviderConfig> {
    let optional = |values: &'static [&'static str]| proptest::option::of(proptest::sample::select(values));
    (
        (resource(), resource(), resource()),
        "[a-z0-9-]{0,10}",
        optional(&["s922", "e980", "s1022", "e1050", "e1080", "s1122"]),
        optional(&["Dedicated", "Shared", "Capped"]),
        proptest::option::of(prop_oneof![
            (1..64i32).prop_map(|n| json!(n)),
            "[0-9]\\.[0-9]{1,2}".prop_map(|s| json!(s))
        ]),
        0..1024i32,
        proptest::option::of("[a-z-]{1,10}"),
    )
        .prop_map(
            |((si, image, network), key, system, processor, processors, memory, user_data)| {
                let mut value = json!({
                    "apiVersion": "machine.openshift.io/v1", "kind": "PowerVSMachineProviderConfig",
                    "serviceInstance": si, "image": image, "network": network, "keyPairName": key,
                    "credentialsSecret": {"name": "powervs-credentials"}, "memoryGiB": memory,
                });
                let fields = [
                    ("systemType", system.map(|s| json!(s))),
                    ("processorType", processor.map(|s| json!(s))),
                    ("processors", processors),
                    ("userDataSecret", user_data.map(|name| json!({"name": name}))),
                ];
                for (field, set) in fields {
                    if let Some(set) = set {
                        value[field] = set;
                    }
                }
                serde_json::from_value(value).unwrap_or_default()
            },
        )
}

proptest! {
    #[test]
    fn provider_specs_round_trip_through_the_machine_spec(config in provider_spec()) {
        let power_vs = facts();
        let mut report = Report::default();
        let infra = power_vs.to_infra_spec(&config, false, &FieldPath::new("p"), &mut report);
        let machine = MachineFacts {
            failure_domain: infra.failure_domain.as_deref(),
            user_data_secret: infra.user_data_secret.as_deref(),
            control_plane: false,
        };
        let back = power_vs.to_config(&infra.spec, &machine, &FieldPath::new("spec"), &mut report);
        let converted = report.finish(back);
        prop_assert!(converted.as_ref().is_ok_and(|c| c.warnings.is_empty()), "{:?}", converted);
        prop_assert_eq!(converted.ok().map(|c| c.value), Some(config));
    }
}

//! The OpenStack half of the conversion, through `OpenStack`'s seam: one row per mapped,
//! warned and refused field in both directions, statuses, labels, a round trip of
//! providerSpecs, and the installer's worker MachineSet.

mod common;

use common::{error_paths, json, merge};
use conversion::openstack::OpenStack;
use conversion::openstack::capo::OpenStackMachineSpec;
use conversion::openstack::provider::OpenstackProviderSpec;
use conversion::provider::MachineFacts;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use proptest::prelude::*;
use serde_json::{Value, json};
use sync_core::api::Infrastructure;
use sync_core::api::infrastructure::{InfrastructureStatus, OpenStackPlatformStatus, PlatformStatus};
use sync_core::api::mapi;

fn infrastructure(name: &str, platform: &str) -> Infrastructure {
    let mut infra = Infrastructure::new("cluster", Default::default());
    infra.status = Some(InfrastructureStatus {
        infrastructure_name: Some(name.into()),
        platform_status: Some(PlatformStatus {
            type_: Some(platform.into()),
            openstack: Some(OpenStackPlatformStatus {
                cloud_name: Some("openstack".into()),
            }),
            ..PlatformStatus::default()
        }),
        ..InfrastructureStatus::default()
    });
    infra
}

fn openstack() -> OpenStack {
    OpenStack::from_infrastructure(&infrastructure("ostest-7xk2p", "OpenStack"))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A minimal valid providerSpec.
fn base_provider_spec() -> Value {
    json!({
        "apiVersion": "machine.openshift.io/v1alpha1",
        "kind": "OpenstackProviderSpec",
        "cloudName": "openstack",
        "cloudsSecret": {"name": "openstack-cloud-credentials", "namespace": "openshift-machine-api"},
        "flavor": "m1.large",
        "image": "rhcos",
        "userDataSecret": {"name": "worker-user-data"}
    })
}

fn patched(patch: &Value) -> Value {
    let mut spec = base_provider_spec();
    merge(&mut spec, patch);
    spec
}

/// The providerSpec with `patch`, converted, as JSON (panics on errors).
fn to_capi(patch: &Value) -> (Value, Vec<String>) {
    let converted = openstack()
        .convert_provider_spec(&patched(patch))
        .unwrap_or_else(|e| panic!("{patch}: {e}"));
    let warnings = converted.warnings.iter().map(|w| w.path.to_string()).collect();
    (json(&converted.value.spec), warnings)
}

fn to_capi_errors(patch: &Value) -> Vec<String> {
    match openstack().convert_provider_spec(&patched(patch)) {
        Ok(converted) => panic!("{patch} converted: {:?}", json(&converted.value.spec)),
        Err(errors) => error_paths(&errors),
    }
}

#[test]
fn openstack_facts_come_from_the_infrastructure() {
    let facts = openstack();
    assert_eq!(facts.infrastructure_name, "ostest-7xk2p");
    assert_eq!(facts.cloud_name.as_deref(), Some("openstack"));
    assert_eq!(
        facts.to_string(),
        "OpenStack cluster ostest-7xk2p (OpenStackMachine infrastructure.cluster.x-k8s.io/v1beta1)"
    );
    let errors = OpenStack::from_infrastructure(&infrastructure("", "AWS")).err();
    assert_eq!(
        errors.as_ref().map(error_paths),
        Some(vec![
            "infrastructure.status.infrastructureName".to_owned(),
            "infrastructure.status.platformStatus.type".to_owned()
        ])
    );
}

#[test]
fn the_base_provider_spec_converts_whole() {
    let converted = openstack()
        .convert_provider_spec(&base_provider_spec())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(converted.warnings.is_empty(), "{:?}", converted.warnings);
    assert_eq!(converted.value.failure_domain, None);
    assert_eq!(
        converted.value.user_data_secret.as_deref(),
        Some("worker-user-data")
    );
    assert_eq!(
        json(&converted.value.spec),
        json!({
            "flavor": "m1.large",
            "image": {"filter": {"name": "rhcos"}},
            "identityRef": {"type": "Secret", "name": "openstack-cloud-credentials", "cloudName": "openstack"}
        })
    );
}

#[test]
fn mapi_fields_map_to_the_openstack_machine() {
    // (providerSpec patch, JSON pointer in OpenStackMachine.spec, expected value)
    let rows = [
        (json!({"flavor": "m1.xlarge"}), "/flavor", json!("m1.xlarge")),
        (
            json!({"image": "rhcos-4.19"}),
            "/image/filter/name",
            json!("rhcos-4.19"),
        ),
        (json!({"keyName": "ops"}), "/sshKeyName", json!("ops")),
        (json!({"trunk": true}), "/trunk", json!(true)),
        (json!({"trunk": false}), "/trunk", Value::Null),
        (json!({"configDrive": true}), "/configDrive", json!(true)),
        (json!({"tags": ["a=b", "c"]}), "/tags", json!(["a=b", "c"])),
        (json!({"tags": ["a", "b", "a"]}), "/tags", json!(["a", "b"])),
        (
            json!({"cloudName": "other"}),
            "/identityRef/cloudName",
            json!("other"),
        ),
        (
            json!({"cloudsSecret": {"name": "creds"}}),
            "/identityRef/name",
            json!("creds"),
        ),
        (
            json!({"cloudsSecret": null, "cloudName": ""}),
            "/identityRef",
            Value::Null,
        ),
        (
            json!({"serverMetadata": {"b": "2", "a": "1"}}),
            "/serverMetadata",
            json!([{"key": "a", "value": "1"}, {"key": "b", "value": "2"}]),
        ),
        (
            json!({"serverGroupID": "sg-uuid"}),
            "/serverGroup",
            json!({"id": "sg-uuid"}),
        ),
        (
            json!({"serverGroupName": "workers"}),
            "/serverGroup",
            json!({"filter": {"name": "workers"}}),
        ),
        (
            json!({"serverGroupID": "sg-uuid", "serverGroupName": "workers"}),
            "/serverGroup",
            json!({"id": "sg-uuid"}),
        ),
        (
            json!({"securityGroups": [{"uuid": "u1"}]}),
            "/securityGroups",
            json!([{"id": "u1"}]),
        ),
        (
            json!({"securityGroups": [{"filter": {"id": "u2"}}]}),
            "/securityGroups",
            json!([{"id": "u2"}]),
        ),
        (
            json!({"securityGroups": [{"name": "n", "filter": {"name": "ignored", "description": "d", "tenantId": "t", "tags": "a,b", "tagsAny": "c", "notTags": "d", "notTagsAny": "e,,f"}}]}),
            "/securityGroups",
            json!([{"filter": {"name": "n", "description": "d", "projectID": "t", "tags": ["a", "b"], "tagsAny": ["c"], "notTags": ["d"], "notTagsAny": ["e", "f"]}}]),
        ),
        (
            json!({"securityGroups": [{"filter": {"name": "f", "projectId": "p", "tenantId": "t"}}]}),
            "/securityGroups/0/filter",
            json!({"name": "f", "projectID": "p"}),
        ),
        (
            json!({"rootVolume": {"diskSize": 100, "volumeType": "fast", "availabilityZone": "cinder-az"}}),
            "/rootVolume",
            json!({"sizeGiB": 100, "type": "fast", "availabilityZone": {"from": "Name", "name": "cinder-az"}}),
        ),
        (
            json!({"rootVolume": {"diskSize": 100}}),
            "/rootVolume",
            json!({"sizeGiB": 100}),
        ),
        (
            json!({"image": "", "rootVolume": {"diskSize": 100, "sourceUUID": "rhcos-volume"}}),
            "/image/filter/name",
            json!("rhcos-volume"),
        ),
        (
            json!({"additionalBlockDevices": [{"name": "etcd", "sizeGiB": 10, "storage": {"type": "Local"}}]}),
            "/additionalBlockDevices",
            json!([{"name": "etcd", "sizeGiB": 10, "storage": {"type": "Local"}}]),
        ),
        (
            json!({"additionalBlockDevices": [{"name": "data", "sizeGiB": 50, "storage": {"type": "Volume", "volume": {"type": "ssd", "availabilityZone": "az1"}}}]}),
            "/additionalBlockDevices/0/storage/volume",
            json!({"type": "ssd", "availabilityZone": {"from": "Name", "name": "az1"}}),
        ),
        (
            json!({"additionalBlockDevices": [{"name": "data", "sizeGiB": 50, "storage": {"type": "Volume", "volume": {}}}]}),
            "/additionalBlockDevices/0/storage/volume",
            json!({}),
        ),
    ];
    for (patch, pointer, expected) in rows {
        let (spec, warnings) = to_capi(&patch);
        assert_eq!(
            spec.pointer(pointer).cloned().unwrap_or(Value::Null),
            expected,
            "{patch}"
        );
        assert!(warnings.is_empty(), "{patch}: {warnings:?}");
    }
}

#[test]
fn mapi_zone_and_user_data_go_to_the_capi_machine() {
    let converted = openstack()
        .convert_provider_spec(&patched(
            &json!({"availabilityZone": "az0", "userDataSecret": {"name": "ud"}}),
        ))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(converted.value.failure_domain.as_deref(), Some("az0"));
    assert_eq!(converted.value.user_data_secret.as_deref(), Some("ud"));
    let converted = openstack()
        .convert_provider_spec(&patched(&json!({"userDataSecret": null})))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(converted.value.user_data_secret, None);
}

#[test]
fn mapi_ports_map_to_capo_ports() {
    // (providerSpec patch, JSON pointer in OpenStackMachine.spec, expected value)
    let rows = [
        (
            json!({"ports": [{
                "networkID": "net", "nameSuffix": "sfx", "description": "d", "adminStateUp": true,
                "macAddress": "fa:16:3e:00:00:01", "fixedIPs": [{"subnetID": "sub", "ipAddress": "10.0.0.5"}],
                "securityGroups": ["sg1", "sg2"], "allowedAddressPairs": [{"ipAddress": "10.0.0.9", "macAddress": "fa:16:3e:00:00:02"}],
                "tags": ["t"], "vnicType": "direct", "profile": {"capabilities": "[\"switchdev\"]", "trusted": "true"},
                "portSecurity": false, "trunk": true
            }]}),
            "/ports",
            json!([{
                "network": {"id": "net"}, "nameSuffix": "sfx", "description": "d", "adminStateUp": true,
                "macAddress": "fa:16:3e:00:00:01", "fixedIPs": [{"subnet": {"id": "sub"}, "ipAddress": "10.0.0.5"}],
                "securityGroups": [{"id": "sg1"}, {"id": "sg2"}], "allowedAddressPairs": [{"ipAddress": "10.0.0.9", "macAddress": "fa:16:3e:00:00:02"}],
                "tags": ["t"], "vnicType": "direct", "profile": {"ovsHWOffload": true, "trustedVF": true},
                "disablePortSecurity": true, "trunk": true
            }]),
        ),
        (
            json!({"ports": [{"networkID": "net", "portSecurity": true, "securityGroups": []}]}),
            "/ports/0",
            json!({"network": {"id": "net"}, "disablePortSecurity": false, "securityGroups": []}),
        ),
        (
            json!({"ports": [{"networkID": "net", "profile": {"capabilities": "other", "trusted": "false"}}]}),
            "/ports/0/profile",
            json!({"ovsHWOffload": false, "trustedVF": false}),
        ),
        // A network by UUID: one port, an address on each subnet, the tags of all.
        (
            json!({"networks": [{"uuid": "net", "portTags": ["n"], "subnets": [{"uuid": "s1", "portTags": ["s", "n"]}, {"filter": {"name": "s2", "ipVersion": 6, "gateway_ip": "fd00::1", "cidr": "fd00::/64", "ipv6AddressMode": "slaac", "ipv6RaMode": "slaac", "description": "d", "tenantId": "t", "notTags": "x"}}]}]}),
            "/ports",
            json!([{"network": {"id": "net"}, "tags": ["n", "s"], "fixedIPs": [
                {"subnet": {"id": "s1"}},
                {"subnet": {"filter": {"name": "s2", "ipVersion": 6, "gatewayIP": "fd00::1", "cidr": "fd00::/64", "ipv6AddressMode": "slaac", "ipv6RAMode": "slaac", "description": "d", "projectID": "t", "notTags": ["x"]}}}
            ]}]),
        ),
        (
            json!({"networks": [{"filter": {"id": "net-by-filter-id"}}]}),
            "/ports",
            json!([{"network": {"id": "net-by-filter-id"}}]),
        ),
        (
            json!({"networks": [{"filter": {"name": "n", "description": "d", "projectId": "p", "tags": "a", "tagsAny": "b", "notTags": "c", "notTagsAny": "d"}}]}),
            "/ports",
            json!([{"network": {"filter": {"name": "n", "description": "d", "projectID": "p", "tags": ["a"], "tagsAny": ["b"], "notTags": ["c"], "notTagsAny": ["d"]}}}]),
        ),
        // A network named only by its subnets: one port per subnet.
        (
            json!({"networks": [{"portTags": ["n"], "subnets": [{"uuid": "s1"}, {"uuid": "s2", "portTags": ["s"]}]}]}),
            "/ports",
            json!([
                {"fixedIPs": [{"subnet": {"id": "s1"}}], "tags": ["n"]},
                {"fixedIPs": [{"subnet": {"id": "s2"}}], "tags": ["n", "s"]}
            ]),
        ),
        (
            json!({"networks": [{"uuid": "net", "noAllowedAddressPairs": true, "portSecurity": false, "vnicType": "direct", "profile": {"capabilities": "switchdev"}}]}),
            "/ports/0",
            json!({"network": {"id": "net"}, "allowedAddressPairs": [], "disablePortSecurity": true, "vnicType": "direct", "profile": {"ovsHWOffload": true}}),
        ),
        // Ports first, then networks, as the Machine API provider creates them.
        (
            json!({"networks": [{"uuid": "second"}], "ports": [{"networkID": "first"}]}),
            "/ports",
            json!([{"network": {"id": "first"}}, {"network": {"id": "second"}}]),
        ),
    ];
    for (patch, pointer, expected) in rows {
        let (spec, warnings) = to_capi(&patch);
        assert_eq!(
            spec.pointer(pointer).cloned().unwrap_or(Value::Null),
            expected,
            "{patch}"
        );
        assert!(warnings.is_empty(), "{patch}: {warnings:?}");
    }
}

#[test]
fn mapi_fields_nothing_reads_are_warnings() {
    let p = "spec.providerSpec.value";
    // (providerSpec patch, the one warning's path)
    let rows = [
        (json!({"sshUserName": "core"}), format!("{p}.sshUserName")),
        (json!({"primarySubnet": "s"}), format!("{p}.primarySubnet")),
        (
            json!({"cloudsSecret": null, "cloudName": "x"}),
            format!("{p}.cloudName"),
        ),
        (
            json!({"cloudsSecret": {"name": "c", "namespace": "elsewhere"}}),
            format!("{p}.cloudsSecret.namespace"),
        ),
        (
            json!({"rootVolume": {"diskSize": 1, "sourceType": "image"}}),
            format!("{p}.rootVolume.sourceType"),
        ),
        (
            json!({"rootVolume": {"diskSize": 1, "deviceType": "disk"}}),
            format!("{p}.rootVolume.deviceType"),
        ),
        (
            json!({"image": "other", "rootVolume": {"diskSize": 1, "sourceUUID": "rhcos"}}),
            format!("{p}.image"),
        ),
        (
            json!({"networks": [{"uuid": "n", "fixedIp": "10.0.0.1"}]}),
            format!("{p}.networks[0].fixedIp"),
        ),
        (
            json!({"networks": [{"uuid": "n", "filter": {"status": "ACTIVE"}}]}),
            format!("{p}.networks[0].filter.status"),
        ),
        (
            json!({"networks": [{"uuid": "n", "filter": {"shared": true}}]}),
            format!("{p}.networks[0].filter.shared"),
        ),
        (
            json!({"networks": [{"uuid": "n", "filter": {"adminStateUp": true}}]}),
            format!("{p}.networks[0].filter.adminStateUp"),
        ),
        (
            json!({"networks": [{"uuid": "n", "filter": {"limit": 1}}]}),
            format!("{p}.networks[0].filter.limit"),
        ),
        (
            json!({"networks": [{"uuid": "n", "filter": {"sortKey": "k"}}]}),
            format!("{p}.networks[0].filter.sortKey"),
        ),
        (
            json!({"networks": [{"uuid": "n", "profile": {"other": "x"}}]}),
            format!("{p}.networks[0].profile[other]"),
        ),
        (
            json!({"networks": [{"subnets": [{"uuid": "s", "portSecurity": false}]}]}),
            format!("{p}.networks[0].subnets[0].portSecurity"),
        ),
        (
            json!({"networks": [{"subnets": [{"uuid": "s", "filter": {"networkId": "n"}}]}]}),
            format!("{p}.networks[0].subnets[0].filter.networkId"),
        ),
        (
            json!({"networks": [{"subnets": [{"uuid": "s", "filter": {"enableDhcp": true}}]}]}),
            format!("{p}.networks[0].subnets[0].filter.enableDhcp"),
        ),
        (
            json!({"networks": [{"subnets": [{"uuid": "s", "filter": {"marker": "m"}}]}]}),
            format!("{p}.networks[0].subnets[0].filter.marker"),
        ),
        (
            json!({"ports": [{"networkID": "n", "hostID": "h"}]}),
            format!("{p}.ports[0].hostID"),
        ),
        (
            json!({"ports": [{"networkID": "n", "tenantID": "t"}]}),
            format!("{p}.ports[0].tenantID"),
        ),
        (
            json!({"ports": [{"networkID": "n", "projectID": "t"}]}),
            format!("{p}.ports[0].projectID"),
        ),
        (
            json!({"securityGroups": [{"uuid": "u", "filter": {"sortDir": "asc"}}]}),
            format!("{p}.securityGroups[0].filter.sortDir"),
        ),
    ];
    for (patch, path) in rows {
        let (_, warnings) = to_capi(&patch);
        assert_eq!(warnings, [path], "{patch}");
    }
}

#[test]
fn mapi_fields_capo_cannot_express_are_errors() {
    let p = "spec.providerSpec.value";
    // (providerSpec patch, every error path)
    let rows = [
        (json!({"flavor": ""}), vec![format!("{p}.flavor")]),
        (json!({"image": ""}), vec![format!("{p}.image")]),
        (
            json!({"floatingIP": "203.0.113.7"}),
            vec![format!("{p}.floatingIP")],
        ),
        (json!({"cloudName": ""}), vec![format!("{p}.cloudName")]),
        (
            json!({"rootVolume": {"volumeType": "fast"}}),
            vec![format!("{p}.rootVolume.diskSize")],
        ),
        (
            json!({"additionalBlockDevices": [{"name": "d", "sizeGiB": 1, "storage": {"type": "Volume"}}]}),
            vec![format!("{p}.additionalBlockDevices[0].storage.volume")],
        ),
        (
            json!({"additionalBlockDevices": [{"name": "d", "sizeGiB": 1, "storage": {"type": "Tape"}}]}),
            vec![format!("{p}.additionalBlockDevices[0].storage.type")],
        ),
        (
            json!({"securityGroups": [{}]}),
            vec![format!("{p}.securityGroups[0].filter")],
        ),
        (
            json!({"ports": [{"networkID": ""}]}),
            vec![format!("{p}.ports[0].networkID")],
        ),
        (
            json!({"ports": [{"networkID": "n", "profile": {"physical_network": "x"}}]}),
            vec![format!("{p}.ports[0].profile[physical_network]")],
        ),
        (
            json!({"networks": [{"portTags": ["t"]}]}),
            vec![format!("{p}.networks[0].uuid")],
        ),
        (
            json!({"networks": [{"subnets": [{"filter": {"subnetpoolId": "pool"}}]}]}),
            vec![format!("{p}.networks[0].subnets[0].filter.subnetpoolId")],
        ),
        // The neutral checks of the seam: unknown fields, kind, apiVersion, types.
        (json!({"flavour": "m1.large"}), vec![format!("{p}.flavour")]),
        (
            json!({"kind": "AWSMachineProviderConfig"}),
            vec![format!("{p}.kind")],
        ),
        (
            json!({"apiVersion": "machine.openshift.io/v1beta1"}),
            vec![format!("{p}.apiVersion")],
        ),
        (json!({"trunk": "yes"}), vec![format!("{p}.trunk")]),
        // Every problem at once.
        (
            json!({"flavor": "", "floatingIP": "x", "ports": [{"networkID": ""}]}),
            vec![
                format!("{p}.floatingIP"),
                format!("{p}.ports[0].networkID"),
                format!("{p}.flavor"),
            ],
        ),
    ];
    for (patch, paths) in rows {
        assert_eq!(to_capi_errors(&patch), paths, "{patch}");
    }
}

/// The OpenStackMachine spec of the base providerSpec with `patch`.
fn capo_spec(patch: &Value) -> OpenStackMachineSpec {
    let (mut spec, _) = to_capi(&json!({}));
    merge(&mut spec, patch);
    serde_json::from_value(spec).unwrap_or_else(|e| panic!("{patch}: {e}"))
}

const FACTS: MachineFacts<'static> = MachineFacts {
    failure_domain: Some("az0"),
    user_data_secret: Some("worker-user-data"),
    control_plane: false,
};

fn to_mapi(patch: &Value) -> (Value, Vec<String>) {
    let converted = openstack()
        .convert_machine_spec(&capo_spec(patch), &FACTS)
        .unwrap_or_else(|e| panic!("{patch}: {e}"));
    let warnings = converted.warnings.iter().map(|w| w.path.to_string()).collect();
    (json(&converted.value), warnings)
}

#[test]
fn the_base_machine_converts_back_to_its_provider_spec() {
    let (config, warnings) = to_mapi(&json!({}));
    assert!(warnings.is_empty(), "{warnings:?}");
    let mut expected = base_provider_spec();
    merge(&mut expected, &json!({"availabilityZone": "az0"}));
    assert_eq!(config, expected);
    let none = MachineFacts::default();
    let config = openstack()
        .convert_machine_spec(&capo_spec(&json!({"identityRef": null})), &none)
        .map(|c| json(&c.value))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(config["cloudsSecret"], Value::Null);
    assert_eq!(config.get("userDataSecret"), None);
    assert_eq!(config.get("availabilityZone"), None);
}

#[test]
fn capo_fields_map_to_the_provider_spec() {
    // (OpenStackMachine.spec patch, JSON pointer in the providerSpec, expected value)
    let rows = [
        (json!({"flavor": "m1.small"}), "/flavor", json!("m1.small")),
        (
            json!({"image": {"filter": {"name": "img"}}}),
            "/image",
            json!("img"),
        ),
        (json!({"sshKeyName": "k"}), "/keyName", json!("k")),
        (json!({"trunk": true}), "/trunk", json!(true)),
        (json!({"trunk": false}), "/trunk", Value::Null),
        (json!({"configDrive": false}), "/configDrive", json!(false)),
        (json!({"tags": ["a"]}), "/tags", json!(["a"])),
        (
            json!({"providerID": "openstack:///x"}),
            "/providerID",
            Value::Null,
        ),
        (
            json!({"identityRef": {"type": "Secret", "name": "c", "cloudName": "cl"}}),
            "/cloudsSecret",
            json!({"name": "c", "namespace": "openshift-machine-api"}),
        ),
        (
            json!({"serverMetadata": [{"key": "k", "value": "v"}]}),
            "/serverMetadata",
            json!({"k": "v"}),
        ),
        (json!({"serverGroup": {"id": "g"}}), "/serverGroupID", json!("g")),
        (
            json!({"serverGroup": {"filter": {"name": "g"}}}),
            "/serverGroupName",
            json!("g"),
        ),
        (
            json!({"securityGroups": [{"id": "u"}, {"filter": {"name": "n", "projectID": "p", "tags": ["a", "b"]}}]}),
            "/securityGroups",
            json!([{"uuid": "u"}, {"name": "n", "filter": {"projectId": "p", "tags": "a,b"}}]),
        ),
        (
            json!({"rootVolume": {"sizeGiB": 30, "type": "t", "availabilityZone": {"from": "Name", "name": "z"}}}),
            "/rootVolume",
            json!({"diskSize": 30, "volumeType": "t", "availabilityZone": "z", "sourceUUID": "rhcos"}),
        ),
        (json!({"rootVolume": {"sizeGiB": 30}}), "/image", json!("")),
        (
            json!({"additionalBlockDevices": [{"name": "d", "sizeGiB": 5, "storage": {"type": "Volume", "volume": {"type": "t", "availabilityZone": {"name": "z"}}}}]}),
            "/additionalBlockDevices",
            json!([{"name": "d", "sizeGiB": 5, "storage": {"type": "Volume", "volume": {"type": "t", "availabilityZone": "z"}}}]),
        ),
        (
            json!({"ports": [{"network": {"id": "n"}, "fixedIPs": [{"subnet": {"id": "s"}, "ipAddress": "10.0.0.2"}], "nameSuffix": "x", "description": "d", "adminStateUp": false, "macAddress": "m", "securityGroups": [{"id": "g"}], "allowedAddressPairs": [{"ipAddress": "1.2.3.4"}], "tags": ["t"], "vnicType": "direct", "profile": {"ovsHWOffload": true, "trustedVF": true}, "disablePortSecurity": false, "trunk": false}]}),
            "/ports",
            json!([{"networkID": "n", "fixedIPs": [{"subnetID": "s", "ipAddress": "10.0.0.2"}], "nameSuffix": "x", "description": "d", "adminStateUp": false, "macAddress": "m", "securityGroups": ["g"], "allowedAddressPairs": [{"ipAddress": "1.2.3.4"}], "tags": ["t"], "vnicType": "direct", "profile": {"capabilities": "switchdev", "trusted": "true"}, "portSecurity": true, "trunk": false}]),
        ),
        (
            json!({"ports": [{"network": {"filter": {"name": "n", "tags": ["a"]}}, "fixedIPs": [{"subnet": {"id": "s", "filter": {"name": "sn", "ipVersion": 4}}}], "tags": ["t"], "allowedAddressPairs": [], "disablePortSecurity": true, "profile": {"trustedVF": true}}]}),
            "/networks",
            json!([{"filter": {"name": "n", "tags": "a"}, "subnets": [{"uuid": "s", "filter": {"name": "sn", "ipVersion": 4}}], "portTags": ["t"], "noAllowedAddressPairs": true, "portSecurity": false, "profile": {"trusted": "true"}}]),
        ),
        (
            json!({"ports": [{"fixedIPs": [{"subnet": {"filter": {"name": "nodes"}}}]}]}),
            "/networks",
            json!([{"subnets": [{"filter": {"name": "nodes"}}]}]),
        ),
    ];
    for (patch, pointer, expected) in rows {
        let (config, warnings) = to_mapi(&patch);
        assert_eq!(
            config.pointer(pointer).cloned().unwrap_or(Value::Null),
            expected,
            "{patch}"
        );
        assert!(warnings.is_empty(), "{patch}: {warnings:?}");
    }
}

#[test]
fn capo_fields_the_machine_api_drops_are_warnings() {
    // (OpenStackMachine.spec patch, the one warning's path)
    let rows = [
        (
            json!({"image": {"filter": {"name": "i", "tags": ["t"]}}}),
            "spec.image.filter.tags",
        ),
        (
            json!({"ports": [{"network": {"id": "n"}, "hostID": "h"}]}),
            "spec.ports[0].hostID",
        ),
        (
            json!({"ports": [{"network": {"id": "n"}, "propagateUplinkStatus": true}]}),
            "spec.ports[0].propagateUplinkStatus",
        ),
        (
            json!({"ports": [{"network": {"id": "n"}, "valueSpecs": [{"name": "a", "key": "k", "value": "v"}]}]}),
            "spec.ports[0].valueSpecs",
        ),
    ];
    for (patch, path) in rows {
        let (_, warnings) = to_mapi(&patch);
        assert_eq!(warnings, [path], "{patch}");
    }
}

#[test]
fn capo_fields_the_machine_api_cannot_express_are_errors() {
    let errors = |patch: &Value| match openstack().convert_machine_spec(&capo_spec(patch), &FACTS) {
        Ok(converted) => panic!("{patch} converted: {}", json(&converted.value)),
        Err(errors) => error_paths(&errors),
    };
    // (OpenStackMachine.spec patch, every error path)
    let rows: [(Value, &[&str]); 22] = [
        (json!({"flavor": null}), &["spec.flavor"]),
        (json!({"flavorID": "f"}), &["spec.flavorID"]),
        (
            json!({"floatingIPPoolRef": {"kind": "IPPool", "name": "p"}}),
            &["spec.floatingIPPoolRef"],
        ),
        (
            json!({"schedulerHintAdditionalProperties": [{"name": "a", "value": {"type": "Bool", "bool": true}}]}),
            &["spec.schedulerHintAdditionalProperties"],
        ),
        (json!({"image": {"filter": null, "id": "i"}}), &["spec.image.id"]),
        (
            json!({"image": {"filter": null, "imageRef": {"name": "r"}}}),
            &["spec.image.imageRef"],
        ),
        (json!({"image": {"filter": null}}), &["spec.image.filter.name"]),
        (
            json!({"identityRef": {"type": "ClusterIdentity"}}),
            &["spec.identityRef.type"],
        ),
        (
            json!({"identityRef": {"region": "r"}}),
            &["spec.identityRef.region"],
        ),
        (
            json!({"rootVolume": {"sizeGiB": 1, "availabilityZone": {"from": "Machine"}}}),
            &["spec.rootVolume.availabilityZone.from"],
        ),
        (
            json!({"additionalBlockDevices": [{"name": "d", "sizeGiB": 1, "storage": {"type": "Volume", "volume": {"availabilityZone": {"from": "Machine"}}}}]}),
            &["spec.additionalBlockDevices[0].storage.volume.availabilityZone.from"],
        ),
        (
            json!({"additionalBlockDevices": [{"name": "d", "sizeGiB": 1, "storage": {"type": "Volume"}}]}),
            &["spec.additionalBlockDevices[0].storage.volume"],
        ),
        (json!({"securityGroups": [{}]}), &["spec.securityGroups[0]"]),
        (json!({"serverGroup": {}}), &["spec.serverGroup"]),
        (
            json!({"serverMetadata": [{"key": "k", "value": "1"}, {"key": "k", "value": "2"}]}),
            &["spec.serverMetadata[1].key"],
        ),
        (json!({"ports": [{}]}), &["spec.ports[0].network.id"]),
        (
            json!({"ports": [{"network": {"id": "n"}, "fixedIPs": [{"ipAddress": "10.0.0.1"}]}]}),
            &["spec.ports[0].fixedIPs[0].subnet.id"],
        ),
        (
            json!({"ports": [{"network": {"id": "n"}, "fixedIPs": [{"subnet": {"id": "s", "filter": {"name": "x"}}}]}]}),
            &["spec.ports[0].fixedIPs[0].subnet.filter"],
        ),
        (
            json!({"ports": [{"network": {"id": "n"}, "securityGroups": [{"filter": {"name": "g"}}]}]}),
            &["spec.ports[0].securityGroups[0].filter"],
        ),
        (
            json!({"ports": [{"network": {"filter": {"name": "n"}}, "fixedIPs": [{"ipAddress": "10.0.0.1", "subnet": {"id": "s"}}]}]}),
            &["spec.ports[0].fixedIPs[0].ipAddress"],
        ),
        (
            json!({"ports": [{"network": {"filter": {"name": "n"}}, "nameSuffix": "x", "trunk": true}]}),
            &["spec.ports[0].nameSuffix", "spec.ports[0].trunk"],
        ),
        (
            json!({"ports": [{"network": {"filter": {"name": "n"}}, "fixedIPs": [{}]}]}),
            &["spec.ports[0].fixedIPs[0].subnet"],
        ),
    ];
    for (patch, paths) in rows {
        assert_eq!(errors(&patch), paths, "{patch}");
    }
}

#[test]
fn labels_and_provider_id_are_the_machine_api_providers() {
    let facts = openstack();
    let spec = capo_spec(&json!({}));
    assert_eq!(
        facts.labels(&spec, Some("az0")),
        [
            ("machine.openshift.io/instance-type", "m1.large".to_owned()),
            ("machine.openshift.io/zone", "az0".to_owned())
        ]
    );
    assert_eq!(
        facts.labels(&OpenStackMachineSpec::default(), Some("")),
        Vec::<(&str, String)>::new()
    );
    let spec = facts.with_provider_id("openstack:///8d5f", spec);
    assert_eq!(spec.provider_id.as_deref(), Some("openstack:///8d5f"));
}

#[test]
fn statuses_convert_both_ways() {
    let now = Time(Default::default());
    let status: mapi::MachineStatus = serde_json::from_value(json!({
        "phase": "Running",
        "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}, {"type": "Hostname", "address": "w-0"}]
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    let facts = openstack();
    let converted = facts
        .convert_machine_status(&status, &now)
        .unwrap_or_else(|e| panic!("{e}"));
    let value = json(&converted.value);
    assert_eq!(value["ready"], json!(true));
    assert_eq!(value["initialization"], json!({"provisioned": true}));
    assert_eq!(
        value["addresses"][0],
        json!({"type": "InternalIP", "address": "10.0.0.5"})
    );
    assert_eq!(value["conditions"][0]["type"], json!("Ready"));
    assert_eq!(value["conditions"][0]["status"], json!("True"));

    let bad: mapi::MachineStatus =
        serde_json::from_value(json!({"addresses": [{"type": "Nope", "address": "x"}]}))
            .unwrap_or_else(|e| panic!("{e}"));
    let errors = facts.convert_machine_status(&bad, &now).err();
    assert_eq!(
        errors.as_ref().map(error_paths),
        Some(vec!["status.addresses[0].type".to_owned()])
    );

    let capo: conversion::openstack::capo::OpenStackMachineStatus =
        serde_json::from_value(json!({"instanceState": "ACTIVE", "ready": true}))
            .unwrap_or_else(|e| panic!("{e}"));
    let provider = facts.convert_infra_status(&OpenStackMachineSpec::default(), &capo, &now);
    assert_eq!(provider.value, None);
    assert_eq!(provider.instance_state.as_deref(), Some("ACTIVE"));
}

#[test]
fn the_installer_worker_machine_set_converts_without_errors() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/openstack/installer-worker-machineset.yaml"
    );
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let set: Value = serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let value = &set["spec"]["template"]["spec"]["providerSpec"]["value"];
    let facts = openstack();
    let converted = facts
        .convert_provider_spec(value)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(converted.warnings.is_empty(), "{:?}", converted.warnings);
    assert_eq!(converted.value.failure_domain.as_deref(), Some("az0"));
    assert_eq!(
        converted.value.user_data_secret.as_deref(),
        Some("worker-user-data")
    );
    let spec = json(&converted.value.spec);
    assert_eq!(spec["image"], json!({"filter": {"name": "ostest-7xk2p-rhcos"}}));
    assert_eq!(
        spec["ports"],
        json!([
            {"fixedIPs": [{"subnet": {"filter": {"name": "ostest-7xk2p-nodes", "tags": ["openshiftClusterID=ostest-7xk2p"]}}}]},
            {"network": {"id": "0a9b5a4e-2c43-4f6c-a2d5-9c1a3f43c1aa"}, "allowedAddressPairs": []}
        ])
    );
    assert_eq!(
        spec["serverGroup"],
        json!({"filter": {"name": "ostest-7xk2p-worker-az0"}})
    );
    assert_eq!(
        spec["rootVolume"],
        json!({"sizeGiB": 100, "type": "fast", "availabilityZone": {"from": "Name", "name": "cinder-az0"}})
    );

    // And back: the same providerSpec but for Go's empty structs and the network by
    // UUID, which comes back as a port (a CAPO port on a network by ID is one).
    let facts_back = MachineFacts {
        failure_domain: converted.value.failure_domain.as_deref(),
        user_data_secret: converted.value.user_data_secret.as_deref(),
        control_plane: false,
    };
    let back = facts
        .convert_machine_spec(&converted.value.spec, &facts_back)
        .unwrap_or_else(|e| panic!("{e}"));
    let back = json(&back.value);
    assert_eq!(back["rootVolume"]["sourceUUID"], json!("ostest-7xk2p-rhcos"));
    assert_eq!(
        back["ports"],
        json!([{"networkID": "0a9b5a4e-2c43-4f6c-a2d5-9c1a3f43c1aa"}])
    );
    assert_eq!(
        back["securityGroups"],
        json!([{"name": "ostest-7xk2p-worker"}, {"uuid": "7f1c2f6e-8a1f-4b7e-9a55-0e3a2bb4f0c1"}])
    );
    assert_eq!(
        back["networks"][0],
        json!({"subnets": [{"filter": {"name": "ostest-7xk2p-nodes", "tags": "openshiftClusterID=ostest-7xk2p"}}]})
    );
}

fn text() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9-]{0,8}"
}

/// Distinct texts (tags are sets on the CAPO side).
fn tags() -> impl Strategy<Value = Vec<String>> {
    prop::collection::btree_set(text(), 0..3).prop_map(|tags| tags.into_iter().collect())
}

fn maybe(strategy: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), strategy]
}

/// A port on a network by UUID, with the fields that have one meaning on both sides.
fn port() -> impl Strategy<Value = Value> {
    (text(), maybe(text()), maybe(text()), proptest::option::of(any::<bool>()), proptest::option::of(any::<bool>()), tags(), proptest::option::of(prop::collection::vec(text(), 0..2)))
        .prop_map(|(network, suffix, subnet, admin, security, tags, groups)| {
            let mut port = json!({"networkID": network, "nameSuffix": suffix, "adminStateUp": admin, "portSecurity": security, "tags": tags, "securityGroups": groups});
            if !subnet.is_empty() {
                port["fixedIPs"] = json!([{"subnetID": subnet}]);
            }
            port
        })
}

/// A network found by query, or named by one subnet only: the two shapes a CAPO port
/// comes back as.
fn network() -> impl Strategy<Value = Value> {
    prop_oneof![
        (text(), tags(), any::<bool>()).prop_map(|(name, tags, no_pairs)| {
            json!({"filter": {"name": name, "tags": tags.join(",")}, "portTags": tags, "noAllowedAddressPairs": no_pairs})
        }),
        (text(), maybe(text())).prop_map(|(subnet, vnic)| json!({"subnets": [{"uuid": subnet}], "vnicType": vnic})),
    ]
}

/// A security group by UUID or by name.
fn group() -> impl Strategy<Value = Value> {
    prop_oneof![
        text().prop_map(|id| json!({"uuid": id})),
        text().prop_map(|name| json!({"name": name}))
    ]
}

/// A local disk, or a volume with or without a type and zone.
fn block_device() -> impl Strategy<Value = Value> {
    (
        text(),
        1..100_i64,
        proptest::option::of((maybe(text()), maybe(text()))),
    )
        .prop_map(|(name, size, volume)| {
            let storage = match volume {
                None => json!({"type": "Local"}),
                Some((kind, zone)) => {
                    json!({"type": "Volume", "volume": {"type": kind, "availabilityZone": zone}})
                }
            };
            json!({"name": name, "sizeGiB": size, "storage": storage})
        })
}

fn provider_spec() -> impl Strategy<Value = Value> {
    let volumes = proptest::option::of((1..500_i64, maybe(text()), maybe(text())));
    (
        (text(), text(), maybe(text()), any::<bool>(), proptest::option::of(any::<bool>()), tags()),
        (prop::collection::btree_map(text(), text(), 0..3), volumes, maybe(text()), maybe(text())),
        (prop::collection::vec(port(), 0..3), prop::collection::vec(network(), 0..3), prop::collection::vec(group(), 0..3), prop::collection::vec(block_device(), 0..2)),
    )
        .prop_map(|((flavor, image, key, trunk, drive, tags), (metadata, volume, group, zone), (ports, networks, groups, devices))| {
            let mut spec = patched(&json!({
                "flavor": flavor, "keyName": key, "trunk": trunk, "configDrive": drive, "tags": tags,
                "serverMetadata": metadata, "serverGroupName": group, "availabilityZone": zone,
                "ports": ports, "networks": networks,
                "securityGroups": groups, "additionalBlockDevices": devices,
            }));
            match volume {
                Some((size, kind, volume_zone)) => spec["rootVolume"] = json!({"diskSize": size, "volumeType": kind, "availabilityZone": volume_zone, "sourceUUID": image}),
                None => spec["image"] = json!(image),
            }
            if spec["rootVolume"].is_object() {
                spec["image"] = json!("");
            }
            spec
        })
}

/// `value` as the typed providerSpec writes it (so Go's and JSON's "empty" agree).
fn normalized(value: &Value) -> Value {
    let typed: OpenstackProviderSpec =
        serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{e}"));
    json(&typed)
}

proptest! {
    #[test]
    fn provider_specs_round_trip(spec in provider_spec()) {
        let facts = openstack();
        let converted = facts.convert_provider_spec(&spec).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(converted.warnings.is_empty(), "{:?}", converted.warnings);
        let machine = MachineFacts {
            failure_domain: converted.value.failure_domain.as_deref(),
            user_data_secret: converted.value.user_data_secret.as_deref(),
            control_plane: false,
        };
        let back = facts.convert_machine_spec(&converted.value.spec, &machine).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(back.warnings.is_empty(), "{:?}", back.warnings);
        // Ports are written before networks on the way out and split by shape on the way
        // back, so the two lists come back in their own orders.
        prop_assert_eq!(json(&back.value), normalized(&spec));
    }
}

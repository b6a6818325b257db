//! One row per mapped field and per unsupported field, in both directions: what a field
//! becomes on the other side, or the error (with its path) it gives.

mod common;

use common::{error_paths, fixture, infra, json, merge};
use conversion::aws::capa::AwsMachine;
use conversion::aws::{to_capi, to_mapi};
use conversion::{AwsInfrastructure, IpFamily};
use serde_json::{Value, json};
use sync_core::api::{capi, mapi};

/// The running worker Machine of the fixtures, without status.
fn base_mapi() -> Value {
    let mut machine: Value = fixture("running-worker-machine.yaml");
    if let Some(object) = machine.as_object_mut() {
        object.remove("status");
    }
    machine
}

fn mapi_machine(patch: &Value) -> mapi::Machine {
    let mut machine = base_mapi();
    merge(&mut machine, patch);
    serde_json::from_value(machine).unwrap_or_else(|e| panic!("test input does not decode: {e}"))
}

fn provider_patch(patch: Value) -> Value {
    json!({"spec": {"providerSpec": {"value": patch}}})
}

/// The CAPI pair of the base Machine.
fn base_capi() -> (Value, Value) {
    let converted =
        to_capi::convert_machine(&mapi_machine(&json!({})), &infra()).unwrap_or_else(|e| panic!("{e}"));
    (json(&converted.value.machine), json(&converted.value.aws_machine))
}

fn capi_pair(machine_patch: &Value, aws_patch: &Value) -> (capi::Machine, AwsMachine) {
    let (mut machine, mut aws) = base_capi();
    merge(&mut machine, machine_patch);
    merge(&mut aws, aws_patch);
    (
        serde_json::from_value(machine).unwrap_or_else(|e| panic!("CAPI Machine: {e}")),
        serde_json::from_value(aws).unwrap_or_else(|e| panic!("AWSMachine: {e}")),
    )
}

#[test]
fn mapi_provider_fields_map_to_the_aws_machine() {
    // (providerSpec patch, JSON pointer in AWSMachine.spec, expected value)
    let rows = [
        (json!({"ami": {"id": "ami-1"}}), "/ami/id", json!("ami-1")),
        (
            json!({"instanceType": "c7i.large"}),
            "/instanceType",
            json!("c7i.large"),
        ),
        (
            json!({"cpuOptions": {"confidentialCompute": "AMDEncryptedVirtualizationNestedPaging"}}),
            "/cpuOptions/confidentialCompute",
            json!("AMDEncryptedVirtualizationNestedPaging"),
        ),
        (
            json!({"cpuOptions": {"confidentialCompute": "Disabled"}}),
            "/cpuOptions/confidentialCompute",
            json!("Disabled"),
        ),
        (
            json!({"tags": [{"name": "b", "value": "2"}, {"name": "a", "value": "1"}]}),
            "/additionalTags",
            json!({"a": "1", "b": "2"}),
        ),
        (
            json!({"iamInstanceProfile": {"id": "profile-x"}}),
            "/iamInstanceProfile",
            json!("profile-x"),
        ),
        (json!({"keyName": "ops-key"}), "/sshKeyName", json!("ops-key")),
        (json!({"publicIp": true}), "/publicIP", json!(true)),
        (
            json!({"networkInterfaceType": "ENA"}),
            "/networkInterfaceType",
            json!("interface"),
        ),
        (
            json!({"networkInterfaceType": "EFA"}),
            "/networkInterfaceType",
            json!("efa"),
        ),
        (
            json!({"securityGroups": [{"id": "sg-1"}]}),
            "/additionalSecurityGroups",
            json!([{"id": "sg-1"}]),
        ),
        (
            json!({"subnet": {"id": "subnet-1", "filters": null}}),
            "/subnet",
            json!({"id": "subnet-1"}),
        ),
        (
            json!({"placement": {"tenancy": "dedicated"}}),
            "/tenancy",
            json!("dedicated"),
        ),
        (
            json!({"placement": {"tenancy": "host", "host": {"affinity": "AnyAvailable", "dedicatedHost": {"id": "h-0123abcd"}}}}),
            "",
            json!({"tenancy": "host", "hostAffinity": "default", "hostID": "h-0123abcd"}),
        ),
        (
            json!({"placement": {"host": {"affinity": "DedicatedHost", "dedicatedHost": {
                "allocationStrategy": "Dynamic", "dynamicHostAllocation": {"tags": [{"name": "team", "value": "ml"}]}}}}}),
            "",
            json!({"hostAffinity": "host", "dynamicHostAllocation": {"tags": {"team": "ml"}}}),
        ),
        (
            json!({"blockDevices": [
                {"ebs": {"volumeSize": 100, "volumeType": "gp3", "throughputMib": 250, "iops": 3000, "kmsKey": {"id": "key-1"}}},
                {"deviceName": "/dev/sdf", "ebs": {"volumeSize": 500, "volumeType": "st1", "encrypted": false}}
            ]}),
            "",
            json!({
                "rootVolume": {"size": 100, "type": "gp3", "throughput": 250, "iops": 3000, "encryptionKey": "key-1"},
                "nonRootVolumes": [{"deviceName": "/dev/sdf", "size": 500, "type": "st1", "encrypted": false}]
            }),
        ),
        (
            json!({"spotMarketOptions": {"maxPrice": "0.12"}}),
            "/spotMarketOptions",
            json!({"maxPrice": "0.12"}),
        ),
        (json!({"spotMarketOptions": {}}), "/spotMarketOptions", json!({})),
        (
            json!({"metadataServiceOptions": {"authentication": "Required"}}),
            "/instanceMetadataOptions/httpTokens",
            json!("required"),
        ),
        (
            json!({"placementGroupName": "pg-1", "placementGroupPartition": 3}),
            "",
            json!({"placementGroupName": "pg-1", "placementGroupPartition": 3}),
        ),
        (
            json!({"capacityReservationId": "cr-1"}),
            "/capacityReservationId",
            json!("cr-1"),
        ),
        (json!({"marketType": "Spot"}), "/marketType", json!("Spot")),
        (
            json!({"marketType": "CapacityBlock"}),
            "/marketType",
            json!("CapacityBlock"),
        ),
        (
            json!({"marketType": "OnDemand"}),
            "/marketType",
            json!("OnDemand"),
        ),
    ];
    for (patch, pointer, expected) in rows {
        let machine = mapi_machine(&provider_patch(patch.clone()));
        let converted =
            to_capi::convert_machine(&machine, &infra()).unwrap_or_else(|e| panic!("{patch}: {e}"));
        let spec = json(&converted.value.aws_machine.spec);
        if pointer.is_empty() {
            for (key, value) in expected.as_object().into_iter().flatten() {
                assert_eq!(&spec[key], value, "{patch}: {key}");
            }
        } else {
            assert_eq!(spec.pointer(pointer), Some(&expected), "{patch}: {pointer}");
        }
    }
}

#[test]
fn mapi_machine_fields_map_to_the_capi_machine() {
    let rows = [
        (
            provider_patch(json!({"userDataSecret": {"name": "custom-ud"}})),
            "/spec/bootstrap/dataSecretName",
            json!("custom-ud"),
        ),
        (
            provider_patch(json!({"placement": {"availabilityZone": "us-east-2c"}})),
            "/spec/failureDomain",
            json!("us-east-2c"),
        ),
        (
            json!({"spec": {"providerID": "aws:///us-east-2b/i-0fff"}}),
            "/spec/providerID",
            json!("aws:///us-east-2b/i-0fff"),
        ),
        (
            json!({"spec": {"lifecycleHooks": {"preDrain": [{"name": "drain", "owner": "ops"}], "preTerminate": [{"name": "disk", "owner": "csi"}]}}}),
            "/metadata/annotations",
            json!({
                "pre-drain.delete.hook.machine.cluster.x-k8s.io/drain": "ops",
                "pre-terminate.delete.hook.machine.cluster.x-k8s.io/disk": "csi"
            }),
        ),
        (
            json!({"spec": {"metadata": {"labels": {"node-role.kubernetes.io/infra": ""}, "annotations": {"note": "x"}}}}),
            "/metadata",
            json!({"labels_has": "node-role.kubernetes.io/infra", "annotations": {"note": "x"}}),
        ),
        (
            json!({"metadata": {"annotations": {"machine.openshift.io/delete-machine": "true", "machine.openshift.io/instance-state": "running"}}}),
            "/metadata/annotations",
            json!({"cluster.x-k8s.io/delete-machine": "true"}),
        ),
        (
            json!({"metadata": {"ownerReferences": null}}),
            "/metadata/labels/cluster.x-k8s.io~1set-name",
            Value::Null,
        ),
    ];
    for (patch, pointer, expected) in rows {
        let converted = to_capi::convert_machine(&mapi_machine(&patch), &infra())
            .unwrap_or_else(|e| panic!("{patch}: {e}"));
        let machine = json(&converted.value.machine);
        if pointer == "/metadata" {
            let label = expected["labels_has"].as_str().unwrap_or_default();
            assert!(machine["metadata"]["labels"].get(label).is_some(), "{patch}");
            assert_eq!(
                machine["metadata"]["annotations"], expected["annotations"],
                "{patch}"
            );
            // The AWSMachine carries the same labels and annotations.
            assert_eq!(
                json(&converted.value.aws_machine.metadata.labels),
                machine["metadata"]["labels"]
            );
            continue;
        }
        assert_eq!(
            machine.pointer(pointer).unwrap_or(&Value::Null),
            &expected,
            "{patch}: {pointer}"
        );
    }
}

#[test]
fn dual_stack_clusters_get_resource_name_hostnames() {
    for family in [IpFamily::DualStackIPv4Primary, IpFamily::DualStackIPv6Primary] {
        let infra = AwsInfrastructure {
            ip_family: family,
            ..infra()
        };
        let converted =
            to_capi::convert_machine(&mapi_machine(&json!({})), &infra).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            json(&converted.value.aws_machine.spec)["privateDnsName"],
            json!({"enableResourceNameDnsAAAARecord": true, "enableResourceNameDnsARecord": true, "hostnameType": "resource-name"})
        );
    }
}

#[test]
fn unsupported_mapi_fields_are_errors_with_their_paths() {
    let value = "spec.providerSpec.value";
    let rows: Vec<(Value, Vec<String>)> = vec![
        (
            provider_patch(json!({"credentialsSecret": {"name": "my-creds"}})),
            vec![format!("{value}.credentialsSecret.name")],
        ),
        (
            provider_patch(json!({"placement": {"region": "eu-west-1"}})),
            vec![format!("{value}.placement.region")],
        ),
        (
            provider_patch(json!({"metadata": {"name": "x"}})),
            vec![format!("{value}.metadata")],
        ),
        (
            provider_patch(json!({"deviceIndex": 1})),
            vec![format!("{value}.deviceIndex")],
        ),
        (
            provider_patch(json!({"networkInterfaceType": "SRIOV"})),
            vec![format!("{value}.networkInterfaceType")],
        ),
        (
            provider_patch(json!({"loadBalancers": [{"name": "lb", "type": "network"}]})),
            vec![format!("{value}.loadBalancers")],
        ),
        (
            provider_patch(json!({"ami": {"id": null, "arn": "arn:aws:ec2:ami"}})),
            vec![format!("{value}.ami.arn")],
        ),
        (
            provider_patch(
                json!({"ami": {"id": null, "filters": [{"name": "tag:Name", "values": ["rhcos"]}]}}),
            ),
            vec![format!("{value}.ami.filters")],
        ),
        (
            provider_patch(json!({"ami": {"id": null}})),
            vec![format!("{value}.ami.id")],
        ),
        (
            provider_patch(
                json!({"blockDevices": [{"noDevice": "", "virtualName": "ephemeral0", "ebs": {"volumeSize": 8}}]}),
            ),
            vec![
                format!("{value}.blockDevices[0].noDevice"),
                format!("{value}.blockDevices[0].virtualName"),
            ],
        ),
        (
            provider_patch(
                json!({"blockDevices": [{"ebs": {"volumeSize": 8}}, {"deviceName": "/dev/sdb", "ebs": {"volumeSize": 8, "deleteOnTermination": false}}]}),
            ),
            vec![format!("{value}.blockDevices[1].ebs.deleteOnTermination")],
        ),
        (
            provider_patch(json!({"blockDevices": [{"ebs": {"volumeSize": 8}}, {"ebs": {"volumeSize": 9}}]})),
            vec![format!("{value}.blockDevices[1].deviceName")],
        ),
        (
            provider_patch(
                json!({"blockDevices": [{"ebs": {"volumeSize": 8, "kmsKey": {"filters": [{"name": "alias"}]}}}]}),
            ),
            vec![format!("{value}.blockDevices[0].ebs.kmsKey.filters")],
        ),
        (
            provider_patch(
                json!({"iamInstanceProfile": {"id": null, "arn": "arn:aws:iam::1:instance-profile/x"}}),
            ),
            vec![format!("{value}.iamInstanceProfile.arn")],
        ),
        (
            provider_patch(json!({"securityGroups": [{"arn": "arn:sg"}]})),
            vec![format!("{value}.securityGroups[0].arn")],
        ),
        (
            provider_patch(json!({"subnet": {"arn": "arn:subnet"}})),
            vec![format!("{value}.subnet.arn")],
        ),
        (
            provider_patch(json!({"marketType": "Reserved"})),
            vec![format!("{value}.marketType")],
        ),
        (
            provider_patch(json!({"placement": {"tenancy": "shared"}})),
            vec![format!("{value}.placement.tenancy")],
        ),
        (
            provider_patch(json!({"metadataServiceOptions": {"authentication": "Sometimes"}})),
            vec![format!("{value}.metadataServiceOptions.authentication")],
        ),
        (
            provider_patch(json!({"cpuOptions": {"confidentialCompute": "TDX"}})),
            vec![format!("{value}.cpuOptions.confidentialCompute")],
        ),
        (
            provider_patch(json!({"placement": {"host": {"affinity": "DedicatedHost"}}})),
            vec![format!("{value}.placement.host.dedicatedHost")],
        ),
        (
            provider_patch(json!({"instanceType": ""})),
            vec![format!("{value}.instanceType")],
        ),
        (
            provider_patch(json!({"futureField": {"on": true}})),
            vec![format!("{value}.futureField")],
        ),
        (
            provider_patch(json!({"kind": "GCPMachineProviderSpec"})),
            vec![format!("{value}.kind")],
        ),
        (
            provider_patch(json!({"instanceType": 7})),
            vec![format!("{value}.instanceType")],
        ),
        (
            // A foreign kind is the one error, whatever else does not fit the AWS type.
            provider_patch(json!({"kind": "GCPMachineProviderSpec", "instanceType": 7, "zone": "z"})),
            vec![format!("{value}.kind")],
        ),
        (
            provider_patch(
                json!({"blockDevices": [{"ebs": {"volumeSize": 120, "newKnob": true}}], "later": [1]}),
            ),
            vec![
                format!("{value}.blockDevices[0].ebs.newKnob"),
                format!("{value}.later"),
            ],
        ),
        (
            provider_patch(json!({"metadataServiceOptions": {"hopLimit": 2}})),
            vec![format!("{value}.metadataServiceOptions.hopLimit")],
        ),
        (
            json!({"spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]}}),
            vec!["spec.taints".to_owned()],
        ),
        (
            json!({"spec": {"metadata": {"name": "n", "generateName": "g", "namespace": "ns"}}}),
            vec![
                "spec.metadata.name".to_owned(),
                "spec.metadata.generateName".to_owned(),
                "spec.metadata.namespace".to_owned(),
            ],
        ),
        (
            json!({"spec": {"providerID": "aws:///us-east-2a/"}}),
            vec!["spec.providerID".to_owned()],
        ),
        (
            json!({"metadata": {"ownerReferences": [{"apiVersion": "machine.openshift.io/v1", "kind": "ControlPlaneMachineSet", "name": "cluster", "uid": "u"}]}}),
            vec!["metadata.ownerReferences[0]".to_owned()],
        ),
        (
            json!({"metadata": {"ownerReferences": [
                {"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet", "name": "a", "uid": "1"},
                {"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet", "name": "b", "uid": "2"}]}}),
            vec!["metadata.ownerReferences".to_owned()],
        ),
        (
            json!({"metadata": {"ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "u"}]}}),
            vec!["metadata.ownerReferences[0]".to_owned()],
        ),
    ];
    for (patch, expected) in rows {
        let Err(errors) = to_capi::convert_machine(&mapi_machine(&patch), &infra()) else {
            panic!("{patch} converted, expected errors at {expected:?}");
        };
        assert_eq!(error_paths(&errors), expected, "{patch}");
    }
}

#[test]
fn unknown_fields_holding_go_zero_values_carry_nothing() {
    let patch = provider_patch(json!({"later": {"a": "", "b": {}}, "gone": [], "off": {"x": {"y": ""}}}));
    let converted = to_capi::convert_machine(&mapi_machine(&patch), &infra());
    let base = to_capi::convert_machine(&mapi_machine(&json!({})), &infra());
    assert_eq!(
        converted.map(|c| c.warnings).map_err(|e| error_paths(&e)),
        base.map(|c| c.warnings).map_err(|e| error_paths(&e))
    );
}

#[test]
fn every_error_of_an_object_is_reported_at_once() {
    let patch = json!({
        "spec": {
            "taints": [{"key": "gpu", "effect": "NoSchedule"}],
            "providerSpec": {"value": {"deviceIndex": 2, "credentialsSecret": {"name": "x"}, "ami": {"id": null, "arn": "a"}}}
        }
    });
    let Err(errors) = to_capi::convert_machine(&mapi_machine(&patch), &infra()) else {
        panic!("converted");
    };
    let mut paths = error_paths(&errors);
    paths.sort();
    assert_eq!(
        paths,
        [
            "spec.providerSpec.value.ami.arn",
            "spec.providerSpec.value.credentialsSecret.name",
            "spec.providerSpec.value.deviceIndex",
            "spec.taints"
        ]
    );
}

#[test]
fn lossy_mapi_fields_are_warnings() {
    let value = "spec.providerSpec.value";
    let rows = [
        (
            json!({"blockDevices": [{"ebs": {"volumeSize": 8, "deleteOnTermination": false}}]}),
            format!("{value}.blockDevices[0].ebs.deleteOnTermination"),
        ),
        (
            json!({"blockDevices": [{"ebs": {"volumeSize": 8}}, {"deviceName": "/dev/sdb"}]}),
            format!("{value}.blockDevices[1].ebs"),
        ),
        (
            json!({"blockDevices": [{"ebs": {"volumeType": "gp3"}}]}),
            format!("{value}.blockDevices[0].ebs.volumeSize"),
        ),
        (
            json!({"tags": [{"name": "a", "value": "1"}, {"name": "a", "value": "2"}]}),
            format!("{value}.tags[1]"),
        ),
    ];
    for (patch, path) in rows {
        let converted = to_capi::convert_machine(&mapi_machine(&provider_patch(patch.clone())), &infra())
            .unwrap_or_else(|e| panic!("{patch}: {e}"));
        let paths: Vec<String> = converted.warnings.iter().map(|w| w.path.to_string()).collect();
        assert_eq!(paths, [path], "{patch}");
    }
}

#[test]
fn capa_fields_map_to_the_provider_spec() {
    // (AWSMachine spec patch, JSON pointer in providerSpec.value, expected)
    let rows = [
        (json!({"ami": {"id": "ami-9"}}), "/ami", json!({"id": "ami-9"})),
        (
            json!({"instanceType": "r7i.2xlarge"}),
            "/instanceType",
            json!("r7i.2xlarge"),
        ),
        (
            json!({"additionalTags": {"z": "26", "a": "1"}}),
            "/tags",
            json!([{"name": "a", "value": "1"}, {"name": "kubernetes.io/cluster/demo-x7k2p", "value": "owned"}, {"name": "z", "value": "26"}]),
        ),
        (
            json!({"iamInstanceProfile": "p"}),
            "/iamInstanceProfile",
            json!({"id": "p"}),
        ),
        (json!({"sshKeyName": "k"}), "/keyName", json!("k")),
        (json!({"publicIP": false}), "/publicIp", json!(false)),
        (
            json!({"networkInterfaceType": "efa"}),
            "/networkInterfaceType",
            json!("EFA"),
        ),
        (
            json!({"networkInterfaceType": "interface"}),
            "/networkInterfaceType",
            json!("ENA"),
        ),
        (
            json!({"additionalSecurityGroups": [{"id": "sg-2"}]}),
            "/securityGroups",
            json!([{"id": "sg-2"}]),
        ),
        (
            json!({"subnet": {"id": "subnet-9", "filters": null}}),
            "/subnet",
            json!({"id": "subnet-9"}),
        ),
        (json!({"tenancy": "host"}), "/placement/tenancy", json!("host")),
        (
            json!({"tenancy": "host"}),
            "/placement/host",
            json!({"affinity": "AnyAvailable"}),
        ),
        (
            json!({"hostAffinity": "host", "hostID": "h-0123456789abcdef0"}),
            "/placement/host",
            json!({"affinity": "DedicatedHost", "dedicatedHost": {"allocationStrategy": "UserProvided", "id": "h-0123456789abcdef0"}}),
        ),
        (
            json!({"hostAffinity": "host", "dynamicHostAllocation": {"tags": {"k": "v"}}}),
            "/placement/host",
            json!({"affinity": "DedicatedHost", "dedicatedHost": {"allocationStrategy": "Dynamic", "dynamicHostAllocation": {"tags": [{"name": "k", "value": "v"}]}}}),
        ),
        (
            json!({"rootVolume": {"size": 64, "type": "io2", "iops": 5000, "encryptionKey": "arn:aws:kms:k", "encrypted": true},
                   "nonRootVolumes": [{"deviceName": "/dev/sdg", "size": 10, "throughput": 300, "encryptionKey": "key-2"}]}),
            "/blockDevices",
            json!([
                {"ebs": {"volumeSize": 64, "volumeType": "io2", "iops": 5000, "kmsKey": {"arn": "arn:aws:kms:k"}, "encrypted": true}},
                {"deviceName": "/dev/sdg", "ebs": {"volumeSize": 10, "throughputMib": 300, "kmsKey": {"id": "key-2"}}}
            ]),
        ),
        (
            json!({"spotMarketOptions": {"maxPrice": "1"}}),
            "/spotMarketOptions",
            json!({"maxPrice": "1"}),
        ),
        (
            json!({"instanceMetadataOptions": {"httpTokens": "required"}}),
            "/metadataServiceOptions",
            json!({"authentication": "Required"}),
        ),
        (
            json!({"placementGroupName": "pg", "placementGroupPartition": 7}),
            "/placementGroupPartition",
            json!(7),
        ),
        (
            json!({"capacityReservationId": "cr-9"}),
            "/capacityReservationId",
            json!("cr-9"),
        ),
        (
            json!({"marketType": "CapacityBlock"}),
            "/marketType",
            json!("CapacityBlock"),
        ),
        (
            json!({"cpuOptions": {"confidentialCompute": "Disabled"}}),
            "/cpuOptions",
            json!({"confidentialCompute": "Disabled"}),
        ),
    ];
    for (patch, pointer, expected) in rows {
        let (machine, aws) = capi_pair(&json!({}), &json!({"spec": patch}));
        let converted =
            to_mapi::convert_machine(&machine, &aws, &infra()).unwrap_or_else(|e| panic!("{patch}: {e}"));
        let provider = json(&converted.value.spec.provider_spec.and_then(|p| p.value));
        assert_eq!(provider.pointer(pointer), Some(&expected), "{patch}: {pointer}");
    }
}

#[test]
fn capi_machine_fields_map_to_the_mapi_machine() {
    let rows = [
        (
            json!({"spec": {"failureDomain": "us-east-2b"}}),
            "/spec/providerSpec/value/placement/availabilityZone",
            json!("us-east-2b"),
        ),
        (
            json!({"spec": {"failureDomain": "us-east-2b"}}),
            "/metadata/labels/machine.openshift.io~1zone",
            json!("us-east-2b"),
        ),
        (
            json!({"spec": {"bootstrap": {"dataSecretName": "ud-2"}}}),
            "/spec/providerSpec/value/userDataSecret",
            json!({"name": "ud-2"}),
        ),
        (
            json!({"spec": {"providerID": "aws:///z/i-9"}}),
            "/spec/providerID",
            json!("aws:///z/i-9"),
        ),
        (
            json!({"metadata": {"annotations": {"pre-drain.delete.hook.machine.cluster.x-k8s.io/d": "o"}}}),
            "/spec/lifecycleHooks",
            json!({"preDrain": [{"name": "d", "owner": "o"}]}),
        ),
        (
            json!({"metadata": {"annotations": {"cluster.x-k8s.io/delete-machine": "", "cluster.x-k8s.io/paused": ""}}}),
            "/metadata/annotations",
            json!({"machine.openshift.io/delete-machine": ""}),
        ),
        (
            json!({"metadata": {"labels": {"node-role.kubernetes.io/infra": "", "team": "a"}}}),
            "/spec/metadata/labels/team",
            json!("a"),
        ),
        (
            json!({}),
            "/metadata/finalizers",
            json!(["machine.machine.openshift.io"]),
        ),
        (
            json!({}),
            "/spec/providerSpec/value/placement/region",
            json!("us-east-2"),
        ),
        (
            json!({}),
            "/spec/providerSpec/value/credentialsSecret",
            json!({"name": "aws-cloud-credentials"}),
        ),
    ];
    for (patch, pointer, expected) in rows {
        let (machine, aws) = capi_pair(&patch, &json!({}));
        let converted =
            to_mapi::convert_machine(&machine, &aws, &infra()).unwrap_or_else(|e| panic!("{patch}: {e}"));
        assert_eq!(
            json(&converted.value).pointer(pointer),
            Some(&expected),
            "{patch}: {pointer}"
        );
    }
}

#[test]
fn unsupported_capi_fields_are_errors_with_their_paths() {
    let aws = "awsMachine.spec";
    let rows: Vec<(Value, Value, Vec<String>)> = vec![
        (
            json!({"spec": {"version": "v1.33.0"}}),
            json!({}),
            vec!["spec.version".into()],
        ),
        (
            json!({"spec": {"deletion": {"nodeDrainTimeoutSeconds": 60}}}),
            json!({}),
            vec!["spec.deletion.nodeDrainTimeoutSeconds".into()],
        ),
        (
            json!({"spec": {"deletion": {"nodeVolumeDetachTimeoutSeconds": 60}}}),
            json!({}),
            vec!["spec.deletion.nodeVolumeDetachTimeoutSeconds".into()],
        ),
        (
            json!({"spec": {"deletion": {"nodeDeletionTimeoutSeconds": 20}}}),
            json!({}),
            vec!["spec.deletion.nodeDeletionTimeoutSeconds".into()],
        ),
        (
            json!({"spec": {"readinessGates": [{"conditionType": "X"}]}}),
            json!({}),
            vec!["spec.readinessGates".into()],
        ),
        (
            json!({"spec": {"bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfig", "name": "c"}}}}),
            json!({}),
            vec!["spec.bootstrap.configRef".into()],
        ),
        (
            json!({"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}),
            json!({}),
            vec!["spec.taints".into()],
        ),
        (
            json!({"spec": {"minReadySeconds": 30}}),
            json!({}),
            vec!["spec.minReadySeconds".into()],
        ),
        (
            json!({"spec": {"infrastructureRef": {"kind": "DevMachine"}}}),
            json!({}),
            vec!["spec.infrastructureRef".into()],
        ),
        (
            json!({}),
            json!({"spec": {"imageLookupOrg": "123"}}),
            vec![format!("{aws}.imageLookupOrg")],
        ),
        (
            json!({}),
            json!({"spec": {"imageLookupFormat": "f"}}),
            vec![format!("{aws}.imageLookupFormat")],
        ),
        (
            json!({}),
            json!({"spec": {"imageLookupBaseOS": "rhel"}}),
            vec![format!("{aws}.imageLookupBaseOS")],
        ),
        (
            json!({}),
            json!({"spec": {"ami": {"eksLookupType": "AmazonLinux"}}}),
            vec![format!("{aws}.ami.eksLookupType")],
        ),
        (
            json!({}),
            json!({"spec": {"securityGroupOverrides": {"node": "sg-1"}}}),
            vec![format!("{aws}.securityGroupOverrides")],
        ),
        (
            json!({}),
            json!({"spec": {"networkInterfaces": ["eni-1"]}}),
            vec![format!("{aws}.networkInterfaces")],
        ),
        (
            json!({}),
            json!({"spec": {"cloudInit": {"secretCount": 1}}}),
            vec![format!("{aws}.cloudInit")],
        ),
        (
            json!({}),
            json!({"spec": {"uncompressedUserData": true}}),
            vec![format!("{aws}.uncompressedUserData")],
        ),
        (
            json!({}),
            json!({"spec": {"ignition": {"proxy": {"httpProxy": "p"}}}}),
            vec![format!("{aws}.ignition.proxy")],
        ),
        (
            json!({}),
            json!({"spec": {"ignition": {"tls": {"certificateAuthorities": ["c"]}}}}),
            vec![format!("{aws}.ignition.tls")],
        ),
        (
            json!({}),
            json!({"spec": {"instanceMetadataOptions": {"httpEndpoint": "disabled"}}}),
            vec![format!("{aws}.instanceMetadataOptions.httpEndpoint")],
        ),
        (
            json!({}),
            json!({"spec": {"instanceMetadataOptions": {"httpPutResponseHopLimit": 2}}}),
            vec![format!("{aws}.instanceMetadataOptions.httpPutResponseHopLimit")],
        ),
        (
            json!({}),
            json!({"spec": {"instanceMetadataOptions": {"instanceMetadataTags": "enabled"}}}),
            vec![format!("{aws}.instanceMetadataOptions.instanceMetadataTags")],
        ),
        (
            json!({}),
            json!({"spec": {"elasticIpPool": {"publicIpv4Pool": "ipv4pool-ec2-1"}}}),
            vec![format!("{aws}.elasticIpPool")],
        ),
        (
            json!({}),
            json!({"spec": {"capacityReservationPreference": "Open"}}),
            vec![format!("{aws}.capacityReservationPreference")],
        ),
        (
            json!({}),
            json!({"spec": {"privateDnsName": {"hostnameType": "ip-name"}}}),
            vec![format!("{aws}.privateDnsName")],
        ),
        (
            json!({}),
            json!({"spec": {"rootVolume": {"size": 8, "deviceName": "/dev/xvda"}}}),
            vec![format!("{aws}.rootVolume.deviceName")],
        ),
        (
            json!({}),
            json!({"spec": {"nonRootVolumes": [{"size": 8}]}}),
            vec![format!("{aws}.nonRootVolumes[0].deviceName")],
        ),
        (
            json!({}),
            json!({"spec": {"hostID": "host-1"}}),
            vec![format!("{aws}.hostID")],
        ),
        (
            json!({}),
            json!({"spec": {"hostAffinity": "host"}}),
            vec![format!("{aws}.hostID")],
        ),
        (
            json!({}),
            json!({"spec": {"hostAffinity": "default", "dynamicHostAllocation": {}}}),
            vec![format!("{aws}.dynamicHostAllocation")],
        ),
        (
            json!({}),
            json!({"spec": {"placementGroupPartition": 3_000_000_000_i64}}),
            vec![format!("{aws}.placementGroupPartition")],
        ),
        (
            json!({}),
            json!({"spec": {"rootVolume": {"size": 8, "throughput": 3_000_000_000_i64}}}),
            vec![format!("{aws}.rootVolume.throughput")],
        ),
    ];
    for (machine_patch, aws_patch, expected) in rows {
        let (machine, aws_machine) = capi_pair(&machine_patch, &aws_patch);
        let Err(errors) = to_mapi::convert_machine(&machine, &aws_machine, &infra()) else {
            panic!("{machine_patch} {aws_patch} converted, expected errors at {expected:?}");
        };
        assert_eq!(error_paths(&errors), expected, "{machine_patch} {aws_patch}");
    }
}

#[test]
fn lossy_capi_fields_are_warnings() {
    let (machine, aws) = capi_pair(
        &json!({"spec": {"clusterName": "other"}}),
        &json!({"spec": {"ignition": {"storageType": "ClusterObjectStore"}}}),
    );
    let converted = to_mapi::convert_machine(&machine, &aws, &infra()).unwrap_or_else(|e| panic!("{e}"));
    let paths: Vec<String> = converted.warnings.iter().map(|w| w.path.to_string()).collect();
    assert_eq!(
        paths,
        ["spec.clusterName", "awsMachine.spec.ignition.storageType"]
    );
}

#[test]
fn machine_sets_map_their_own_fields_both_ways() {
    let set: mapi::MachineSet = fixture("installer-worker-machineset.yaml");
    let mut value = json(&set);
    merge(
        &mut value,
        &json!({"spec": {"deletePolicy": "Oldest", "minReadySeconds": 45, "replicas": 5,
            "selector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]}}}),
    );
    let set: mapi::MachineSet = serde_json::from_value(value).unwrap_or_default();
    let converted = to_capi::convert_machine_set(&set, &infra())
        .unwrap_or_else(|e| panic!("{e}"))
        .value;
    let capi = json(&converted.machine_set);
    assert_eq!(capi["spec"]["deletion"]["order"], "Oldest");
    assert_eq!(capi["spec"]["template"]["spec"]["minReadySeconds"], 45);
    assert_eq!(capi["spec"]["replicas"], 5);
    assert_eq!(
        capi["spec"]["selector"]["matchExpressions"],
        json!([{"key": "tier", "operator": "In", "values": ["a"]}])
    );
    let back = to_mapi::convert_machine_set(&converted.machine_set, &converted.template, &infra())
        .unwrap_or_else(|e| panic!("{e}"))
        .value;
    assert_eq!(back.spec.delete_policy.as_deref(), Some("Oldest"));
    assert_eq!(back.spec.min_ready_seconds, Some(45));
    assert_eq!(back.spec.replicas, Some(5));
    assert_eq!(back.spec.selector, set.spec.selector);

    // CAPI-only MachineSet fields.
    let mut capi_set = converted.machine_set.clone();
    capi_set.spec.machine_naming = Some(capi::MachineNamingSpec {
        template: Some("{{ .machineSet.name }}-{{ .random }}".into()),
    });
    capi_set.spec.template.spec.infrastructure_ref.kind = "AWSMachine".into();
    let Err(errors) = to_mapi::convert_machine_set(&capi_set, &converted.template, &infra()) else {
        panic!("converted");
    };
    assert_eq!(
        error_paths(&errors),
        [
            "spec.template.spec.infrastructureRef",
            "spec.machineNaming.template"
        ]
    );

    // MAPI template fields without a CAPI counterpart.
    let mut value = json(&set);
    merge(
        &mut value,
        &json!({"spec": {"template": {"metadata": {"name": "x", "namespace": "y"}, "spec": {"providerID": "aws:///a/i-1"}}}}),
    );
    let set: mapi::MachineSet = serde_json::from_value(value).unwrap_or_default();
    let Err(errors) = to_capi::convert_machine_set(&set, &infra()) else {
        panic!("converted");
    };
    assert_eq!(
        error_paths(&errors),
        [
            "spec.template.metadata.name",
            "spec.template.metadata.namespace",
            "spec.template.spec.providerID"
        ]
    );
}

#[test]
fn template_names_are_a_hash_of_the_spec() {
    let set: mapi::MachineSet = fixture("installer-worker-machineset.yaml");
    let name = |set: &mapi::MachineSet| {
        to_capi::convert_machine_set(set, &infra())
            .map(|c| c.value.template.metadata.name.unwrap_or_default())
            .unwrap_or_default()
    };
    let first = name(&set);
    assert!(first.starts_with("demo-x7k2p-worker-us-east-2a-"), "{first}");
    assert_eq!(first.len(), "demo-x7k2p-worker-us-east-2a-".len() + 8);
    assert_eq!(name(&set), first, "the same spec gives the same name");
    let mut value = json(&set);
    merge(
        &mut value,
        &json!({"spec": {"template": {"spec": {"providerSpec": {"value": {"instanceType": "m6i.2xlarge"}}}}}}),
    );
    let bigger: mapi::MachineSet = serde_json::from_value(value).unwrap_or_default();
    assert_ne!(name(&bigger), first, "another spec gives another name");
    let mut value = json(&set);
    merge(&mut value, &json!({"spec": {"replicas": 9}}));
    let scaled: mapi::MachineSet = serde_json::from_value(value).unwrap_or_default();
    assert_eq!(name(&scaled), first, "scaling keeps the template");
}

/// The messages a person reads (`controllers convert --check`, the `Synchronized`
/// condition): values as the object shows them, never Rust's `Some(2)` or a placeholder
/// `"set"` standing for "any value".
#[test]
fn error_messages_show_values_as_the_object_does() {
    let aws_patch = json!({"spec": {
        "instanceMetadataOptions": {"httpPutResponseHopLimit": 2},
        "cloudInit": {"secretCount": 1},
        "imageLookupOrg": "123456789012",
    }});
    let (machine, aws_machine) = capi_pair(&json!({}), &aws_patch);
    let Err(errors) = to_mapi::convert_machine(&machine, &aws_machine, &infra()) else {
        panic!("converted");
    };
    let mut messages: Vec<String> = errors.errors.iter().map(ToString::to_string).collect();
    messages.sort();
    assert_eq!(
        messages,
        [
            "awsMachine.spec.cloudInit: Forbidden: cloudInit is not supported (OpenShift uses Ignition)",
            "awsMachine.spec.imageLookupOrg: Unsupported value: \"123456789012\": imageLookupOrg is not supported by the Machine API",
            "awsMachine.spec.instanceMetadataOptions.httpPutResponseHopLimit: Unsupported value: 2: only 1 is supported",
        ]
    );

    let patch =
        provider_patch(json!({"notAField": "x", "ami": {"filters": [{"name": "n", "values": ["v"]}]}}));
    let Err(errors) = to_capi::convert_machine(&mapi_machine(&patch), &infra()) else {
        panic!("converted");
    };
    let mut messages: Vec<String> = errors.errors.iter().map(ToString::to_string).collect();
    messages.sort();
    assert_eq!(
        messages,
        [
            "spec.providerSpec.value.ami.filters: Unsupported value: [{\"name\":\"n\",\"values\":[\"v\"]}]: an AMI by filters is not supported by Cluster API",
            "spec.providerSpec.value.notAField: Forbidden: not a field of AWSMachineProviderConfig; it would be lost",
        ]
    );
}

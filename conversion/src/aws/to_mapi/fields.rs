//! `AWSMachine.spec` → `AWSMachineProviderConfig`, field by field.

use crate::aws::capa::awsmachines::{
    AwsMachineCpuOptionsConfidentialCompute, AwsMachineHostAffinity, AwsMachineIgnitionStorageType,
    AwsMachineInstanceMetadataOptionsHttpEndpoint, AwsMachineInstanceMetadataOptionsHttpTokens,
    AwsMachineInstanceMetadataOptionsInstanceMetadataTags, AwsMachineMarketType,
    AwsMachineNetworkInterfaceType, AwsMachineSpec, AwsMachineTenancy,
};
use crate::aws::infrastructure::{AwsInfrastructure, IpFamily};
use crate::aws::provider::{
    self, AwsMachineProviderConfig, AwsResourceReference, BlockDeviceMappingSpec, CpuOptions, DedicatedHost,
    DynamicHostAllocationSpec, EbsBlockDeviceSpec, Filter, HostPlacement, LocalObjectReference,
    MetadataServiceOptions, Placement, SpotMarketOptions, TagSpecification,
};
use crate::aws::to_capi::DEFAULT_CREDENTIALS_SECRET;
use crate::errors::{FieldError, FieldPath, Report};

/// What the providerSpec takes from the CAPI Machine rather than the `AWSMachine`.
pub(crate) struct MachineFacts<'a> {
    pub(crate) failure_domain: Option<&'a str>,
    pub(crate) user_data_secret: Option<&'a str>,
    /// A control plane machine's load balancers (the AWSCluster's).
    pub(crate) load_balancers: Option<Vec<provider::LoadBalancerReference>>,
}

/// The providerSpec for `spec` (at `path`, the `AWSMachine`'s `spec` or the template's
/// `spec.template.spec`).
pub(crate) fn to_provider_config(
    spec: &AwsMachineSpec,
    machine: &MachineFacts<'_>,
    infra: &AwsInfrastructure,
    path: &FieldPath,
    report: &mut Report,
) -> AwsMachineProviderConfig {
    reject_unsupported(spec, infra, path, report);
    let tenancy = spec.tenancy.as_ref().map(|t| {
        match t {
            AwsMachineTenancy::Default => "default",
            AwsMachineTenancy::Dedicated => "dedicated",
            AwsMachineTenancy::Host => "host",
        }
        .to_owned()
    });
    let placement_group_partition = spec.placement_group_partition.and_then(|partition| {
        i32::try_from(partition).map_or_else(
            |_| {
                report.error(FieldError::invalid(
                    path.child("placementGroupPartition"),
                    partition,
                    "exceeds the Machine API's int32 range",
                ));
                None
            },
            Some,
        )
    });
    let mut config = AwsMachineProviderConfig {
        api_version: Some(provider::PROVIDER_API_VERSION.to_owned()),
        kind: Some(provider::PROVIDER_CONFIG_KIND.to_owned()),
        metadata: None,
        ami: AwsResourceReference {
            id: spec.ami.as_ref().and_then(|a| a.id.clone()),
            ..AwsResourceReference::default()
        },
        instance_type: spec.instance_type.clone(),
        cpu_options: spec
            .cpu_options
            .as_ref()
            .and_then(|c| c.confidential_compute.as_ref())
            .map(|c| CpuOptions {
                confidential_compute: Some(
                    match c {
                        AwsMachineCpuOptionsConfidentialCompute::Disabled => "Disabled",
                        AwsMachineCpuOptionsConfidentialCompute::AmdEncryptedVirtualizationNestedPaging => {
                            "AMDEncryptedVirtualizationNestedPaging"
                        }
                    }
                    .to_owned(),
                ),
            }),
        tags: spec
            .additional_tags
            .as_ref()
            .filter(|t| !t.is_empty())
            .map(|tags| {
                tags.iter()
                    .map(|(name, value)| TagSpecification {
                        name: name.clone(),
                        value: value.clone(),
                    })
                    .collect()
            }),
        iam_instance_profile: spec.iam_instance_profile.clone().map(AwsResourceReference::id),
        user_data_secret: machine.user_data_secret.map(|name| LocalObjectReference {
            name: name.to_owned(),
        }),
        credentials_secret: Some(LocalObjectReference {
            name: DEFAULT_CREDENTIALS_SECRET.to_owned(),
        }),
        key_name: spec.ssh_key_name.clone(),
        device_index: 0,
        public_ip: spec.public_ip,
        network_interface_type: spec.network_interface_type.as_ref().map(|t| {
            match t {
                AwsMachineNetworkInterfaceType::Interface => "ENA",
                AwsMachineNetworkInterfaceType::Efa => "EFA",
            }
            .to_owned()
        }),
        security_groups: spec.additional_security_groups.as_ref().map(|groups| {
            groups
                .iter()
                .map(|g| {
                    reference(
                        g.id.clone(),
                        g.filters
                            .as_ref()
                            .map(|f| filters(f.iter().map(|f| (&f.name, &f.values)))),
                    )
                })
                .collect()
        }),
        subnet: spec
            .subnet
            .as_ref()
            .map(|s| {
                reference(
                    s.id.clone(),
                    s.filters
                        .as_ref()
                        .map(|f| filters(f.iter().map(|f| (&f.name, &f.values)))),
                )
            })
            .unwrap_or_default(),
        placement: Placement {
            region: infra.region.clone(),
            availability_zone: machine.failure_domain.unwrap_or_default().to_owned(),
            tenancy: tenancy.clone(),
            host: None,
        },
        load_balancers: machine.load_balancers.clone(),
        block_devices: None,
        spot_market_options: spec.spot_market_options.as_ref().map(|s| SpotMarketOptions {
            max_price: s.max_price.clone(),
        }),
        metadata_service_options: MetadataServiceOptions {
            authentication: spec
                .instance_metadata_options
                .as_ref()
                .and_then(|o| o.http_tokens.as_ref())
                .map(|t| {
                    match t {
                        AwsMachineInstanceMetadataOptionsHttpTokens::Optional => "Optional",
                        AwsMachineInstanceMetadataOptionsHttpTokens::Required => "Required",
                    }
                    .to_owned()
                }),
        },
        placement_group_name: spec.placement_group_name.clone().unwrap_or_default(),
        placement_group_partition: placement_group_partition.filter(|p| *p > 0),
        capacity_reservation_id: spec.capacity_reservation_id.clone().unwrap_or_default(),
        market_type: spec.market_type.as_ref().map(|m| {
            match m {
                AwsMachineMarketType::OnDemand => "OnDemand",
                AwsMachineMarketType::Spot => "Spot",
                AwsMachineMarketType::CapacityBlock => "CapacityBlock",
            }
            .to_owned()
        }),
    };
    config.placement.host = dedicated_host(spec, tenancy.as_deref(), path, report);
    config.block_devices = volumes(spec, path, report);
    config
}

fn reference(id: Option<String>, filters: Option<Vec<Filter>>) -> AwsResourceReference {
    AwsResourceReference {
        id,
        arn: None,
        filters,
    }
}

fn filters<'a>(filters: impl Iterator<Item = (&'a String, &'a Vec<String>)>) -> Vec<Filter> {
    filters
        .map(|(name, values)| Filter {
            name: name.clone(),
            values: (!values.is_empty()).then(|| values.clone()),
        })
        .collect()
}

/// A value as the object shows it.
fn json(value: impl serde::Serialize) -> Option<serde_json::Value> {
    serde_json::to_value(value).ok()
}

/// Every `AWSMachine` field the Machine API has no way to express.
fn reject_unsupported(
    spec: &AwsMachineSpec,
    infra: &AwsInfrastructure,
    path: &FieldPath,
    report: &mut Report,
) {
    // `None`: a field whose value says nothing more (reported as Forbidden).
    let mut unsupported = |field: FieldPath, value: Option<serde_json::Value>, message: &str| {
        report.error(match value {
            Some(value) => FieldError::unsupported(field, value, message),
            None => FieldError::forbidden(field, message),
        });
    };
    if let Some(lookup) = spec.ami.as_ref().and_then(|a| a.eks_lookup_type.as_ref()) {
        unsupported(
            path.child("ami").child("eksLookupType"),
            json(lookup),
            "EKS AMI lookup is not supported",
        );
    }
    for (field, value) in [
        ("imageLookupFormat", &spec.image_lookup_format),
        ("imageLookupOrg", &spec.image_lookup_org),
        ("imageLookupBaseOS", &spec.image_lookup_base_os),
        (
            "capacityReservationPreference",
            &spec.capacity_reservation_preference,
        ),
    ] {
        if let Some(value) = value.as_deref().filter(|v| !v.is_empty()) {
            unsupported(
                path.child(field),
                json(value),
                &format!("{field} is not supported by the Machine API"),
            );
        }
    }
    if spec
        .security_group_overrides
        .as_ref()
        .is_some_and(|o| !o.is_empty())
    {
        unsupported(
            path.child("securityGroupOverrides"),
            json(&spec.security_group_overrides),
            "securityGroupOverrides are not supported",
        );
    }
    if spec.network_interfaces.as_ref().is_some_and(|n| !n.is_empty()) {
        unsupported(
            path.child("networkInterfaces"),
            json(&spec.network_interfaces),
            "networkInterfaces are not supported",
        );
    }
    if let Some(value) = spec.uncompressed_user_data {
        unsupported(
            path.child("uncompressedUserData"),
            json(value),
            "uncompressedUserData is not supported",
        );
    }
    if spec.cloud_init.as_ref().is_some_and(|c| c != &Default::default()) {
        unsupported(
            path.child("cloudInit"),
            None,
            "cloudInit is not supported (OpenShift uses Ignition)",
        );
    }
    if spec.elastic_ip_pool.is_some() {
        unsupported(
            path.child("elasticIpPool"),
            None,
            "elasticIpPool is not supported by the Machine API",
        );
    }
    if let Some(ignition) = &spec.ignition {
        if ignition.proxy.is_some() {
            unsupported(
                path.child("ignition").child("proxy"),
                None,
                "ignition proxy is not supported",
            );
        }
        if ignition.tls.is_some() {
            unsupported(
                path.child("ignition").child("tls"),
                None,
                "ignition tls is not supported",
            );
        }
        if ignition.storage_type == Some(AwsMachineIgnitionStorageType::ClusterObjectStore) {
            report.warn(
                path.child("ignition").child("storageType"),
                "the Machine API always passes Ignition as unencrypted user data",
            );
        }
    }
    if let Some(dns) = &spec.private_dns_name {
        let dual_stack = matches!(
            infra.ip_family,
            IpFamily::DualStackIPv4Primary | IpFamily::DualStackIPv6Primary
        );
        if !dual_stack || dns != &crate::aws::to_capi::dual_stack_dns_name() {
            report.error(FieldError::unsupported(
                path.child("privateDnsName"),
                dns,
                "the Machine API derives private DNS names from the cluster's IP family; other settings are not supported",
            ));
        }
    }
    if let Some(options) = &spec.instance_metadata_options {
        let path = path.child("instanceMetadataOptions");
        if options
            .http_endpoint
            .as_ref()
            .is_some_and(|e| e != &AwsMachineInstanceMetadataOptionsHttpEndpoint::Enabled)
        {
            report.error(FieldError::unsupported(
                path.child("httpEndpoint"),
                "disabled",
                "only enabled is supported",
            ));
        }
        if options.http_put_response_hop_limit.is_some_and(|l| l != 1) {
            report.error(FieldError::unsupported(
                path.child("httpPutResponseHopLimit"),
                options.http_put_response_hop_limit,
                "only 1 is supported",
            ));
        }
        if options
            .instance_metadata_tags
            .as_ref()
            .is_some_and(|t| t != &AwsMachineInstanceMetadataOptionsInstanceMetadataTags::Disabled)
        {
            report.error(FieldError::unsupported(
                path.child("instanceMetadataTags"),
                "enabled",
                "only disabled is supported",
            ));
        }
    }
}

/// `hostAffinity`, `hostID`, `dynamicHostAllocation` → `placement.host`.
fn dedicated_host(
    spec: &AwsMachineSpec,
    tenancy: Option<&str>,
    path: &FieldPath,
    report: &mut Report,
) -> Option<HostPlacement> {
    let host_id = spec.host_id.as_deref();
    if let Some(id) = host_id
        && !is_dedicated_host_id(id)
    {
        report.error(FieldError::invalid(
            path.child("hostID"),
            id,
            "must be h- followed by 8 or 17 lowercase hexadecimal characters",
        ));
        return None;
    }
    let user_provided = |id: &str| DedicatedHost {
        allocation_strategy: Some("UserProvided".to_owned()),
        id: id.to_owned(),
        dynamic_host_allocation: None,
    };
    match spec.host_affinity {
        None => {
            if spec.dynamic_host_allocation.is_some() {
                report.error(FieldError::forbidden(
                    path.child("dynamicHostAllocation"),
                    "only allowed when hostAffinity is host",
                ));
            }
            host_id.map(|id| HostPlacement {
                affinity: None,
                dedicated_host: Some(user_provided(id)),
            })
        }
        Some(AwsMachineHostAffinity::Default) => {
            if spec.dynamic_host_allocation.is_some() {
                report.error(FieldError::forbidden(
                    path.child("dynamicHostAllocation"),
                    "only allowed when hostAffinity is host",
                ));
                return None;
            }
            if tenancy != Some("host") && host_id.is_none() {
                // `default` is CAPA's default: nothing to say on the Machine API side.
                return None;
            }
            Some(HostPlacement {
                affinity: Some("AnyAvailable".to_owned()),
                dedicated_host: host_id.map(user_provided),
            })
        }
        Some(AwsMachineHostAffinity::Host) => match (host_id, &spec.dynamic_host_allocation) {
            (Some(_), Some(_)) => {
                report.error(FieldError::forbidden(
                    path.child("dynamicHostAllocation"),
                    "hostID and dynamicHostAllocation are mutually exclusive",
                ));
                None
            }
            (None, None) => {
                report.error(FieldError::required(
                    path.child("hostID"),
                    "hostID or dynamicHostAllocation is required when hostAffinity is host",
                ));
                None
            }
            (Some(id), None) => Some(HostPlacement {
                affinity: Some("DedicatedHost".to_owned()),
                dedicated_host: Some(user_provided(id)),
            }),
            (None, Some(dynamic)) => Some(HostPlacement {
                affinity: Some("DedicatedHost".to_owned()),
                dedicated_host: Some(DedicatedHost {
                    allocation_strategy: Some("Dynamic".to_owned()),
                    id: String::new(),
                    dynamic_host_allocation: Some(DynamicHostAllocationSpec {
                        tags: dynamic.tags.as_ref().map(|tags| {
                            tags.iter()
                                .map(|(name, value)| TagSpecification {
                                    name: name.clone(),
                                    value: value.clone(),
                                })
                                .collect()
                        }),
                    }),
                }),
            }),
        },
    }
}

/// `h-` and 8 or 17 lowercase hex digits.
fn is_dedicated_host_id(id: &str) -> bool {
    id.strip_prefix("h-").is_some_and(|hex| {
        (hex.len() == 8 || hex.len() == 17)
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

struct Volume<'a> {
    device_name: Option<&'a String>,
    encrypted: Option<bool>,
    encryption_key: Option<&'a String>,
    iops: Option<i64>,
    size: i64,
    throughput: Option<i64>,
    type_: Option<&'a String>,
}

/// The root volume (no device name in MAPI) first, then the others.
fn volumes(
    spec: &AwsMachineSpec,
    path: &FieldPath,
    report: &mut Report,
) -> Option<Vec<BlockDeviceMappingSpec>> {
    let mut out = Vec::new();
    if let Some(root) = &spec.root_volume {
        let path = path.child("rootVolume");
        if root.device_name.as_deref().is_some_and(|d| !d.is_empty()) {
            report.error(FieldError::unsupported(
                path.child("deviceName"),
                &root.device_name,
                "the Machine API names the root volume by leaving deviceName unset",
            ));
        }
        let volume = Volume {
            device_name: None,
            encrypted: root.encrypted,
            encryption_key: root.encryption_key.as_ref(),
            iops: root.iops,
            size: root.size,
            throughput: root.throughput,
            type_: root.r#type.as_ref(),
        };
        out.extend(block_device(&volume, &path, report));
    }
    for (index, other) in spec.non_root_volumes.iter().flatten().enumerate() {
        let path = path.child("nonRootVolumes").index(index);
        if other.device_name.as_deref().is_none_or(str::is_empty) {
            report.error(FieldError::required(
                path.child("deviceName"),
                "a non-root volume needs a deviceName (without one the Machine API takes it for the root volume)",
            ));
            continue;
        }
        let volume = Volume {
            device_name: other.device_name.as_ref(),
            encrypted: other.encrypted,
            encryption_key: other.encryption_key.as_ref(),
            iops: other.iops,
            size: other.size,
            throughput: other.throughput,
            type_: other.r#type.as_ref(),
        };
        out.extend(block_device(&volume, &path, report));
    }
    (!out.is_empty()).then_some(out)
}

fn block_device(
    volume: &Volume<'_>,
    path: &FieldPath,
    report: &mut Report,
) -> Option<BlockDeviceMappingSpec> {
    let throughput_mib = match volume.throughput.map(i32::try_from) {
        None => None,
        Some(Ok(throughput)) => Some(throughput),
        Some(Err(_)) => {
            report.error(FieldError::invalid(
                path.child("throughput"),
                volume.throughput,
                "exceeds the Machine API's int32 range",
            ));
            return None;
        }
    };
    let kms_key = volume.encryption_key.filter(|k| !k.is_empty()).map(|key| {
        if key.starts_with("arn:") {
            AwsResourceReference {
                arn: Some(key.clone()),
                ..AwsResourceReference::default()
            }
        } else {
            AwsResourceReference::id(key.clone())
        }
    });
    Some(BlockDeviceMappingSpec {
        device_name: volume.device_name.cloned(),
        ebs: Some(EbsBlockDeviceSpec {
            delete_on_termination: None,
            encrypted: volume.encrypted,
            kms_key,
            iops: volume.iops.filter(|i| *i != 0),
            throughput_mib,
            volume_size: Some(volume.size),
            volume_type: volume.type_.cloned(),
        }),
        no_device: None,
        virtual_name: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedicated_host_ids_follow_the_aws_pattern() {
        assert!(is_dedicated_host_id("h-0123abcd"));
        assert!(is_dedicated_host_id("h-0123456789abcdef0"));
        assert!(!is_dedicated_host_id("h-0123ABCD"));
        assert!(!is_dedicated_host_id("h-012"));
        assert!(!is_dedicated_host_id("i-0123abcd"));
    }
}

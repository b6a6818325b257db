//! `AWSMachineProviderConfig` → `AWSMachine.spec`, field by field.

use std::collections::BTreeMap;

use crate::aws::capa::awsmachines::{
    AwsMachineAdditionalSecurityGroups, AwsMachineAdditionalSecurityGroupsFilters, AwsMachineAmi,
    AwsMachineCpuOptions, AwsMachineCpuOptionsConfidentialCompute, AwsMachineDynamicHostAllocation,
    AwsMachineHostAffinity, AwsMachineIgnition, AwsMachineIgnitionStorageType,
    AwsMachineInstanceMetadataOptions, AwsMachineInstanceMetadataOptionsHttpEndpoint,
    AwsMachineInstanceMetadataOptionsHttpTokens, AwsMachineInstanceMetadataOptionsInstanceMetadataTags,
    AwsMachineMarketType, AwsMachineNetworkInterfaceType, AwsMachineNonRootVolumes, AwsMachinePrivateDnsName,
    AwsMachinePrivateDnsNameHostnameType, AwsMachineRootVolume, AwsMachineSpec, AwsMachineSpotMarketOptions,
    AwsMachineSubnet, AwsMachineSubnetFilters, AwsMachineTenancy,
};
use crate::aws::infrastructure::{AwsInfrastructure, IpFamily};
use crate::aws::provider::{
    AwsMachineProviderConfig, AwsResourceReference, BlockDeviceMappingSpec, Filter, HostPlacement,
    LoadBalancerReference, TagSpecification,
};
use crate::errors::{FieldError, FieldPath, Report};

/// The credentials Secret every OpenShift AWS cluster has; any other needs a Cluster API
/// identity, which is a manual step.
pub const DEFAULT_CREDENTIALS_SECRET: &str = "aws-cloud-credentials";
/// The root volume size (GiB) the installer writes when none is given.
pub const DEFAULT_ROOT_VOLUME_SIZE: i64 = 120;

/// What the conversion of one providerSpec needs besides the providerSpec.
pub(crate) struct Context<'a> {
    pub(crate) infra: &'a AwsInfrastructure,
    /// Control plane machines may have load balancers (the AWSCluster holds them in CAPI).
    pub(crate) control_plane: bool,
}

/// The AWSMachine spec for `provider` (at `path`, `spec.providerSpec.value`).
pub(crate) fn to_aws_machine_spec(
    provider: &AwsMachineProviderConfig,
    context: &Context<'_>,
    path: &FieldPath,
    report: &mut Report,
) -> AwsMachineSpec {
    let (root_volume, non_root_volumes) = volumes(
        provider.block_devices.as_deref(),
        &path.child("blockDevices"),
        report,
    );
    let placement = &provider.placement;
    let host = placement.host.as_ref();
    let mut spec = AwsMachineSpec {
        ami: ami(&provider.ami, &path.child("ami"), report),
        additional_security_groups: provider.security_groups.as_ref().map(|groups| {
            groups
                .iter()
                .enumerate()
                .map(|(index, group)| {
                    security_group(group, &path.child("securityGroups").index(index), report)
                })
                .collect()
        }),
        additional_tags: tags(provider.tags.as_deref(), &path.child("tags"), report),
        iam_instance_profile: provider.iam_instance_profile.as_ref().and_then(|profile| {
            reference_id_only(
                profile,
                &path.child("iamInstanceProfile"),
                "an IAM instance profile",
                report,
            )
        }),
        ignition: Some(AwsMachineIgnition {
            // OpenShift always hands Ignition to the instance as plain user data.
            storage_type: Some(AwsMachineIgnitionStorageType::UnencryptedUserData),
            ..AwsMachineIgnition::default()
        }),
        network_interface_type: network_interface_type(
            provider.network_interface_type.as_deref(),
            path,
            report,
        ),
        instance_metadata_options: Some(metadata_options(
            provider.metadata_service_options.authentication.as_deref(),
            &path.child("metadataServiceOptions").child("authentication"),
            report,
        )),
        instance_type: provider.instance_type.clone(),
        non_root_volumes,
        root_volume,
        placement_group_name: non_empty(&provider.placement_group_name),
        placement_group_partition: provider
            .placement_group_partition
            .filter(|p| *p != 0)
            .map(i64::from),
        public_ip: provider.public_ip,
        ssh_key_name: provider.key_name.clone(),
        spot_market_options: provider
            .spot_market_options
            .as_ref()
            .map(|spot| AwsMachineSpotMarketOptions {
                max_price: spot.max_price.clone(),
            }),
        subnet: subnet(&provider.subnet, &path.child("subnet"), report),
        tenancy: tenancy(
            placement.tenancy.as_deref(),
            &path.child("placement").child("tenancy"),
            report,
        ),
        market_type: market_type(provider.market_type.as_deref(), &path.child("marketType"), report),
        cpu_options: cpu_options(provider, &path.child("cpuOptions"), report),
        capacity_reservation_id: non_empty(&provider.capacity_reservation_id),
        ..AwsMachineSpec::default()
    };
    dedicated_host(host, &path.child("placement").child("host"), &mut spec, report);
    // CAPA defaults the affinity to `default`; saying so keeps the spec equal to what the
    // API server stores, so a comparison does not see a change that is not there.
    spec.host_affinity.get_or_insert(AwsMachineHostAffinity::Default);
    dual_stack(context.infra.ip_family, &mut spec);

    if provider.instance_type.is_empty() {
        report.error(FieldError::required(
            path.child("instanceType"),
            "an instance type is required",
        ));
    }
    if let Some(secret) = &provider.credentials_secret
        && secret.name != DEFAULT_CREDENTIALS_SECRET
    {
        report.error(FieldError::unsupported(
            path.child("credentialsSecret").child("name"),
            &secret.name,
            format!(
                "only the default credentials secret {DEFAULT_CREDENTIALS_SECRET:?} converts; \
                 another one needs a Cluster API identity, set up by hand"
            ),
        ));
    }
    if !placement.region.is_empty() && placement.region != context.infra.region {
        report.error(FieldError::invalid(
            path.child("placement").child("region"),
            &placement.region,
            format!("must match the cluster's region {:?}", context.infra.region),
        ));
    }
    if provider
        .metadata
        .as_ref()
        .is_some_and(|meta| !is_empty_metadata(meta))
    {
        report.error(FieldError::unsupported(
            path.child("metadata"),
            provider.metadata.as_ref(),
            "metadata is not supported",
        ));
    }
    if provider.device_index != 0 {
        report.error(FieldError::unsupported(
            path.child("deviceIndex"),
            provider.device_index,
            "deviceIndex must be 0 or unset",
        ));
    }
    if let Some(balancers) = provider.load_balancers.as_ref().filter(|b| !b.is_empty()) {
        if context.control_plane {
            check_load_balancers(balancers, context.infra, &path.child("loadBalancers"), report);
        } else {
            report.error(FieldError::unsupported(
                path.child("loadBalancers"),
                balancers.len(),
                "loadBalancers are not supported for non-control plane machines",
            ));
        }
    }
    spec
}

/// A control plane machine's load balancers are the AWSCluster's in Cluster API (not
/// copied to the AWSMachine): they must be exactly those, by name and type, as upstream
/// checks them.
fn check_load_balancers(
    balancers: &[LoadBalancerReference],
    infra: &AwsInfrastructure,
    path: &FieldPath,
    report: &mut Report,
) {
    let Some(cluster) = &infra.aws_cluster else {
        report.error(FieldError::required(
            path.clone(),
            format!(
                "the cluster has no AWSCluster {}/{} to hold the control plane load balancers; create it",
                crate::infrastructure::DEFAULT_CAPI_NAMESPACE,
                infra.infrastructure_name
            ),
        ));
        return;
    };
    let expected = match cluster.load_balancer_references() {
        Ok(expected) => expected,
        Err(errors) => {
            for error in errors.errors {
                report.error(error);
            }
            return;
        }
    };
    if expected.is_empty() {
        report.error(FieldError::invalid(
            path.clone(),
            balancers.len(),
            format!(
                "no control plane load balancer is configured on AWSCluster {}",
                cluster.key
            ),
        ));
        return;
    }
    for (index, balancer) in balancers.iter().enumerate() {
        match expected.iter().find(|e| e.name == balancer.name) {
            None => report.error(FieldError::invalid(
                path.index(index).child("name"),
                &balancer.name,
                format!(
                    "unexpected load balancer: AWSCluster {} does not have it",
                    cluster.key
                ),
            )),
            Some(found) if !found.type_.eq_ignore_ascii_case(&balancer.type_) => {
                report.error(FieldError::invalid(
                    path.index(index).child("type"),
                    &balancer.type_,
                    format!("AWSCluster {} has it as {}", cluster.key, found.type_),
                ))
            }
            Some(_) => {}
        }
    }
    for missing in expected
        .iter()
        .filter(|e| !balancers.iter().any(|b| b.name == e.name))
    {
        report.error(FieldError::required(
            path.clone(),
            format!(
                "must include load balancer named {:?} (AWSCluster {})",
                missing.name, cluster.key
            ),
        ));
    }
}

/// Go writes an empty `ObjectMeta` as `{creationTimestamp: null}`.
fn is_empty_metadata(meta: &serde_json::Value) -> bool {
    meta.as_object().is_none_or(|fields| {
        fields
            .values()
            .all(|value| value.is_null() || value == &serde_json::json!({}))
    })
}

fn non_empty(value: &str) -> Option<String> {
    (!value.is_empty()).then(|| value.to_owned())
}

fn ami(reference: &AwsResourceReference, path: &FieldPath, report: &mut Report) -> Option<AwsMachineAmi> {
    if reference.arn.is_some() {
        report.error(FieldError::unsupported(
            path.child("arn"),
            &reference.arn,
            "an AMI by ARN is not supported by Cluster API",
        ));
    }
    if reference.filters.as_ref().is_some_and(|f| !f.is_empty()) {
        report.error(FieldError::unsupported(
            path.child("filters"),
            &reference.filters,
            "an AMI by filters is not supported by Cluster API",
        ));
    }
    match reference.id.as_deref().filter(|id| !id.is_empty()) {
        Some(id) => Some(AwsMachineAmi {
            id: Some(id.to_owned()),
            eks_lookup_type: None,
        }),
        None => {
            if reference.arn.is_none() && reference.filters.is_none() {
                report.error(FieldError::required(path.child("id"), "an AMI ID is required"));
            }
            None
        }
    }
}

/// A reference that Cluster API only takes by ID (IAM instance profile, KMS key by ID).
fn reference_id_only(
    reference: &AwsResourceReference,
    path: &FieldPath,
    what: &str,
    report: &mut Report,
) -> Option<String> {
    if reference.arn.is_some() {
        report.error(FieldError::unsupported(
            path.child("arn"),
            &reference.arn,
            format!("{what} by ARN is not supported by Cluster API"),
        ));
    }
    if reference.filters.as_ref().is_some_and(|f| !f.is_empty()) {
        report.error(FieldError::unsupported(
            path.child("filters"),
            &reference.filters,
            format!("{what} by filters is not supported by Cluster API"),
        ));
    }
    reference.id.clone()
}

fn filters<T>(filters: Option<&Vec<Filter>>, make: impl Fn(String, Vec<String>) -> T) -> Option<Vec<T>> {
    filters.map(|filters| {
        filters
            .iter()
            .map(|f| make(f.name.clone(), f.values.clone().unwrap_or_default()))
            .collect()
    })
}

fn reject_arn(reference: &AwsResourceReference, path: &FieldPath, report: &mut Report) {
    if reference.arn.is_some() {
        report.error(FieldError::unsupported(
            path.child("arn"),
            &reference.arn,
            "a reference by ARN is not supported by Cluster API here",
        ));
    }
}

fn security_group(
    group: &AwsResourceReference,
    path: &FieldPath,
    report: &mut Report,
) -> AwsMachineAdditionalSecurityGroups {
    reject_arn(group, path, report);
    AwsMachineAdditionalSecurityGroups {
        id: group.id.clone(),
        filters: filters(group.filters.as_ref(), |name, values| {
            AwsMachineAdditionalSecurityGroupsFilters { name, values }
        }),
    }
}

fn subnet(
    reference: &AwsResourceReference,
    path: &FieldPath,
    report: &mut Report,
) -> Option<AwsMachineSubnet> {
    reject_arn(reference, path, report);
    if reference.id.is_none() && reference.filters.is_none() {
        return None;
    }
    Some(AwsMachineSubnet {
        id: reference.id.clone(),
        filters: filters(reference.filters.as_ref(), |name, values| {
            AwsMachineSubnetFilters { name, values }
        }),
    })
}

fn tags(
    tags: Option<&[TagSpecification]>,
    path: &FieldPath,
    report: &mut Report,
) -> Option<BTreeMap<String, String>> {
    let tags = tags.filter(|t| !t.is_empty())?;
    let mut out = BTreeMap::new();
    for (index, tag) in tags.iter().enumerate() {
        if out.insert(tag.name.clone(), tag.value.clone()).is_some() {
            report.warn(
                path.index(index),
                format!(
                    "tag {:?} is repeated; Cluster API keeps one value, the last",
                    tag.name
                ),
            );
        }
    }
    Some(out)
}

fn network_interface_type(
    value: Option<&str>,
    path: &FieldPath,
    report: &mut Report,
) -> Option<AwsMachineNetworkInterfaceType> {
    match value.unwrap_or_default() {
        "" => None,
        "ENA" => Some(AwsMachineNetworkInterfaceType::Interface),
        "EFA" => Some(AwsMachineNetworkInterfaceType::Efa),
        other => {
            report.error(FieldError::invalid(
                path.child("networkInterfaceType"),
                other,
                "must be ENA, EFA or unset",
            ));
            None
        }
    }
}

/// Cluster API's defaults for what the Machine API cannot set, and the token setting.
fn metadata_options(
    authentication: Option<&str>,
    path: &FieldPath,
    report: &mut Report,
) -> AwsMachineInstanceMetadataOptions {
    let http_tokens = match authentication.unwrap_or_default() {
        "" | "Optional" => AwsMachineInstanceMetadataOptionsHttpTokens::Optional,
        "Required" => AwsMachineInstanceMetadataOptionsHttpTokens::Required,
        other => {
            report.error(FieldError::invalid(
                path.clone(),
                other,
                "must be Required, Optional or unset",
            ));
            AwsMachineInstanceMetadataOptionsHttpTokens::Optional
        }
    };
    AwsMachineInstanceMetadataOptions {
        http_endpoint: Some(AwsMachineInstanceMetadataOptionsHttpEndpoint::Enabled),
        http_put_response_hop_limit: Some(1),
        http_tokens: Some(http_tokens),
        instance_metadata_tags: Some(AwsMachineInstanceMetadataOptionsInstanceMetadataTags::Disabled),
    }
}

fn tenancy(value: Option<&str>, path: &FieldPath, report: &mut Report) -> Option<AwsMachineTenancy> {
    match value.unwrap_or_default() {
        "" => None,
        "default" => Some(AwsMachineTenancy::Default),
        "dedicated" => Some(AwsMachineTenancy::Dedicated),
        "host" => Some(AwsMachineTenancy::Host),
        other => {
            report.error(FieldError::invalid(
                path.clone(),
                other,
                "must be default, dedicated or host",
            ));
            None
        }
    }
}

fn market_type(value: Option<&str>, path: &FieldPath, report: &mut Report) -> Option<AwsMachineMarketType> {
    match value.unwrap_or_default() {
        "" => None,
        "OnDemand" => Some(AwsMachineMarketType::OnDemand),
        "Spot" => Some(AwsMachineMarketType::Spot),
        "CapacityBlock" => Some(AwsMachineMarketType::CapacityBlock),
        other => {
            report.error(FieldError::invalid(
                path.clone(),
                other,
                "must be OnDemand, Spot or CapacityBlock",
            ));
            None
        }
    }
}

fn cpu_options(
    provider: &AwsMachineProviderConfig,
    path: &FieldPath,
    report: &mut Report,
) -> Option<AwsMachineCpuOptions> {
    let value = provider.cpu_options.as_ref()?.confidential_compute.as_deref()?;
    let confidential_compute = match value {
        "Disabled" => AwsMachineCpuOptionsConfidentialCompute::Disabled,
        "AMDEncryptedVirtualizationNestedPaging" => {
            AwsMachineCpuOptionsConfidentialCompute::AmdEncryptedVirtualizationNestedPaging
        }
        other => {
            report.error(FieldError::invalid(
                path.child("confidentialCompute"),
                other,
                "must be Disabled or AMDEncryptedVirtualizationNestedPaging",
            ));
            return None;
        }
    };
    Some(AwsMachineCpuOptions {
        confidential_compute: Some(confidential_compute),
    })
}

/// `placement.host` → `hostAffinity`, `hostID`, `dynamicHostAllocation`.
fn dedicated_host(
    host: Option<&HostPlacement>,
    path: &FieldPath,
    spec: &mut AwsMachineSpec,
    report: &mut Report,
) {
    let Some(host) = host else { return };
    let affinity = match host.affinity.as_deref().unwrap_or_default() {
        "" => None,
        "AnyAvailable" => Some(AwsMachineHostAffinity::Default),
        "DedicatedHost" => Some(AwsMachineHostAffinity::Host),
        other => {
            report.error(FieldError::invalid(
                path.child("affinity"),
                other,
                "must be AnyAvailable or DedicatedHost",
            ));
            return;
        }
    };
    spec.host_affinity = affinity.clone();
    let Some(dedicated) = &host.dedicated_host else {
        if affinity == Some(AwsMachineHostAffinity::Host) {
            report.error(FieldError::required(
                path.child("dedicatedHost"),
                "a dedicated host is required when affinity is DedicatedHost",
            ));
        }
        return;
    };
    let path = path.child("dedicatedHost");
    match dedicated.allocation_strategy.as_deref().unwrap_or("UserProvided") {
        "UserProvided" => {
            if dedicated.id.is_empty() {
                report.error(FieldError::required(path.child("id"), "a host ID is required"));
            } else {
                spec.host_id = Some(dedicated.id.clone());
            }
            if dedicated.dynamic_host_allocation.is_some() {
                report.error(FieldError::forbidden(
                    path.child("dynamicHostAllocation"),
                    "only allowed with allocationStrategy Dynamic",
                ));
            }
        }
        "Dynamic" => {
            if !dedicated.id.is_empty() {
                report.error(FieldError::invalid(
                    path.child("id"),
                    &dedicated.id,
                    "a host ID is not allowed with allocationStrategy Dynamic",
                ));
            }
            let tags = dedicated
                .dynamic_host_allocation
                .as_ref()
                .and_then(|d| d.tags.as_ref())
                .map(|tags| tags.iter().map(|t| (t.name.clone(), t.value.clone())).collect());
            spec.dynamic_host_allocation = Some(AwsMachineDynamicHostAllocation { tags });
        }
        other => report.error(FieldError::invalid(
            path.child("allocationStrategy"),
            other,
            "must be UserProvided or Dynamic",
        )),
    }
}

/// Dual-stack clusters need resource-name hostnames with A and AAAA records, as the
/// Machine API controller sets them (they are not configurable on the Machine API side).
fn dual_stack(ip_family: IpFamily, spec: &mut AwsMachineSpec) {
    if matches!(
        ip_family,
        IpFamily::DualStackIPv4Primary | IpFamily::DualStackIPv6Primary
    ) {
        spec.private_dns_name = Some(dual_stack_dns_name());
    }
}

/// The private DNS name settings of a dual-stack cluster.
pub(crate) fn dual_stack_dns_name() -> AwsMachinePrivateDnsName {
    AwsMachinePrivateDnsName {
        enable_resource_name_dns_a_record: Some(true),
        enable_resource_name_dns_aaaa_record: Some(true),
        hostname_type: Some(AwsMachinePrivateDnsNameHostnameType::ResourceName),
    }
}

/// `blockDevices` → the root volume (no device name) and the others.
fn volumes(
    devices: Option<&[BlockDeviceMappingSpec]>,
    path: &FieldPath,
    report: &mut Report,
) -> (
    Option<AwsMachineRootVolume>,
    Option<Vec<AwsMachineNonRootVolumes>>,
) {
    let mut root = None;
    let mut others = Vec::new();
    for (index, device) in devices.into_iter().flatten().enumerate() {
        let path = path.index(index);
        if device.no_device.is_some() {
            report.error(FieldError::unsupported(
                path.child("noDevice"),
                &device.no_device,
                "noDevice is not supported",
            ));
        }
        if device.virtual_name.is_some() {
            report.error(FieldError::unsupported(
                path.child("virtualName"),
                &device.virtual_name,
                "virtualName is not supported",
            ));
        }
        let Some(ebs) = &device.ebs else {
            // The Machine API controller skips such a device too.
            report.warn(
                path.child("ebs"),
                "a block device without ebs is ignored, as the Machine API does",
            );
            continue;
        };
        let is_root = device.device_name.is_none();
        if ebs.delete_on_termination == Some(false) {
            if is_root {
                report.warn(
                    path.child("ebs").child("deleteOnTermination"),
                    "the root volume is always deleted with the instance; false is ignored",
                );
            } else {
                report.error(FieldError::unsupported(
                    path.child("ebs").child("deleteOnTermination"),
                    false,
                    "non-root volumes are always deleted with the instance in Cluster API",
                ));
            }
        }
        let size = ebs.volume_size.unwrap_or_else(|| {
            report.warn(
                path.child("ebs").child("volumeSize"),
                format!("no size given; Cluster API needs one, {DEFAULT_ROOT_VOLUME_SIZE} GiB is used"),
            );
            DEFAULT_ROOT_VOLUME_SIZE
        });
        let encryption_key = ebs.kms_key.as_ref().and_then(|key| {
            if key.filters.as_ref().is_some_and(|f| !f.is_empty()) {
                report.error(FieldError::unsupported(
                    path.child("ebs").child("kmsKey").child("filters"),
                    &key.filters,
                    "a KMS key by filters is not supported by Cluster API",
                ));
            }
            if key.id.as_deref().is_some_and(|id| !id.is_empty())
                && key.arn.as_deref().is_some_and(|a| !a.is_empty())
            {
                report.error(FieldError::invalid(
                    path.child("ebs").child("kmsKey"),
                    key,
                    "give the KMS key by id or by arn, not both",
                ));
            }
            key.id
                .clone()
                .filter(|id| !id.is_empty())
                .or_else(|| key.arn.clone().filter(|arn| !arn.is_empty()))
        });
        let iops = ebs.iops.filter(|iops| *iops != 0);
        let throughput = ebs.throughput_mib.map(i64::from);
        if is_root {
            if root.is_some() {
                report.error(FieldError::required(
                    path.child("deviceName"),
                    "only one block device (the root volume) may omit deviceName",
                ));
                continue;
            }
            root = Some(AwsMachineRootVolume {
                device_name: None,
                encrypted: ebs.encrypted,
                encryption_key,
                iops,
                size,
                throughput,
                r#type: ebs.volume_type.clone(),
            });
        } else {
            others.push(AwsMachineNonRootVolumes {
                device_name: device.device_name.clone(),
                encrypted: ebs.encrypted,
                encryption_key,
                iops,
                size,
                throughput,
                r#type: ebs.volume_type.clone(),
            });
        }
    }
    (root, (!others.is_empty()).then_some(others))
}

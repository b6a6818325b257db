//! `OpenstackProviderSpec` → `OpenStackMachine.spec`, field by field.

use super::capo::openstackmachines::{
    OpenStackMachineAdditionalBlockDevices, OpenStackMachineAdditionalBlockDevicesStorage,
    OpenStackMachineAdditionalBlockDevicesStorageVolume,
    OpenStackMachineAdditionalBlockDevicesStorageVolumeAvailabilityZone as VolumeZone,
    OpenStackMachineAdditionalBlockDevicesStorageVolumeAvailabilityZoneFrom as VolumeZoneFrom,
    OpenStackMachineIdentityRef, OpenStackMachineIdentityRefType, OpenStackMachineImage,
    OpenStackMachineImageFilter, OpenStackMachineRootVolume, OpenStackMachineRootVolumeAvailabilityZone,
    OpenStackMachineRootVolumeAvailabilityZoneFrom, OpenStackMachineSecurityGroups,
    OpenStackMachineSecurityGroupsFilter, OpenStackMachineServerGroup, OpenStackMachineServerGroupFilter,
    OpenStackMachineServerMetadata, OpenStackMachineSpec,
};
use super::non_empty;
use super::provider::{
    AdditionalBlockDevice, OpenstackProviderSpec, RootVolume, SecretReference, SecurityGroupParam,
};
use crate::errors::{FieldError, FieldPath, Report};

mod ports;

/// Where the Machine API keeps the clouds Secret; the Cluster API copy lives elsewhere and
/// is named the same, so only the name carries over.
pub(crate) const MACHINE_API_NAMESPACE: &str = "openshift-machine-api";

/// The OpenStackMachine spec for `config` (at `path`, `spec.providerSpec.value`).
pub(crate) fn machine_spec(
    config: &OpenstackProviderSpec,
    path: &FieldPath,
    report: &mut Report,
) -> OpenStackMachineSpec {
    ignored_fields(config, path, report);
    let mut ports = ports::from_ports(&config.ports, &path.child("ports"), report);
    ports.extend(ports::from_networks(
        &config.networks,
        &path.child("networks"),
        report,
    ));
    if config.flavor.is_empty() {
        report.error(FieldError::required(path.child("flavor"), "a flavor is required"));
    }
    OpenStackMachineSpec {
        additional_block_devices: (!config.additional_block_devices.is_empty()).then(|| {
            let path = path.child("additionalBlockDevices");
            let devices = config.additional_block_devices.iter().enumerate();
            devices
                .map(|(index, device)| block_device(device, &path.index(index), report))
                .collect()
        }),
        config_drive: config.config_drive,
        flavor: non_empty(&config.flavor),
        identity_ref: identity(config, path, report),
        image: image(config, path, report),
        ports: (!ports.is_empty()).then_some(ports),
        root_volume: config
            .root_volume
            .as_ref()
            .map(|volume| root_volume(volume, &path.child("rootVolume"), report)),
        security_groups: (!config.security_groups.is_empty()).then(|| {
            let path = path.child("securityGroups");
            let groups = config.security_groups.iter().enumerate();
            groups
                .map(|(index, group)| security_group(group, &path.index(index), report))
                .collect()
        }),
        server_group: server_group(config),
        server_metadata: (!config.server_metadata.is_empty()).then(|| {
            // A map in the Machine API, a list sorted by key here (stable output).
            let entries = config.server_metadata.iter();
            entries
                .map(|(key, value)| OpenStackMachineServerMetadata {
                    key: key.clone(),
                    value: value.clone(),
                })
                .collect()
        }),
        ssh_key_name: non_empty(&config.key_name),
        tags: ports::tag_set(config.tags.iter()),
        trunk: config.trunk.then_some(true),
        ..OpenStackMachineSpec::default()
    }
}

/// Fields the Machine API provider reads but CAPO cannot express (errors), and fields
/// nothing reads (warnings).
fn ignored_fields(config: &OpenstackProviderSpec, path: &FieldPath, report: &mut Report) {
    if !config.floating_ip.is_empty() {
        report.error(FieldError::unsupported(
            path.child("floatingIP"),
            &config.floating_ip,
            "an OpenStackMachine cannot name a fixed floating IP address (only a pool through floatingIPPoolRef)",
        ));
    }
    if !config.ssh_user_name.is_empty() {
        report.warn(
            path.child("sshUserName"),
            "unused by the Machine API provider; dropped",
        );
    }
    if !config.primary_subnet.is_empty() {
        report.warn(
            path.child("primarySubnet"),
            "unused by the Machine API provider; CAPO reports the addresses of every port; dropped",
        );
    }
}

/// The clouds Secret and its entry, as a Secret identity. The Secret's namespace is not
/// kept: the Cluster API side reads a copy of the same name in its own namespace.
fn identity(
    config: &OpenstackProviderSpec,
    path: &FieldPath,
    report: &mut Report,
) -> Option<OpenStackMachineIdentityRef> {
    let Some(secret) = config.clouds_secret.as_ref().filter(|s| !s.name.is_empty()) else {
        if !config.cloud_name.is_empty() {
            report.warn(
                path.child("cloudName"),
                "a cloud name without cloudsSecret names nothing; dropped",
            );
        }
        return None;
    };
    secret_namespace(secret, &path.child("cloudsSecret").child("namespace"), report);
    if config.cloud_name.is_empty() {
        report.error(FieldError::required(
            path.child("cloudName"),
            "the clouds.yaml entry is required with cloudsSecret",
        ));
    }
    Some(OpenStackMachineIdentityRef {
        cloud_name: config.cloud_name.clone(),
        name: secret.name.clone(),
        region: None,
        r#type: OpenStackMachineIdentityRefType::Secret,
    })
}

fn secret_namespace(secret: &SecretReference, path: &FieldPath, report: &mut Report) {
    if !secret.namespace.is_empty() && secret.namespace != MACHINE_API_NAMESPACE {
        report.warn(
            path.clone(),
            format!(
                "the Cluster API identity names a Secret in its own namespace; {:?} is not kept",
                secret.namespace
            ),
        );
    }
}

/// The image, by name. With a root volume the Machine API provider boots the volume from
/// `rootVolume.sourceUUID` (an image name, as the installer writes it) and ignores
/// `image` (machine-api-provider-openstack `extractImageFromProviderSpec`).
fn image(config: &OpenstackProviderSpec, path: &FieldPath, report: &mut Report) -> OpenStackMachineImage {
    let source = config
        .root_volume
        .as_ref()
        .map(|v| v.source_uuid.as_str())
        .unwrap_or_default();
    let name = if source.is_empty() {
        config.image.as_str()
    } else {
        if !config.image.is_empty() && config.image != source {
            report.warn(
                path.child("image"),
                "ignored by the Machine API provider when rootVolume.sourceUUID is set; the volume's image is used",
            );
        }
        source
    };
    if name.is_empty() {
        report.error(FieldError::required(
            path.child("image"),
            "an image name (or rootVolume.sourceUUID) is required",
        ));
    }
    OpenStackMachineImage {
        filter: Some(OpenStackMachineImageFilter {
            name: Some(name.to_owned()),
            tags: None,
        }),
        ..OpenStackMachineImage::default()
    }
}

/// Boot from a volume. `sourceUUID` is the image ([`image`]); `sourceType` and
/// `deviceType` are ignored by the Machine API provider.
fn root_volume(volume: &RootVolume, path: &FieldPath, report: &mut Report) -> OpenStackMachineRootVolume {
    for (name, value) in [
        ("sourceType", &volume.source_type),
        ("deviceType", &volume.device_type),
    ] {
        if !value.is_empty() {
            report.warn(
                path.child(name),
                "deprecated and ignored by the Machine API provider; dropped",
            );
        }
    }
    if volume.size <= 0 {
        report.error(FieldError::invalid(
            path.child("diskSize"),
            volume.size,
            "a root volume needs a size in GiB",
        ));
    }
    OpenStackMachineRootVolume {
        availability_zone: non_empty(&volume.availability_zone).map(|name| {
            OpenStackMachineRootVolumeAvailabilityZone {
                from: Some(OpenStackMachineRootVolumeAvailabilityZoneFrom::Name),
                name: Some(name),
            }
        }),
        size_gi_b: volume.size,
        r#type: non_empty(&volume.volume_type),
    }
}

/// An extra disk: `Local` or `Volume` (which needs its volume).
fn block_device(
    device: &AdditionalBlockDevice,
    path: &FieldPath,
    report: &mut Report,
) -> OpenStackMachineAdditionalBlockDevices {
    if device.name.is_empty() {
        report.error(FieldError::required(
            path.child("name"),
            "a block device needs a name",
        ));
    }
    if device.size_gib <= 0 {
        report.error(FieldError::invalid(
            path.child("sizeGiB"),
            device.size_gib,
            "must be at least 1",
        ));
    }
    let storage = &device.storage;
    let path = path.child("storage");
    let volume = match storage.type_.as_str() {
        "Local" => None,
        "Volume" => {
            if storage.volume.is_none() {
                report.error(FieldError::required(
                    path.child("volume"),
                    "a Volume block device needs its volume",
                ));
            }
            storage
                .volume
                .as_ref()
                .map(|volume| OpenStackMachineAdditionalBlockDevicesStorageVolume {
                    availability_zone: non_empty(&volume.availability_zone).map(|name| VolumeZone {
                        from: Some(VolumeZoneFrom::Name),
                        name: Some(name),
                    }),
                    r#type: non_empty(&volume.type_),
                })
        }
        other => {
            report.error(FieldError::invalid(
                path.child("type"),
                other,
                "must be Local or Volume",
            ));
            None
        }
    };
    OpenStackMachineAdditionalBlockDevices {
        name: device.name.clone(),
        size_gi_b: device.size_gib,
        storage: OpenStackMachineAdditionalBlockDevicesStorage {
            r#type: storage.type_.clone(),
            volume,
        },
    }
}

/// A security group by ID (`uuid`, or the filter's `id` as the Machine API provider reads
/// it) or by query (`name` wins over the filter's name; the project falls back to the
/// tenant).
fn security_group(
    group: &SecurityGroupParam,
    path: &FieldPath,
    report: &mut Report,
) -> OpenStackMachineSecurityGroups {
    let filter = &group.filter;
    let path = path.child("filter");
    ports::deprecated_paging(
        &path,
        filter.limit,
        [
            ("marker", &filter.marker),
            ("sortKey", &filter.sort_key),
            ("sortDir", &filter.sort_dir),
        ],
        report,
    );
    let id = if group.uuid.is_empty() {
        &filter.id
    } else {
        &group.uuid
    };
    if !id.is_empty() {
        return OpenStackMachineSecurityGroups {
            id: Some(id.clone()),
            filter: None,
        };
    }
    let name = if group.name.is_empty() {
        &filter.name
    } else {
        &group.name
    };
    let query = OpenStackMachineSecurityGroupsFilter {
        name: non_empty(name),
        description: non_empty(&filter.description),
        project_id: ports::project(&filter.project_id, &filter.tenant_id),
        tags: ports::split_tags(&filter.tags),
        tags_any: ports::split_tags(&filter.tags_any),
        not_tags: ports::split_tags(&filter.not_tags),
        not_tags_any: ports::split_tags(&filter.not_tags_any),
    };
    if query == OpenStackMachineSecurityGroupsFilter::default() {
        report.error(FieldError::required(
            path,
            "a security group needs a uuid, a name or a filter",
        ));
    }
    OpenStackMachineSecurityGroups {
        id: None,
        filter: Some(query),
    }
}

/// The server group by ID, else by name (the Machine API provider creates a group of that
/// name when none exists; CAPO only looks it up).
fn server_group(config: &OpenstackProviderSpec) -> Option<OpenStackMachineServerGroup> {
    if let Some(id) = non_empty(&config.server_group_id) {
        return Some(OpenStackMachineServerGroup {
            id: Some(id),
            filter: None,
        });
    }
    non_empty(&config.server_group_name).map(|name| OpenStackMachineServerGroup {
        id: None,
        filter: Some(OpenStackMachineServerGroupFilter { name: Some(name) }),
    })
}

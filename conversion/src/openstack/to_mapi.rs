//! `OpenStackMachine.spec` → `OpenstackProviderSpec`, field by field.

use std::collections::BTreeMap;

use super::capo::openstackmachines::{
    OpenStackMachineAdditionalBlockDevices,
    OpenStackMachineAdditionalBlockDevicesStorageVolumeAvailabilityZoneFrom as VolumeZoneFrom,
    OpenStackMachineIdentityRefType, OpenStackMachineImage, OpenStackMachineRootVolume,
    OpenStackMachineRootVolumeAvailabilityZoneFrom, OpenStackMachineSecurityGroups, OpenStackMachineSpec,
};
use super::provider::{
    self, AdditionalBlockDevice, BlockDeviceStorage, BlockDeviceVolume, OpenstackProviderSpec, RootVolume,
    SecretReference, SecurityGroupFilter, SecurityGroupParam,
};
use crate::errors::{FieldError, FieldPath, Report};
use crate::provider::MachineFacts;

mod ports;

/// The providerSpec for `spec` (at `path`, the OpenStackMachine's `spec` or the template's
/// `spec.template.spec`); the zone and user data come from the CAPI Machine (`facts`).
pub(crate) fn provider_spec(
    spec: &OpenStackMachineSpec,
    facts: &MachineFacts<'_>,
    path: &FieldPath,
    report: &mut Report,
) -> OpenstackProviderSpec {
    unsupported_fields(spec, path, report);
    let (networks, ports) = ports::split(
        spec.ports.as_deref().unwrap_or_default(),
        &path.child("ports"),
        report,
    );
    let (image, root_volume) = image_and_volume(spec, path, report);
    let (cloud_name, clouds_secret) = identity(spec, &path.child("identityRef"), report);
    let (server_group_id, server_group_name) = server_group(spec, path, report);
    OpenstackProviderSpec {
        api_version: Some(provider::PROVIDER_API_VERSION.to_owned()),
        kind: Some(provider::PROVIDER_SPEC_KIND.to_owned()),
        clouds_secret,
        cloud_name,
        flavor: flavor(spec, path, report),
        image: if root_volume.is_some() {
            String::new()
        } else {
            image
        },
        key_name: spec.ssh_key_name.clone().unwrap_or_default(),
        networks,
        ports,
        availability_zone: facts.failure_domain.unwrap_or_default().to_owned(),
        security_groups: spec
            .security_groups
            .iter()
            .flatten()
            .enumerate()
            .filter_map(|(index, group)| {
                security_group(group, &path.child("securityGroups").index(index), report)
            })
            .collect(),
        user_data_secret: facts.user_data_secret.map(|name| SecretReference {
            name: name.to_owned(),
            namespace: String::new(),
        }),
        trunk: spec.trunk.unwrap_or_default(),
        tags: spec.tags.clone().unwrap_or_default(),
        server_metadata: server_metadata(spec, &path.child("serverMetadata"), report),
        config_drive: spec.config_drive,
        root_volume,
        additional_block_devices: spec
            .additional_block_devices
            .iter()
            .flatten()
            .enumerate()
            .map(|(index, device)| {
                block_device(device, &path.child("additionalBlockDevices").index(index), report)
            })
            .collect(),
        server_group_id,
        server_group_name,
        ..OpenstackProviderSpec::default()
    }
}

/// Fields of the OpenStackMachine the Machine API has no place for. `providerID` is the
/// Machine's, set by the caller.
fn unsupported_fields(spec: &OpenStackMachineSpec, path: &FieldPath, report: &mut Report) {
    if let Some(id) = &spec.flavor_id {
        report.error(FieldError::unsupported(
            path.child("flavorID"),
            id,
            "the Machine API names a flavor only by name",
        ));
    }
    if spec.floating_ip_pool_ref.is_some() {
        report.error(FieldError::forbidden(
            path.child("floatingIPPoolRef"),
            "the Machine API has no floating IP pools",
        ));
    }
    if spec
        .scheduler_hint_additional_properties
        .as_ref()
        .is_some_and(|h| !h.is_empty())
    {
        report.error(FieldError::forbidden(
            path.child("schedulerHintAdditionalProperties"),
            "the Machine API has no scheduler hints",
        ));
    }
}

fn flavor(spec: &OpenStackMachineSpec, path: &FieldPath, report: &mut Report) -> String {
    let flavor = spec.flavor.clone().unwrap_or_default();
    if flavor.is_empty() && spec.flavor_id.is_none() {
        report.error(FieldError::required(
            path.child("flavor"),
            "a flavor name is required",
        ));
    }
    flavor
}

/// `(image, rootVolume)`: the Machine API provider boots a volume from its `sourceUUID`
/// (and ignores `image`), so with a root volume the image goes there.
fn image_and_volume(
    spec: &OpenStackMachineSpec,
    path: &FieldPath,
    report: &mut Report,
) -> (String, Option<RootVolume>) {
    let image = image(&spec.image, &path.child("image"), report);
    match &spec.root_volume {
        None => (image, None),
        Some(volume) => {
            let volume = root_volume(volume, &path.child("rootVolume"), report);
            (
                String::new(),
                Some(RootVolume {
                    source_uuid: image,
                    ..volume
                }),
            )
        }
    }
}

/// The image, by name only (the Machine API provider looks images up by name).
fn image(image: &OpenStackMachineImage, path: &FieldPath, report: &mut Report) -> String {
    if let Some(id) = &image.id {
        report.error(FieldError::unsupported(
            path.child("id"),
            id,
            "the Machine API names an image only by name",
        ));
    }
    if let Some(reference) = &image.image_ref {
        report.error(FieldError::unsupported(
            path.child("imageRef"),
            &reference.name,
            "the Machine API names an image only by name",
        ));
    }
    let filter = image.filter.as_ref();
    if filter
        .and_then(|f| f.tags.as_ref())
        .is_some_and(|tags| !tags.is_empty())
    {
        report.warn(
            path.child("filter").child("tags"),
            "the Machine API looks an image up by name only; the tags are dropped",
        );
    }
    let name = filter.and_then(|f| f.name.clone()).unwrap_or_default();
    if name.is_empty() && image.id.is_none() && image.image_ref.is_none() {
        report.error(FieldError::required(
            path.child("filter").child("name"),
            "the Machine API needs the image's name",
        ));
    }
    name
}

/// A Secret identity as the clouds Secret (its namespace is the Machine API's own copy).
fn identity(
    spec: &OpenStackMachineSpec,
    path: &FieldPath,
    report: &mut Report,
) -> (String, Option<SecretReference>) {
    let Some(identity) = &spec.identity_ref else {
        return (String::new(), None);
    };
    if identity.r#type != OpenStackMachineIdentityRefType::Secret {
        report.error(FieldError::unsupported(
            path.child("type"),
            &identity.r#type,
            "the Machine API reads credentials only from a Secret",
        ));
    }
    if let Some(region) = &identity.region {
        report.error(FieldError::unsupported(
            path.child("region"),
            region,
            "the Machine API takes the region from the clouds.yaml entry only",
        ));
    }
    let secret = SecretReference {
        name: identity.name.clone(),
        namespace: super::to_capi::MACHINE_API_NAMESPACE.to_owned(),
    };
    (identity.cloud_name.clone(), Some(secret))
}

fn root_volume(volume: &OpenStackMachineRootVolume, path: &FieldPath, report: &mut Report) -> RootVolume {
    let zone = volume.availability_zone.as_ref();
    let from_machine =
        zone.and_then(|z| z.from.as_ref()) == Some(&OpenStackMachineRootVolumeAvailabilityZoneFrom::Machine);
    if from_machine {
        machine_zone_error(&path.child("availabilityZone").child("from"), report);
    }
    RootVolume {
        volume_type: volume.r#type.clone().unwrap_or_default(),
        size: volume.size_gi_b,
        availability_zone: zone
            .and_then(|z| z.name.clone())
            .filter(|_| !from_machine)
            .unwrap_or_default(),
        ..RootVolume::default()
    }
}

/// CAPO's "the volume's zone is the machine's"; the Machine API only names a zone.
fn machine_zone_error(path: &FieldPath, report: &mut Report) {
    report.error(FieldError::unsupported(
        path.clone(),
        "Machine",
        "the Machine API names a volume's availability zone; it cannot follow the machine's",
    ));
}

fn block_device(
    device: &OpenStackMachineAdditionalBlockDevices,
    path: &FieldPath,
    report: &mut Report,
) -> AdditionalBlockDevice {
    let storage = &device.storage;
    let path = path.child("storage");
    let volume = match storage.r#type.as_str() {
        "Local" => None,
        "Volume" => match &storage.volume {
            None => {
                report.error(FieldError::required(
                    path.child("volume"),
                    "a Volume block device needs its volume",
                ));
                None
            }
            Some(volume) => {
                let zone = volume.availability_zone.as_ref();
                let from_machine = zone.and_then(|z| z.from.as_ref()) == Some(&VolumeZoneFrom::Machine);
                if from_machine {
                    machine_zone_error(
                        &path.child("volume").child("availabilityZone").child("from"),
                        report,
                    );
                }
                Some(BlockDeviceVolume {
                    type_: volume.r#type.clone().unwrap_or_default(),
                    availability_zone: zone
                        .and_then(|z| z.name.clone())
                        .filter(|_| !from_machine)
                        .unwrap_or_default(),
                })
            }
        },
        other => {
            report.error(FieldError::invalid(
                path.child("type"),
                other,
                "must be Local or Volume",
            ));
            None
        }
    };
    AdditionalBlockDevice {
        name: device.name.clone(),
        size_gib: device.size_gi_b,
        storage: BlockDeviceStorage {
            type_: storage.r#type.clone(),
            volume,
        },
    }
}

/// A security group by UUID or by query (its name is the parameter's `name`).
fn security_group(
    group: &OpenStackMachineSecurityGroups,
    path: &FieldPath,
    report: &mut Report,
) -> Option<SecurityGroupParam> {
    if group.id.is_none() && group.filter.is_none() {
        report.error(FieldError::required(
            path.clone(),
            "a security group needs an id or a filter",
        ));
        return None;
    }
    let filter = group.filter.clone().unwrap_or_default();
    Some(SecurityGroupParam {
        uuid: group.id.clone().unwrap_or_default(),
        name: filter.name.unwrap_or_default(),
        filter: SecurityGroupFilter {
            description: filter.description.unwrap_or_default(),
            project_id: filter.project_id.unwrap_or_default(),
            tags: ports::join_tags(filter.tags.as_deref()),
            tags_any: ports::join_tags(filter.tags_any.as_deref()),
            not_tags: ports::join_tags(filter.not_tags.as_deref()),
            not_tags_any: ports::join_tags(filter.not_tags_any.as_deref()),
            ..SecurityGroupFilter::default()
        },
    })
}

/// `(serverGroupID, serverGroupName)`.
fn server_group(spec: &OpenStackMachineSpec, path: &FieldPath, report: &mut Report) -> (String, String) {
    let Some(group) = &spec.server_group else {
        return (String::new(), String::new());
    };
    if let Some(id) = &group.id {
        return (id.clone(), String::new());
    }
    match group.filter.as_ref().and_then(|f| f.name.clone()) {
        Some(name) => (String::new(), name),
        None => {
            report.error(FieldError::required(
                path.child("serverGroup"),
                "a server group needs an id or a name",
            ));
            (String::new(), String::new())
        }
    }
}

/// The metadata list as a map; a key listed twice has no map equivalent.
fn server_metadata(
    spec: &OpenStackMachineSpec,
    path: &FieldPath,
    report: &mut Report,
) -> BTreeMap<String, String> {
    let mut metadata = BTreeMap::new();
    for (index, entry) in spec.server_metadata.iter().flatten().enumerate() {
        if metadata.insert(entry.key.clone(), entry.value.clone()).is_some() {
            report.error(FieldError::invalid(
                path.index(index).child("key"),
                &entry.key,
                "listed twice; the Machine API's metadata is a map",
            ));
        }
    }
    metadata
}

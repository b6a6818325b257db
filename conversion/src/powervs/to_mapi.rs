//! `IBMPowerVSMachine.spec` → `PowerVSMachineProviderConfig`, field by field.

use super::capibm::ibmpowervsmachines::{
    IbmPowerVsMachineProcessorType, IbmPowerVsMachineSpec, IbmPowerVsMachineSystemType,
};
use super::provider::{
    self, PowerVsMachineProviderConfig, PowerVsResource, PowerVsSecretReference, RESOURCE_TYPE_ID,
    RESOURCE_TYPE_NAME, RESOURCE_TYPE_REGEX,
};
use super::to_capi::DEFAULT_CREDENTIALS_SECRET;
use crate::errors::{FieldError, FieldPath, Report};
use crate::provider::MachineFacts;

/// The providerSpec for `spec` (at `path`, the machine's `spec` or the template's
/// `spec.template.spec`). `providerID` is the Machine's, not the providerSpec's.
pub(crate) fn to_provider_config(
    spec: &IbmPowerVsMachineSpec,
    facts: &MachineFacts<'_>,
    path: &FieldPath,
    report: &mut Report,
) -> PowerVsMachineProviderConfig {
    PowerVsMachineProviderConfig {
        api_version: Some(provider::PROVIDER_API_VERSION.to_owned()),
        kind: Some(provider::PROVIDER_CONFIG_KIND.to_owned()),
        metadata: None,
        user_data_secret: facts
            .user_data_secret
            .filter(|name| !name.is_empty())
            .map(|name| PowerVsSecretReference {
                name: name.to_owned(),
            }),
        // The Machine API controller needs one; CAPIBM's own credentials have no name here.
        credentials_secret: Some(PowerVsSecretReference {
            name: DEFAULT_CREDENTIALS_SECRET.to_owned(),
        }),
        service_instance: service_instance(spec, path, report),
        image: image(spec, path, report),
        network: resource(
            [&spec.network.id, &spec.network.name, &spec.network.regex],
            &path.child("network"),
            report,
        )
        .unwrap_or_default(),
        key_pair_name: spec.ssh_key.clone().unwrap_or_default(),
        system_type: spec.system_type.as_ref().map(system_type).unwrap_or_default(),
        processor_type: spec
            .processor_type
            .as_ref()
            .map(processor_type)
            .unwrap_or_default(),
        processors: spec.processors.clone(),
        memory_gib: spec.memory_gi_b.unwrap_or_default(),
        load_balancers: Vec::new(),
    }
}

/// The deprecated `serviceInstanceID` wins over `serviceInstance`, as upstream reads it.
fn service_instance(spec: &IbmPowerVsMachineSpec, path: &FieldPath, report: &mut Report) -> PowerVsResource {
    if !spec.service_instance_id.is_empty() {
        if spec.service_instance.is_some() {
            report.warn(
                path.child("serviceInstance"),
                "ignored: serviceInstanceID is set and takes precedence",
            );
        }
        return PowerVsResource {
            type_: RESOURCE_TYPE_ID.to_owned(),
            id: Some(spec.service_instance_id.clone()),
            ..PowerVsResource::default()
        };
    }
    let path = path.child("serviceInstance");
    let Some(instance) = &spec.service_instance else {
        report.error(FieldError::required(
            path,
            "a service instance (or serviceInstanceID) is required",
        ));
        return PowerVsResource::default();
    };
    resource([&instance.id, &instance.name, &instance.regex], &path, report).unwrap_or_default()
}

/// `image` wins over `imageRef`; an `imageRef` (an `IBMPowerVSImage`, named after the
/// image it imports) becomes the image by name, as upstream does.
fn image(spec: &IbmPowerVsMachineSpec, path: &FieldPath, report: &mut Report) -> PowerVsResource {
    let image_ref = spec.image_ref.as_ref().and_then(|r| r.name.clone());
    match (&spec.image, image_ref) {
        (Some(image), image_ref) => {
            if image_ref.is_some() {
                report.warn(
                    path.child("imageRef"),
                    "ignored: image is set and takes precedence",
                );
            }
            resource(
                [&image.id, &image.name, &image.regex],
                &path.child("image"),
                report,
            )
            .unwrap_or_default()
        }
        (None, Some(name)) => PowerVsResource {
            type_: RESOURCE_TYPE_NAME.to_owned(),
            name: Some(name),
            ..PowerVsResource::default()
        },
        (None, None) => {
            report.error(FieldError::required(
                path.child("image"),
                "an image or an imageRef is required",
            ));
            PowerVsResource::default()
        }
    }
}

/// A CAPIBM reference (`[id, name, regex]`) as a MAPI resource: the first that is set,
/// in the order the Machine API controller checks them; the others are dropped with a
/// warning.
fn resource(fields: [&Option<String>; 3], path: &FieldPath, report: &mut Report) -> Option<PowerVsResource> {
    const NAMES: [(&str, &str); 3] = [
        ("id", RESOURCE_TYPE_ID),
        ("name", RESOURCE_TYPE_NAME),
        ("regex", RESOURCE_TYPE_REGEX),
    ];
    let Some(chosen) = fields.iter().position(|value| value.is_some()) else {
        report.error(FieldError::required(
            path.clone(),
            "one of id, name or regex is required",
        ));
        return None;
    };
    for (index, value) in fields.iter().enumerate().skip(chosen + 1) {
        if value.is_some() {
            report.warn(
                path.child(NAMES[index].0),
                format!("ignored: {} is set and takes precedence", NAMES[chosen].0),
            );
        }
    }
    let value = fields[chosen].clone();
    let mut out = PowerVsResource {
        type_: NAMES[chosen].1.to_owned(),
        ..PowerVsResource::default()
    };
    match chosen {
        0 => out.id = value,
        1 => out.name = value,
        _ => out.regex = value,
    }
    Some(out)
}

/// The wire name of a CAPIBM system type (also the instance-type label).
pub(crate) fn system_type(value: &IbmPowerVsMachineSystemType) -> String {
    match value {
        IbmPowerVsMachineSystemType::S922 => "s922",
        IbmPowerVsMachineSystemType::E980 => "e980",
        IbmPowerVsMachineSystemType::S1022 => "s1022",
        IbmPowerVsMachineSystemType::E1050 => "e1050",
        IbmPowerVsMachineSystemType::E1080 => "e1080",
        IbmPowerVsMachineSystemType::S1122 => "s1122",
        IbmPowerVsMachineSystemType::KopiumEmpty => "",
    }
    .to_owned()
}

fn processor_type(value: &IbmPowerVsMachineProcessorType) -> String {
    match value {
        IbmPowerVsMachineProcessorType::Dedicated => "Dedicated",
        IbmPowerVsMachineProcessorType::Shared => "Shared",
        IbmPowerVsMachineProcessorType::Capped => "Capped",
        IbmPowerVsMachineProcessorType::KopiumEmpty => "",
    }
    .to_owned()
}

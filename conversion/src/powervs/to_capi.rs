//! `PowerVSMachineProviderConfig` → `IBMPowerVSMachine.spec`, field by field.

use super::capibm::ibmpowervsmachines::{
    IbmPowerVsMachineImage, IbmPowerVsMachineNetwork, IbmPowerVsMachineProcessorType,
    IbmPowerVsMachineServiceInstance, IbmPowerVsMachineSpec, IbmPowerVsMachineSystemType,
};
use super::provider::{
    PowerVsMachineProviderConfig, PowerVsResource, RESOURCE_TYPE_ID, RESOURCE_TYPE_NAME, RESOURCE_TYPE_REGEX,
};
use crate::errors::{FieldError, FieldPath, Report};

/// The credentials Secret the installer writes. CAPIBM reads its credentials from its own
/// deployment, so only this one is "the cluster's"; any other cannot be carried over.
pub(crate) const DEFAULT_CREDENTIALS_SECRET: &str = "powervs-credentials";

/// The one of `id`, `name`, `regex` that a MAPI resource's `type` selects.
pub(crate) struct Reference {
    pub(crate) id: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) regex: Option<String>,
}

/// The `IBMPowerVSMachine` spec for `config` (at `path`, `spec.providerSpec.value`).
/// Not carried: the user data secret (the Machine's bootstrap secret) and the default
/// credentials secret; refused: another credentials secret, metadata, load balancers.
pub(crate) fn to_machine_spec(
    config: &PowerVsMachineProviderConfig,
    path: &FieldPath,
    report: &mut Report,
) -> IbmPowerVsMachineSpec {
    let service_instance = reference(&config.service_instance, &path.child("serviceInstance"), report);
    let image = reference(&config.image, &path.child("image"), report);
    let network = reference(&config.network, &path.child("network"), report);
    reject_unsupported(config, path, report);
    IbmPowerVsMachineSpec {
        service_instance: service_instance.map(|r| IbmPowerVsMachineServiceInstance {
            id: r.id,
            name: r.name,
            regex: r.regex,
        }),
        image: image.map(|r| IbmPowerVsMachineImage {
            id: r.id,
            name: r.name,
            regex: r.regex,
        }),
        network: network
            .map(|r| IbmPowerVsMachineNetwork {
                id: r.id,
                name: r.name,
                regex: r.regex,
            })
            .unwrap_or_default(),
        ssh_key: non_empty(&config.key_pair_name),
        system_type: system_type(&config.system_type, &path.child("systemType"), report),
        processor_type: processor_type(&config.processor_type, &path.child("processorType"), report),
        processors: config.processors.clone(),
        memory_gi_b: (config.memory_gib != 0).then_some(config.memory_gib),
        ..IbmPowerVsMachineSpec::default()
    }
}

/// The resource `type` names, as the Machine API PowerVS controller resolves it: the
/// field `type` selects must be set, and the others are ignored (said in a warning).
pub(crate) fn reference(
    resource: &PowerVsResource,
    path: &FieldPath,
    report: &mut Report,
) -> Option<Reference> {
    let (selected, value) = match resource.type_.as_str() {
        RESOURCE_TYPE_ID => ("id", &resource.id),
        RESOURCE_TYPE_NAME => ("name", &resource.name),
        RESOURCE_TYPE_REGEX => ("regex", &resource.regex),
        other => {
            report.error(FieldError::invalid(
                path.child("type"),
                other,
                "must be ID, Name or RegEx",
            ));
            return None;
        }
    };
    if value.as_deref().is_none_or(str::is_empty) {
        report.error(FieldError::required(
            path.child(selected),
            format!("type {} needs {selected}", resource.type_),
        ));
    }
    for (field, other) in [
        ("id", &resource.id),
        ("name", &resource.name),
        ("regex", &resource.regex),
    ] {
        if field != selected && other.is_some() {
            report.warn(
                path.child(field),
                format!("ignored: type {} selects {selected}", resource.type_),
            );
        }
    }
    let pick = |field: &str| (field == selected).then(|| value.clone()).flatten();
    Some(Reference {
        id: pick("id"),
        name: pick("name"),
        regex: pick("regex"),
    })
}

fn reject_unsupported(config: &PowerVsMachineProviderConfig, path: &FieldPath, report: &mut Report) {
    if let Some(secret) = &config.credentials_secret
        && !secret.name.is_empty()
        && secret.name != DEFAULT_CREDENTIALS_SECRET
    {
        report.error(FieldError::unsupported(
            path.child("credentialsSecret").child("name"),
            &secret.name,
            format!(
                "only the installer's credentials secret {DEFAULT_CREDENTIALS_SECRET:?} converts: \
                 Cluster API Provider IBM Cloud takes its credentials from its own deployment"
            ),
        ));
    }
    if config
        .metadata
        .as_ref()
        .is_some_and(|meta| !is_empty_metadata(meta))
    {
        report.error(FieldError::unsupported(
            path.child("metadata"),
            config.metadata.as_ref(),
            "metadata is not supported",
        ));
    }
    if !config.load_balancers.is_empty() {
        report.error(FieldError::unsupported(
            path.child("loadBalancers"),
            &config.load_balancers,
            "load balancers are not supported: Cluster API Provider IBM Cloud attaches only \
             the IBMPowerVSCluster's, to control plane machines",
        ));
    }
}

/// CAPIBM's system types are an enumeration; the Machine API's a free string.
fn system_type(value: &str, path: &FieldPath, report: &mut Report) -> Option<IbmPowerVsMachineSystemType> {
    Some(match value {
        "" => return None,
        "s922" => IbmPowerVsMachineSystemType::S922,
        "e980" => IbmPowerVsMachineSystemType::E980,
        "s1022" => IbmPowerVsMachineSystemType::S1022,
        "e1050" => IbmPowerVsMachineSystemType::E1050,
        "e1080" => IbmPowerVsMachineSystemType::E1080,
        "s1122" => IbmPowerVsMachineSystemType::S1122,
        other => {
            report.error(FieldError::unsupported(
                path.clone(),
                other,
                "Cluster API Provider IBM Cloud knows s922, e980, s1022, e1050, e1080 and s1122",
            ));
            return None;
        }
    })
}

fn processor_type(
    value: &str,
    path: &FieldPath,
    report: &mut Report,
) -> Option<IbmPowerVsMachineProcessorType> {
    Some(match value {
        "" => return None,
        "Dedicated" => IbmPowerVsMachineProcessorType::Dedicated,
        "Shared" => IbmPowerVsMachineProcessorType::Shared,
        "Capped" => IbmPowerVsMachineProcessorType::Capped,
        other => {
            report.error(FieldError::invalid(
                path.clone(),
                other,
                "must be Dedicated, Shared or Capped",
            ));
            return None;
        }
    })
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

//! Cluster API → Machine API, the part every platform shares: a CAPI Machine and its
//! infrastructure machine's spec become a MAPI Machine, a CAPI MachineSet and its
//! template's spec a MAPI MachineSet; the [`Provider`] writes the providerSpec.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use sync_core::api::RawObject;
use sync_core::api::capi;
use sync_core::api::mapi::{self, ProviderSpec};

use crate::errors::{ConversionResult, FieldError, FieldPath, Report};
use crate::meta;
use crate::names::{
    CAPI_CONTROL_PLANE_LABEL, MAPI_INSTANCE_STATE_ANNOTATION, MAPI_MACHINE_FINALIZER, MAPI_NAMESPACE,
    NODE_DELETION_TIMEOUT_SECONDS,
};
use crate::provider::{MachineFacts, Provider};

/// Converts a CAPI Machine and its infrastructure machine's spec (at `infra_path`).
///
/// Labels: `node-role.kubernetes.io/<role>` becomes the role and type labels, Cluster API's
/// own keys (`…cluster.x-k8s.io/…`) are dropped, and the labels the Machine API controller
/// would set ([`Provider::machine_labels`]) are added; the same labels, without Cluster
/// API's keys, go to `spec.metadata.labels` (MAPI propagates those to the Node).
/// Annotations: lifecycle hook annotations become `spec.lifecycleHooks`, the
/// delete-machine annotation is renamed, the paused annotation and Cluster API's keys are
/// dropped, `machine.openshift.io/instance-state` is added. The providerSpec is the
/// platform's, with the zone from `failureDomain` and the user data secret from
/// `bootstrap.dataSecretName`. Finalizer `machine.machine.openshift.io` is set;
/// `spec.authoritativeAPI` is left to the hook. Ignored because MAPI derives it:
/// `clusterName`; `infrastructureRef` is checked to be the platform's machine kind.
pub fn machine<P: Provider>(
    provider: &P,
    machine: &capi::Machine,
    infra_spec: &P::Spec,
    instance_state: Option<&str>,
    infra_path: &FieldPath,
) -> ConversionResult<mapi::Machine> {
    let mut report = Report::default();
    check_ref(
        provider,
        &machine.spec.infrastructure_ref,
        provider.kinds().machine,
        "spec.infrastructureRef",
        &mut report,
    );
    if let Some(seconds) = machine.spec.min_ready_seconds {
        report.error(FieldError::unsupported(
            FieldPath::new("spec.minReadySeconds"),
            seconds,
            "a Machine API Machine has no minReadySeconds (a MachineSet has)",
        ));
    }
    let labels = machine.metadata.labels.as_ref();
    let mut spec = convert_spec(
        provider,
        &machine.spec,
        infra_spec,
        labels,
        &FieldPath::new("spec"),
        infra_path,
        &mut report,
    );
    let extra: Vec<(&str, String)> =
        provider.machine_labels(infra_spec, machine.spec.failure_domain.as_deref());
    let extra: Vec<(&str, &str)> = extra.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let labels = meta::labels_to_mapi(labels, &extra);
    let (annotations, hooks) = meta::annotations_to_mapi(
        machine.metadata.annotations.as_ref(),
        &[(MAPI_INSTANCE_STATE_ANNOTATION, instance_state.unwrap_or_default())],
    );
    // Hook and delete annotations are Cluster API keys: they do not reach the Node.
    spec.metadata = node_metadata(
        meta::without_capi_keys(machine.metadata.labels.as_ref()),
        meta::without_capi_keys(machine.metadata.annotations.as_ref()),
    );
    spec.lifecycle_hooks = hooks;
    spec.provider_id = machine.spec.provider_id.clone();
    report.finish(mapi::Machine {
        metadata: ObjectMeta {
            name: machine.metadata.name.clone(),
            namespace: Some(MAPI_NAMESPACE.to_owned()),
            labels,
            annotations,
            finalizers: Some(vec![MAPI_MACHINE_FINALIZER.to_owned()]),
            ..ObjectMeta::default()
        },
        spec,
        status: None,
    })
}

/// Converts a CAPI MachineSet and its template's `spec.template.spec` (at `template_path`).
///
/// Labels and annotations convert as for a Machine (without the labels the Machine API
/// controller sets on Machines); the selector's labels too. `replicas`, `deletePolicy` from
/// `deletion.order`, `minReadySeconds` from the template; the template's metadata and spec
/// as a Machine's. `spec.authoritativeAPI` is left to the hook (a MAPI MachineSet is only
/// ever updated from CAPI, never created). `clusterName` is ignored (the infrastructure
/// has it).
pub fn machine_set<P: Provider>(
    provider: &P,
    set: &capi::MachineSet,
    template_spec: &P::Spec,
    template_path: &FieldPath,
) -> ConversionResult<mapi::MachineSet> {
    let mut report = Report::default();
    let template_ref = &set.spec.template.spec.infrastructure_ref;
    check_ref(
        provider,
        template_ref,
        provider.kinds().template,
        "spec.template.spec.infrastructureRef",
        &mut report,
    );
    if let Some(template) = set.spec.machine_naming.as_ref().and_then(|n| n.template.clone()) {
        report.error(FieldError::unsupported(
            FieldPath::new("spec.machineNaming.template"),
            template,
            "the Machine API names machines itself",
        ));
    }
    let template_meta = set.spec.template.metadata.clone().unwrap_or_default();
    let mut machine_spec = convert_spec(
        provider,
        &set.spec.template.spec,
        template_spec,
        template_meta.labels.as_ref(),
        &FieldPath::new("spec.template.spec"),
        template_path,
        &mut report,
    );
    let (template_annotations, hooks) = meta::annotations_to_mapi(template_meta.annotations.as_ref(), &[]);
    machine_spec.metadata = node_metadata(
        meta::without_capi_keys(template_meta.labels.as_ref()),
        meta::without_capi_keys(template_meta.annotations.as_ref()),
    );
    machine_spec.lifecycle_hooks = hooks;
    let (annotations, _) = meta::annotations_to_mapi(set.metadata.annotations.as_ref(), &[]);
    report.finish(mapi::MachineSet {
        metadata: ObjectMeta {
            name: set.metadata.name.clone(),
            namespace: Some(MAPI_NAMESPACE.to_owned()),
            labels: meta::labels_to_mapi(set.metadata.labels.as_ref(), &[]),
            annotations,
            ..ObjectMeta::default()
        },
        spec: mapi::MachineSetSpec {
            replicas: set.spec.replicas,
            min_ready_seconds: set.spec.template.spec.min_ready_seconds,
            delete_policy: set.spec.deletion.as_ref().and_then(|d| d.order.clone()),
            selector: selector_to_mapi(&set.spec.selector),
            template: Some(mapi::MachineTemplateSpec {
                metadata: Some(mapi::ObjectMeta {
                    labels: meta::labels_to_mapi(template_meta.labels.as_ref(), &[]),
                    annotations: template_annotations,
                    ..mapi::ObjectMeta::default()
                }),
                spec: Some(machine_spec),
            }),
            authoritative_api: None,
        },
        status: None,
    })
}

/// The infrastructure reference must name the platform's kind in its group.
fn check_ref<P: Provider>(
    provider: &P,
    reference: &sync_core::api::ContractVersionedObjectReference,
    kind: &str,
    path: &str,
    report: &mut Report,
) {
    let group = provider.kinds().group;
    if reference.kind != kind || reference.api_group != group {
        report.error(FieldError::unsupported(
            FieldPath::new(path),
            format!("{}.{}", reference.kind, reference.api_group),
            format!("only {kind} infrastructure converts"),
        ));
    }
}

/// The parts of a CAPI Machine spec (standalone or template) every conversion shares.
fn convert_spec<P: Provider>(
    provider: &P,
    spec: &capi::MachineSpec,
    infra_spec: &P::Spec,
    labels: Option<&meta::Map>,
    path: &FieldPath,
    infra_path: &FieldPath,
    report: &mut Report,
) -> mapi::MachineSpec {
    check_machine_spec(provider.cluster_name(), spec, path, report);
    let facts = MachineFacts {
        failure_domain: spec.failure_domain.as_deref(),
        user_data_secret: spec.bootstrap.data_secret_name.as_deref(),
        control_plane: labels.is_some_and(|l| l.contains_key(CAPI_CONTROL_PLANE_LABEL)),
    };
    let config = provider.to_config(infra_spec, &facts, infra_path, report);
    let value = serde_json::to_value(&config)
        .ok()
        .and_then(|v| RawObject::from_value(&v).ok());
    mapi::MachineSpec {
        provider_spec: Some(ProviderSpec { value }),
        ..mapi::MachineSpec::default()
    }
}

/// The CAPI Machine spec fields the Machine API has no place for.
fn check_machine_spec(cluster: &str, spec: &capi::MachineSpec, path: &FieldPath, report: &mut Report) {
    if spec.cluster_name != cluster {
        report.warn(
            path.child("clusterName"),
            format!(
                "{:?} is not the infrastructure name {cluster:?}; the Machine API has one cluster only",
                spec.cluster_name
            ),
        );
    }
    if let Some(version) = &spec.version {
        report.error(FieldError::unsupported(
            path.child("version"),
            version,
            "version is not supported",
        ));
    }
    if spec.bootstrap.config_ref.is_some() {
        report.error(FieldError::unsupported(
            path.child("bootstrap").child("configRef"),
            spec.bootstrap.config_ref.as_ref().map(|r| r.kind.clone()),
            "the Machine API only takes bootstrap data from a Secret (dataSecretName)",
        ));
    }
    if spec.readiness_gates.as_ref().is_some_and(|g| !g.is_empty()) {
        report.error(FieldError::unsupported(
            path.child("readinessGates"),
            &spec.readiness_gates,
            "readinessGates are not supported",
        ));
    }
    if spec.taints.as_ref().is_some_and(|t| !t.is_empty()) {
        report.error(FieldError::unsupported(
            path.child("taints"),
            &spec.taints,
            "taints are not converted: the Machine API to Cluster API conversion does not carry them back",
        ));
    }
    if let Some(deletion) = &spec.deletion {
        check_deletion(deletion, &path.child("deletion"), report);
    }
}

fn check_deletion(deletion: &capi::MachineDeletionSpec, path: &FieldPath, report: &mut Report) {
    if let Some(seconds) = deletion.node_drain_timeout_seconds {
        report.error(FieldError::unsupported(
            path.child("nodeDrainTimeoutSeconds"),
            seconds,
            "nodeDrainTimeoutSeconds is not supported",
        ));
    }
    if let Some(seconds) = deletion.node_volume_detach_timeout_seconds {
        report.error(FieldError::unsupported(
            path.child("nodeVolumeDetachTimeoutSeconds"),
            seconds,
            "nodeVolumeDetachTimeoutSeconds is not supported",
        ));
    }
    if let Some(seconds) = deletion
        .node_deletion_timeout_seconds
        .filter(|s| *s != NODE_DELETION_TIMEOUT_SECONDS)
    {
        report.error(FieldError::unsupported(
            path.child("nodeDeletionTimeoutSeconds"),
            seconds,
            format!("only Cluster API's default of {NODE_DELETION_TIMEOUT_SECONDS} seconds is supported"),
        ));
    }
}

fn node_metadata(labels: Option<meta::Map>, annotations: Option<meta::Map>) -> Option<mapi::ObjectMeta> {
    (labels.is_some() || annotations.is_some()).then(|| mapi::ObjectMeta {
        labels,
        annotations,
        ..mapi::ObjectMeta::default()
    })
}

fn selector_to_mapi(selector: &LabelSelector) -> LabelSelector {
    LabelSelector {
        match_labels: selector
            .match_labels
            .as_ref()
            .map(|labels| meta::labels_to_mapi(Some(labels), &[]).unwrap_or_default()),
        match_expressions: selector.match_expressions.clone(),
    }
}

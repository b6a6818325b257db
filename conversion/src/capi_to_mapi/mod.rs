//! Cluster API → Machine API: a CAPI Machine and its `AWSMachine` become a MAPI Machine; a
//! CAPI MachineSet and its `AWSMachineTemplate` a MAPI MachineSet.

mod aws;
mod status;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use sync_core::api::RawObject;
use sync_core::api::capi;
use sync_core::api::mapi::{self, ProviderSpec};

pub use self::status::{convert_machine_set_status, convert_machine_status};
use crate::aws::capa::{self, AwsMachine, AwsMachineSpec, AwsMachineTemplate};
use crate::aws::provider::LoadBalancerReference;
use crate::errors::{ConversionResult, FieldError, FieldPath, Report};
use crate::infrastructure::{AwsInfrastructure, DEFAULT_CAPI_NAMESPACE};
use crate::meta;
use crate::names::{
    CAPI_CONTROL_PLANE_LABEL, MAPI_INSTANCE_STATE_ANNOTATION, MAPI_INSTANCE_TYPE_LABEL,
    MAPI_MACHINE_FINALIZER, MAPI_NAMESPACE, MAPI_REGION_LABEL, MAPI_ZONE_LABEL,
    NODE_DELETION_TIMEOUT_SECONDS,
};

/// Where the paths of errors in the `AWSMachine` start (the CAPI Machine's start at `spec`
/// or `metadata`).
pub const AWS_MACHINE_PATH: &str = "awsMachine.spec";
/// Where the paths of errors in the `AWSMachineTemplate` start.
pub const AWS_MACHINE_TEMPLATE_PATH: &str = "awsMachineTemplate.spec.template.spec";

/// Converts a CAPI Machine and its `AWSMachine`.
///
/// Labels: `node-role.kubernetes.io/<role>` becomes the role and type labels, Cluster API's
/// own keys (`…cluster.x-k8s.io/…`) are dropped, and the instance-type, region and zone
/// labels the Machine API controller would set are added; the same labels, without
/// Cluster API's keys, go to `spec.metadata.labels` (MAPI propagates those to the Node).
/// Annotations: lifecycle hook annotations become `spec.lifecycleHooks`, the
/// delete-machine annotation is renamed, the paused annotation and Cluster API's keys are
/// dropped, `machine.openshift.io/instance-state` is added. The providerSpec comes from the
/// `AWSMachine` spec, the zone from `failureDomain`, the user data secret from
/// `bootstrap.dataSecretName`, the region from the infrastructure, credentials are the
/// default secret. Finalizer `machine.machine.openshift.io` is set; `spec.authoritativeAPI`
/// is left to the hook (it keeps the existing MAPI object's). Ignored because MAPI derives
/// them: `clusterName`, `infrastructureRef` (checked to be an `AWSMachine`), the
/// `AWSMachine`'s `providerID`/`instanceID` (the CAPI Machine's `providerID` is copied).
pub fn convert_machine(
    machine: &capi::Machine,
    aws_machine: &AwsMachine,
    infra: &AwsInfrastructure,
) -> ConversionResult<mapi::Machine> {
    let mut report = Report::default();
    if machine.spec.infrastructure_ref.kind != capa::AWS_MACHINE_KIND
        || machine.spec.infrastructure_ref.api_group != capa::GROUP
    {
        report.error(FieldError::unsupported(
            FieldPath::new("spec.infrastructureRef"),
            format!(
                "{}.{}",
                machine.spec.infrastructure_ref.kind, machine.spec.infrastructure_ref.api_group
            ),
            "only AWSMachine infrastructure converts",
        ));
    }
    let load_balancers = cluster_facts(machine.metadata.labels.as_ref(), infra, &mut report);
    if let Some(seconds) = machine.spec.min_ready_seconds {
        report.error(FieldError::unsupported(
            FieldPath::new("spec.minReadySeconds"),
            seconds,
            "a Machine API Machine has no minReadySeconds (a MachineSet has)",
        ));
    }
    let spec = convert_spec(
        &machine.spec,
        &aws_machine.spec,
        infra,
        load_balancers,
        &FieldPath::new("spec"),
        &FieldPath::new(AWS_MACHINE_PATH),
        &mut report,
    );
    let instance_state = aws_machine
        .status
        .as_ref()
        .and_then(|s| s.instance_state.clone())
        .unwrap_or_default();
    let zone = machine.spec.failure_domain.clone().unwrap_or_default();
    let labels = meta::labels_to_mapi(
        machine.metadata.labels.as_ref(),
        &[
            (MAPI_INSTANCE_TYPE_LABEL, &aws_machine.spec.instance_type),
            (MAPI_REGION_LABEL, &infra.region),
            (MAPI_ZONE_LABEL, &zone),
        ],
    );
    let (annotations, hooks) = meta::annotations_to_mapi(
        machine.metadata.annotations.as_ref(),
        &[(MAPI_INSTANCE_STATE_ANNOTATION, &instance_state)],
    );
    // Hook and delete annotations are Cluster API keys: they do not reach the Node.
    let node_annotations = meta::without_capi_keys(machine.metadata.annotations.as_ref());
    let mut mapi_spec = spec;
    mapi_spec.metadata = node_metadata(
        meta::without_capi_keys(machine.metadata.labels.as_ref()),
        node_annotations,
    );
    mapi_spec.lifecycle_hooks = hooks;
    mapi_spec.provider_id = machine.spec.provider_id.clone();
    let mapi_machine = mapi::Machine {
        metadata: ObjectMeta {
            name: machine.metadata.name.clone(),
            namespace: Some(MAPI_NAMESPACE.to_owned()),
            labels,
            annotations,
            finalizers: Some(vec![MAPI_MACHINE_FINALIZER.to_owned()]),
            ..ObjectMeta::default()
        },
        spec: mapi_spec,
        status: None,
    };
    report.finish(mapi_machine)
}

/// Converts a CAPI MachineSet and its `AWSMachineTemplate`.
///
/// Labels and annotations convert as for a Machine (without the labels the Machine API
/// controller sets on Machines); the selector's labels too. `replicas`, `deletePolicy` from
/// `deletion.order`, `minReadySeconds` from the template; the template's metadata and spec
/// as a Machine's. `spec.authoritativeAPI` is left to the hook (a MAPI MachineSet is only
/// ever updated from CAPI, never created). `clusterName` is ignored (the infrastructure
/// has it).
pub fn convert_machine_set(
    set: &capi::MachineSet,
    template: &AwsMachineTemplate,
    infra: &AwsInfrastructure,
) -> ConversionResult<mapi::MachineSet> {
    let mut report = Report::default();
    let template_ref = &set.spec.template.spec.infrastructure_ref;
    if template_ref.kind != capa::AWS_MACHINE_TEMPLATE_KIND || template_ref.api_group != capa::GROUP {
        report.error(FieldError::unsupported(
            FieldPath::new("spec.template.spec.infrastructureRef"),
            format!("{}.{}", template_ref.kind, template_ref.api_group),
            "only AWSMachineTemplate infrastructure converts",
        ));
    }
    if set
        .spec
        .machine_naming
        .as_ref()
        .is_some_and(|n| n.template.is_some())
    {
        report.error(FieldError::unsupported(
            FieldPath::new("spec.machineNaming.template"),
            set.spec.machine_naming.as_ref().and_then(|n| n.template.clone()),
            "the Machine API names machines itself",
        ));
    }
    let template_meta = set.spec.template.metadata.clone().unwrap_or_default();
    let load_balancers = cluster_facts(template_meta.labels.as_ref(), infra, &mut report);
    let aws_spec: AwsMachineSpec = crate::mapi_to_capi::retype(
        &template.spec.template.spec,
        &FieldPath::new(AWS_MACHINE_TEMPLATE_PATH),
        &mut report,
    );
    let spec = convert_spec(
        &set.spec.template.spec,
        &aws_spec,
        infra,
        load_balancers,
        &FieldPath::new("spec.template.spec"),
        &FieldPath::new(AWS_MACHINE_TEMPLATE_PATH),
        &mut report,
    );
    let (template_annotations, hooks) = meta::annotations_to_mapi(template_meta.annotations.as_ref(), &[]);
    let mut machine_spec = spec;
    machine_spec.metadata = node_metadata(
        meta::without_capi_keys(template_meta.labels.as_ref()),
        meta::without_capi_keys(template_meta.annotations.as_ref()),
    );
    machine_spec.lifecycle_hooks = hooks;
    let (annotations, _) = meta::annotations_to_mapi(set.metadata.annotations.as_ref(), &[]);
    let mapi_set = mapi::MachineSet {
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
    };
    report.finish(mapi_set)
}

/// The parts of a CAPI Machine spec (standalone or template) every conversion shares.
fn convert_spec(
    spec: &capi::MachineSpec,
    aws_spec: &AwsMachineSpec,
    infra: &AwsInfrastructure,
    load_balancers: Option<Vec<LoadBalancerReference>>,
    path: &FieldPath,
    aws_path: &FieldPath,
    report: &mut Report,
) -> mapi::MachineSpec {
    if spec.cluster_name != infra.infrastructure_name {
        report.warn(
            path.child("clusterName"),
            format!(
                "{:?} is not the infrastructure name {:?}; the Machine API has one cluster only",
                spec.cluster_name, infra.infrastructure_name
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
        let path = path.child("deletion");
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
    let facts = aws::MachineFacts {
        failure_domain: spec.failure_domain.as_deref(),
        user_data_secret: spec.bootstrap.data_secret_name.as_deref(),
        load_balancers,
    };
    let provider = aws::to_provider_config(aws_spec, &facts, infra, aws_path, report);
    let value = serde_json::to_value(&provider)
        .ok()
        .and_then(|v| RawObject::from_value(&v).ok());
    mapi::MachineSpec {
        provider_spec: Some(ProviderSpec { value }),
        ..mapi::MachineSpec::default()
    }
}

/// What the Machine API side takes from the cluster's AWSCluster: its identity must be
/// the one the default credentials Secret stands for, and a control plane machine (label
/// `cluster.x-k8s.io/control-plane`) lists the control plane's load balancers, as upstream
/// converts them. Without an AWSCluster nothing converts.
fn cluster_facts(
    labels: Option<&meta::Map>,
    infra: &AwsInfrastructure,
    report: &mut Report,
) -> Option<Vec<LoadBalancerReference>> {
    let Some(cluster) = &infra.aws_cluster else {
        report.error(FieldError::required(
            FieldPath::new(format!(
                "AWSCluster {DEFAULT_CAPI_NAMESPACE}/{}",
                infra.infrastructure_name
            )),
            "the cluster has no AWSCluster: its identity and load balancers are needed to convert to the \
             Machine API (the Cluster API AWS provider needs it too); create it",
        ));
        return None;
    };
    cluster.check_identity(report);
    if !labels.is_some_and(|l| l.contains_key(CAPI_CONTROL_PLANE_LABEL)) {
        return None;
    }
    match cluster.load_balancer_references() {
        Ok(references) => Some(references).filter(|r| !r.is_empty()),
        Err(errors) => {
            for error in errors.errors {
                report.error(error);
            }
            None
        }
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

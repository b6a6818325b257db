//! The one seam between the sync and the platforms: [`Platform`], an object-safe view of
//! a [`Provider`] over kind-neutral objects, and [`for_cluster`], the only place that
//! names the platforms.
//!
//! Adding a platform: a folder with its types, `Provider` impl and tests (see `aws/`),
//! one arm in [`for_cluster`] and one entry in [`ALL`], its CRDs in
//! `envtest/tests/fixtures/upstream-crds/`, and its kinds in the operator's RBAC.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::DynamicObject;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use sync_core::api::{Infrastructure, capi, mapi};

use crate::aws::cluster::AwsCluster;
use crate::aws::infrastructure::AwsInfrastructure;
use crate::errors::{ConversionErrors, ConversionResult, Converted, FieldError, FieldPath, Report};
pub use crate::machine::to_capi::CapiOwner;
use crate::machine::{status, to_capi, to_mapi};
pub use crate::provider::InfraKinds;
use crate::provider::Provider;

/// Every platform the conversion knows, by its `Infrastructure` platform type.
pub const ALL: [&InfraKinds; 3] = [
    &crate::aws::KINDS,
    &crate::openstack::KINDS,
    &crate::powervs::KINDS,
];

/// The kinds of a platform (`AWS`, `OpenStack`, `PowerVS`), if it converts.
pub fn kinds(platform: &str) -> Option<&'static InfraKinds> {
    ALL.into_iter().find(|kinds| kinds.platform == platform)
}

/// What was read of the cluster's infrastructure cluster object (e.g. its `AWSCluster`).
#[derive(Clone, Debug, Default, PartialEq)]
pub enum InfraCluster {
    /// Not read (offline tools, tests): the conversion assumes the installer's.
    #[default]
    NotRead,
    /// Read: the cluster has none (`namespace/name`, and why).
    Missing(String),
    /// Read: the object.
    Found(Value),
}

/// The conversion for the cluster `infrastructure` describes, with what was read of its
/// infrastructure cluster; every reason it has none otherwise.
pub fn for_cluster(
    infrastructure: &Infrastructure,
    cluster: &InfraCluster,
) -> Result<Arc<dyn Platform>, ConversionErrors> {
    let platform = infrastructure
        .status
        .as_ref()
        .and_then(|s| s.platform_type())
        .unwrap_or_default();
    match platform {
        crate::aws::infrastructure::AWS_PLATFORM => {
            let mut infra = AwsInfrastructure::from_infrastructure(infrastructure)?;
            match cluster {
                InfraCluster::NotRead => {}
                InfraCluster::Missing(_) => infra.aws_cluster = None,
                InfraCluster::Found(object) => infra.aws_cluster = Some(AwsCluster::from_object(object)),
            }
            Ok(Arc::new(Adapter(infra)))
        }
        crate::openstack::PLATFORM => Ok(Arc::new(Adapter(
            crate::openstack::OpenStack::from_infrastructure(infrastructure)?,
        ))),
        crate::powervs::PLATFORM => Ok(Arc::new(Adapter(crate::powervs::PowerVs::from_infrastructure(
            infrastructure,
        )?))),
        other => Err(ConversionErrors {
            errors: vec![FieldError::unsupported(
                FieldPath::new("infrastructure.status.platformStatus.type"),
                other,
                format!(
                    "no Machine API ⇄ Cluster API conversion for this platform (converted: {})",
                    ALL.map(|k| k.platform).join(", ")
                ),
            )],
            warnings: Vec::new(),
        }),
    }
}

/// The CAPI side of a MAPI Machine, statuses included.
#[derive(Clone, Debug)]
pub struct CapiMachine {
    /// The Machine.
    pub machine: capi::Machine,
    /// Its infrastructure machine (e.g. an `AWSMachine`), named like the Machine.
    pub infra: DynamicObject,
    /// What the Machine must be owned by.
    pub owner: CapiOwner,
}

/// The CAPI side of a MAPI MachineSet, status included.
#[derive(Clone, Debug)]
pub struct CapiMachineSet {
    /// The MachineSet; its template's `infrastructureRef` names `template`.
    pub set: capi::MachineSet,
    /// Its infrastructure template, named `<set>-<hash of its spec>`.
    pub template: DynamicObject,
}

/// One platform's conversions, over kind-neutral infrastructure objects; statuses are
/// converted with the objects (conditions stamped `now`).
pub trait Platform: Send + Sync + 'static {
    /// The platform's infrastructure kinds.
    fn kinds(&self) -> &'static InfraKinds;
    /// MAPI Machine → CAPI Machine and infrastructure machine.
    fn machine_to_capi(&self, machine: &mapi::Machine) -> ConversionResult<CapiMachine>;
    /// CAPI Machine and infrastructure machine → MAPI Machine.
    fn machine_to_mapi(
        &self,
        machine: &capi::Machine,
        infra: &DynamicObject,
    ) -> ConversionResult<mapi::Machine>;
    /// MAPI MachineSet → CAPI MachineSet and infrastructure template.
    fn machine_set_to_capi(&self, set: &mapi::MachineSet) -> ConversionResult<CapiMachineSet>;
    /// CAPI MachineSet and infrastructure template → MAPI MachineSet.
    fn machine_set_to_mapi(
        &self,
        set: &capi::MachineSet,
        template: &DynamicObject,
    ) -> ConversionResult<mapi::MachineSet>;
}

impl std::fmt::Debug for dyn Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Platform({})", self.kinds().platform)
    }
}

/// A [`Provider`] seen through [`Platform`].
struct Adapter<P>(P);

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

impl<P: Provider> Platform for Adapter<P> {
    fn kinds(&self) -> &'static InfraKinds {
        self.0.kinds()
    }

    fn machine_to_capi(&self, machine: &mapi::Machine) -> ConversionResult<CapiMachine> {
        let Converted {
            value: parts,
            warnings,
        } = to_capi::machine(&self.0, machine)?;
        let mut report = Report::with_warnings(warnings);
        let now = now();
        let mut capi = parts.machine;
        capi.status = Some(status::machine_to_capi(machine, &now, &mut report));
        let no_status = mapi::MachineStatus::default();
        let mapi_status = machine.status.as_ref().unwrap_or(&no_status);
        let infra_status = self
            .0
            .to_infra_status(&parts.infra_spec, mapi_status, &now, &mut report);
        let kinds = self.0.kinds();
        let infra = object(
            kinds,
            kinds.machine,
            parts.infra_meta,
            json!(parts.infra_spec),
            Some(&infra_status),
        );
        report.finish(CapiMachine {
            machine: capi,
            infra,
            owner: parts.owner,
        })
    }

    fn machine_to_mapi(
        &self,
        machine: &capi::Machine,
        infra: &DynamicObject,
    ) -> ConversionResult<mapi::Machine> {
        let kinds = self.0.kinds();
        let path = FieldPath::new(format!("{}.spec", field_name(kinds.machine)));
        let mut report = Report::default();
        let spec: P::Spec = typed(&infra.data["spec"], &path, &mut report);
        let infra_status: P::Status = match infra.data.get("status") {
            Some(value) => typed(
                value,
                &FieldPath::new(format!("{}.status", field_name(kinds.machine))),
                &mut report,
            ),
            None => P::Status::default(),
        };
        let provider_status = self.0.to_provider_status(&spec, &infra_status, &now());
        let state = provider_status.instance_state.as_deref();
        let converted = report.absorb(to_mapi::machine(&self.0, machine, &spec, state, &path));
        let mut mapi = converted.unwrap_or_default();
        mapi.status = Some(status::machine_to_mapi(
            machine,
            provider_status.value.as_ref(),
            &mut report,
        ));
        report.finish(mapi)
    }

    fn machine_set_to_capi(&self, set: &mapi::MachineSet) -> ConversionResult<CapiMachineSet> {
        let Converted {
            value: parts,
            warnings,
        } = to_capi::machine_set(&self.0, set)?;
        let mut report = Report::with_warnings(warnings);
        let mut capi = parts.machine_set;
        capi.status = report.absorb(status::machine_set_to_capi(set, &now()));
        let kinds = self.0.kinds();
        let spec = json!({"template": {"spec": parts.template_spec}});
        let template = object(kinds, kinds.template, parts.template_meta, spec, None::<&()>);
        report.finish(CapiMachineSet { set: capi, template })
    }

    fn machine_set_to_mapi(
        &self,
        set: &capi::MachineSet,
        template: &DynamicObject,
    ) -> ConversionResult<mapi::MachineSet> {
        let path = FieldPath::new(format!(
            "{}.spec.template.spec",
            field_name(self.0.kinds().template)
        ));
        let mut report = Report::default();
        let spec: P::Spec = typed(&template.data["spec"]["template"]["spec"], &path, &mut report);
        let mut mapi = report
            .absorb(to_mapi::machine_set(&self.0, set, &spec, &path))
            .unwrap_or_default();
        mapi.status = report.absorb(status::machine_set_to_mapi(set));
        report.finish(mapi)
    }
}

/// An infrastructure object of `kind` as the kind-neutral object the hooks write (built
/// in place: decoding a whole `DynamicObject` from JSON buffers it twice).
fn object(
    kinds: &InfraKinds,
    kind: &str,
    metadata: ObjectMeta,
    spec: Value,
    status: Option<&impl Serialize>,
) -> DynamicObject {
    let mut data = serde_json::Map::with_capacity(2);
    data.insert("spec".to_owned(), spec);
    if let Some(status) = status.and_then(|s| serde_json::to_value(s).ok()) {
        data.insert("status".to_owned(), status);
    }
    DynamicObject {
        types: Some(kube::api::TypeMeta {
            api_version: kinds.api_version(),
            kind: kind.to_owned(),
        }),
        metadata,
        data: Value::Object(data),
    }
}

/// A part of a live infrastructure object as its type; where it does not fit is an error
/// at that field.
fn typed<T: DeserializeOwned + Default>(value: &Value, path: &FieldPath, report: &mut Report) -> T {
    serde_path_to_error::deserialize(value).unwrap_or_else(|error| {
        let inner = error.path().to_string();
        let at = if inner == "." {
            path.clone()
        } else {
            FieldPath::new(format!("{path}.{inner}"))
        };
        report.error(FieldError::invalid(
            at,
            error.inner().to_string(),
            "does not decode as the provider's type",
        ));
        T::default()
    })
}

/// `AWSMachine` → `awsMachine`, `IBMPowerVSMachine` → `ibmPowerVSMachine`: a kind as the
/// first segment of an error path.
fn field_name(kind: &str) -> String {
    let upper = kind.chars().take_while(char::is_ascii_uppercase).count();
    let lower = if upper > 1 && upper < kind.len() {
        upper - 1
    } else {
        upper.max(1)
    };
    let (head, tail) = kind.split_at(lower.min(kind.len()));
    format!("{}{tail}", head.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_objects_become_typed_or_say_where_they_do_not_fit() {
        let spec = serde_json::json!({"instanceType": "m6i.large", "ami": {"id": "ami-1"}});
        let path = FieldPath::new("awsMachine.spec");
        let mut report = Report::default();
        let typed_spec: crate::aws::capa::AwsMachineSpec = typed(&spec, &path, &mut report);
        assert_eq!(typed_spec.instance_type, "m6i.large");
        let mut bad = spec;
        bad["tenancy"] = serde_json::json!("shared");
        let _: crate::aws::capa::AwsMachineSpec = typed(&bad, &path, &mut report);
        let errors = report.finish(()).err().map(|e| e.errors);
        let paths: Vec<String> = errors.iter().flatten().map(|e| e.path.to_string()).collect();
        assert_eq!(paths, ["awsMachine.spec.tenancy"]);
    }

    #[test]
    fn kinds_name_error_paths_in_lower_camel_case() {
        assert_eq!(field_name("AWSMachine"), "awsMachine");
        assert_eq!(field_name("OpenStackMachine"), "openStackMachine");
        assert_eq!(
            field_name("IBMPowerVSMachineTemplate"),
            "ibmPowerVSMachineTemplate"
        );
    }
}

//! The facts of the cluster's `AWSCluster` (Cluster API Provider AWS) that a conversion
//! needs: the identity the provider uses (the Machine API's counterpart is the credentials
//! Secret) and the control plane's load balancers (which the Machine API lists on each
//! control plane Machine). Read from the object as JSON: only these fields matter, with
//! CAPA's defaults applied as its webhook does.

use serde_json::Value;

use crate::aws::provider::LoadBalancerReference;
use crate::errors::{ConversionErrors, FieldError, FieldPath, Report};

/// `spec.identityRef.kind` of the provider's own credentials.
pub const CONTROLLER_IDENTITY_KIND: &str = "AWSClusterControllerIdentity";
/// The name of the `AWSClusterControllerIdentity` (a singleton).
pub const CONTROLLER_IDENTITY_NAME: &str = "default";

/// `spec.identityRef`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityRef {
    /// `AWSClusterControllerIdentity`, `AWSClusterRoleIdentity` or `AWSClusterStaticIdentity`.
    pub kind: String,
    /// Its name.
    pub name: String,
}

/// A control plane load balancer as the Machine API names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlPlaneLoadBalancer {
    /// Where it is in the AWSCluster (`spec.controlPlaneLoadBalancer`, …).
    pub path: String,
    /// Its name and Machine API type (`classic`, `network`); `Err`: why it has none.
    pub reference: Result<LoadBalancerReference, String>,
}

/// What the conversion reads from the `AWSCluster`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwsCluster {
    /// `namespace/name`, for messages.
    pub key: String,
    /// `spec.identityRef`, defaulted (CAPA's webhook sets the controller identity).
    pub identity_ref: IdentityRef,
    /// The primary and, when set, secondary control plane load balancer.
    pub control_plane_load_balancers: Vec<ControlPlaneLoadBalancer>,
}

impl AwsCluster {
    /// The AWSCluster of an installer-made cluster (as OpenShift creates it from the
    /// control plane Machines): the controller identity, and the installer's two network
    /// load balancers `<infrastructure name>-int` and `-ext`. For offline conversions,
    /// which have no cluster to read.
    pub fn installer_default(namespace: &str, infrastructure_name: &str) -> Self {
        let network = |path: &str, suffix: &str| ControlPlaneLoadBalancer {
            path: path.to_owned(),
            reference: Ok(LoadBalancerReference {
                name: format!("{infrastructure_name}-{suffix}"),
                type_: "network".into(),
            }),
        };
        Self {
            key: format!("{namespace}/{infrastructure_name}"),
            identity_ref: IdentityRef {
                kind: CONTROLLER_IDENTITY_KIND.into(),
                name: CONTROLLER_IDENTITY_NAME.into(),
            },
            control_plane_load_balancers: vec![
                network("spec.controlPlaneLoadBalancer", "int"),
                network("spec.secondaryControlPlaneLoadBalancer", "ext"),
            ],
        }
    }

    /// The facts of an `AWSCluster` object.
    pub fn from_object(object: &Value) -> Self {
        let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let spec = &object["spec"];
        let identity = &spec["identityRef"];
        let identity_ref = IdentityRef {
            kind: identity["kind"]
                .as_str()
                .unwrap_or(CONTROLLER_IDENTITY_KIND)
                .to_owned(),
            name: identity["name"]
                .as_str()
                .unwrap_or(CONTROLLER_IDENTITY_NAME)
                .to_owned(),
        };
        let mut control_plane_load_balancers = vec![load_balancer(
            "spec.controlPlaneLoadBalancer",
            &spec["controlPlaneLoadBalancer"],
            "classic",
        )];
        if !spec["secondaryControlPlaneLoadBalancer"].is_null() {
            control_plane_load_balancers.push(load_balancer(
                "spec.secondaryControlPlaneLoadBalancer",
                &spec["secondaryControlPlaneLoadBalancer"],
                "nlb",
            ));
        }
        Self {
            key: format!("{namespace}/{name}"),
            identity_ref,
            control_plane_load_balancers,
        }
    }

    /// The credentials Secret of the Machine API side: only the controller identity has
    /// one (the default Secret); any other identity is refused, at its field.
    pub(crate) fn check_identity(&self, report: &mut Report) {
        let path = FieldPath::new(format!("AWSCluster {} spec.identityRef", self.key));
        let IdentityRef { kind, name } = &self.identity_ref;
        if kind != CONTROLLER_IDENTITY_KIND {
            report.error(FieldError::invalid(
                path.child("kind"),
                kind,
                format!(
                    "only {CONTROLLER_IDENTITY_KIND} converts to the Machine API's credentials secret; \
                     another identity needs the Machine API credentials set up by hand"
                ),
            ));
        }
        if name != CONTROLLER_IDENTITY_NAME {
            report.error(FieldError::invalid(
                path.child("name"),
                name,
                format!("must be {CONTROLLER_IDENTITY_NAME:?} for an {CONTROLLER_IDENTITY_KIND}"),
            ));
        }
    }

    /// The control plane's load balancers as the Machine API lists them.
    pub fn load_balancer_references(&self) -> Result<Vec<LoadBalancerReference>, ConversionErrors> {
        let mut report = Report::default();
        let mut references = Vec::new();
        for balancer in &self.control_plane_load_balancers {
            match &balancer.reference {
                Ok(reference) => references.push(reference.clone()),
                Err(why) => report.error(FieldError::unsupported(
                    FieldPath::new(format!("AWSCluster {} {}", self.key, balancer.path)),
                    why,
                    "the Machine API supports classic (classic, elb) and network (nlb) load balancers only",
                )),
            }
        }
        report.finish(references).map(|converted| converted.value)
    }
}

/// One `AWSLoadBalancerSpec`, with CAPA's default type.
fn load_balancer(path: &str, spec: &Value, default_type: &str) -> ControlPlaneLoadBalancer {
    let kind = spec["loadBalancerType"]
        .as_str()
        .filter(|t| !t.is_empty())
        .unwrap_or(default_type);
    let name = spec["name"].as_str().unwrap_or_default().to_owned();
    let reference = match kind {
        "classic" | "elb" => Ok(LoadBalancerReference {
            name,
            type_: "classic".into(),
        }),
        "nlb" => Ok(LoadBalancerReference {
            name,
            type_: "network".into(),
        }),
        other => Err(format!("loadBalancerType {other}")),
    };
    ControlPlaneLoadBalancer {
        path: path.to_owned(),
        reference,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cluster(spec: Value) -> AwsCluster {
        AwsCluster::from_object(&json!({"metadata": {"namespace": "capi", "name": "demo"}, "spec": spec}))
    }

    #[test]
    fn the_defaults_are_the_controller_identity_and_a_classic_balancer() {
        let facts = cluster(json!({"controlPlaneLoadBalancer": {"name": "demo-int"}}));
        let mut report = Report::default();
        facts.check_identity(&mut report);
        assert!(report.finish(()).is_ok());
        assert_eq!(
            facts.load_balancer_references(),
            Ok(vec![LoadBalancerReference {
                name: "demo-int".into(),
                type_: "classic".into()
            }])
        );
    }

    #[test]
    fn a_secondary_balancer_defaults_to_network() {
        let facts = cluster(json!({
            "controlPlaneLoadBalancer": {"name": "demo-int", "loadBalancerType": "nlb"},
            "secondaryControlPlaneLoadBalancer": {"name": "demo-ext"}
        }));
        let names: Vec<_> = facts
            .load_balancer_references()
            .unwrap_or_default()
            .into_iter()
            .map(|r| (r.name, r.type_))
            .collect();
        assert_eq!(
            names,
            [
                ("demo-int".into(), "network".into()),
                ("demo-ext".into(), "network".into())
            ]
        );
    }

    #[test]
    fn another_identity_is_refused_at_its_fields() {
        let facts = cluster(json!({"identityRef": {"kind": "AWSClusterStaticIdentity", "name": "ops"}}));
        let mut report = Report::default();
        facts.check_identity(&mut report);
        let errors = match report.finish(()) {
            Err(errors) => errors.to_string(),
            Ok(_) => panic!("accepted"),
        };
        assert!(
            errors.contains("AWSCluster capi/demo spec.identityRef.kind"),
            "{errors}"
        );
        assert!(
            errors.contains("AWSCluster capi/demo spec.identityRef.name"),
            "{errors}"
        );
    }

    #[test]
    fn an_application_or_disabled_balancer_has_no_machine_api_type() {
        let facts = cluster(json!({"controlPlaneLoadBalancer": {"loadBalancerType": "alb"}}));
        let errors = match facts.load_balancer_references() {
            Err(errors) => errors.to_string(),
            Ok(refs) => panic!("{refs:?}"),
        };
        assert!(
            errors.contains("AWSCluster capi/demo spec.controlPlaneLoadBalancer"),
            "{errors}"
        );
    }
}

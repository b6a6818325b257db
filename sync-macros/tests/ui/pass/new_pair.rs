//! A pair that exists only in this file: its own MAPI and CAPI kinds, a v1beta1-style
//! infrastructure reference, and a name override.
use sync_macros::sync_controller;

/// The MAPI side: any `CustomResource` that says which API is authoritative.
mod mapi {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};
    use sync_core::MapiObject;
    use sync_core::api::AuthoritativeApi;

    /// Desired state of a MAPI Gizmo.
    #[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
    #[kube(
        group = "gizmo.openshift.io",
        version = "v1beta1",
        kind = "Gizmo",
        namespaced,
        status = "GizmoStatus"
    )]
    pub struct GizmoSpec {
        pub size: u32,
    }

    /// Observed state of a MAPI Gizmo.
    #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct GizmoStatus {
        pub authoritative_api: Option<AuthoritativeApi>,
    }

    impl MapiObject for Gizmo {
        fn authoritative_api(&self) -> Option<&AuthoritativeApi> {
            self.status.as_ref()?.authoritative_api.as_ref()
        }
    }
}

/// The CAPI side, with a v1beta1-style (`apiVersion`, `kind`, `name`) infrastructure ref.
mod capi {
    use k8s_openapi::api::core::v1::ObjectReference;
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// Desired state of a CAPI Gizmo.
    #[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
    #[kube(
        group = "gizmo.cluster.x-k8s.io",
        version = "v1beta1",
        kind = "Gizmo",
        namespaced
    )]
    #[serde(rename_all = "camelCase")]
    pub struct GizmoSpec {
        pub infrastructure_ref: Option<ObjectReference>,
    }
}

/// Mirrors MAPI Gizmos and CAPI Gizmos.
#[sync_controller(
    mapi = mapi::Gizmo,
    capi = capi::Gizmo,
    infra_ref = spec.infrastructure_ref,
    name = "gizmos",
)]
pub struct GizmoSync;

fn main() {
    use k8s_openapi::api::core::v1::ObjectReference;
    use sync_core::api::{InfraRef, MalformedRef};
    use sync_core::{CapiOnly, SyncPair};

    assert_eq!(GizmoSync::NAME, "gizmos");
    assert_eq!(GizmoSync::CAPI_ONLY, CapiOnly::Ignore);

    let mut gizmo = capi::Gizmo::new("g", capi::GizmoSpec::default());
    assert_eq!(GizmoSync::infra_ref(&gizmo), Ok(None));

    gizmo.spec.infrastructure_ref = Some(ObjectReference {
        api_version: Some("infrastructure.cluster.x-k8s.io/v1beta1".into()),
        kind: Some("DevGizmo".into()),
        name: Some("g".into()),
        ..ObjectReference::default()
    });
    assert_eq!(
        GizmoSync::infra_ref(&gizmo),
        Ok(Some(InfraRef {
            group: "infrastructure.cluster.x-k8s.io".into(),
            version: Some("v1beta1".into()),
            kind: "DevGizmo".into(),
            name: "g".into(),
        }))
    );

    gizmo.spec.infrastructure_ref = Some(ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("DevGizmo".into()),
        name: Some("g".into()),
        ..ObjectReference::default()
    });
    assert_eq!(
        GizmoSync::infra_ref(&gizmo),
        Err(MalformedRef::BadApiVersion("v1".into()))
    );
}

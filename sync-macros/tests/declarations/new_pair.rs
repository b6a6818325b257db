//! A pair that exists only in this file: its own MAPI and CAPI kinds, a v1beta1-style
//! infrastructure reference, and a name override.
use sync_macros::sync_controller;

/// The MAPI side: any `CustomResource` whose status is (or embeds) the sync-status block.
mod mapi {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// Desired state of a MAPI Gizmo.
    #[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
    #[kube(
        group = "gizmo.openshift.io",
        version = "v1beta1",
        kind = "Gizmo",
        namespaced,
        status = "sync_core::api::SyncStatus"
    )]
    pub struct GizmoSpec {
        pub size: u32,
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

#[test]
fn expands() {
    use k8s_openapi::api::core::v1::ObjectReference;
    use sync_core::api::{AuthoritativeApi, SyncStatus};
    use sync_core::api::{InfraRef, MalformedRef};
    use sync_core::{CapiOnly, MapiObject, SyncPair};

    assert_eq!(GizmoSync::NAME, "gizmos");

    // The MAPI kind is a `MapiObject` with no code: its status is the sync-status block,
    // whose wire name is `authoritativeAPI`.
    let mut mapi = mapi::Gizmo::new("g", mapi::GizmoSpec { size: 1 });
    mapi.status = Some(SyncStatus {
        authoritative_api: Some(AuthoritativeApi::Migrating),
        ..SyncStatus::default()
    });
    assert_eq!(mapi.authoritative_api(), Some(&AuthoritativeApi::Migrating));
    let wire = serde_json::to_value(&mapi).unwrap_or_default();
    assert_eq!(wire["status"]["authoritativeAPI"], "Migrating");
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

impl ::sync_core::SyncPair for MachineSync {
    type Mapi = mapi::Machine;
    type Capi = capi::Machine;
    type OwnerMirror = mapi::MachineSet;
    const NAME: &'static str = "machine-sync";
    const CAPI_ONLY: ::sync_core::CapiOnly = ::sync_core::CapiOnly::MirrorIfOwnerMirrored;
    const INFRA_REF: ::core::option::Option<&'static str> =
        ::core::option::Option::Some("spec.infrastructure_ref");
    fn infra_ref(
        capi: &capi::Machine,
    ) -> ::core::result::Result<
        ::core::option::Option<::sync_core::api::InfraRef>,
        ::sync_core::api::MalformedRef,
    > {
        ::sync_core::api::AsInfraRef::as_infra_ref(&capi.spec.infrastructure_ref)
    }
}
impl ::sync_core::DeclaredWithoutCustomHooks for MachineSync {}

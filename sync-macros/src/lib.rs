//! `#[sync_controller]`: declare a synced Machine API ⇄ Cluster API pair in a few lines.
//!
//! A declaration names the two kinds and the few facts that differ between pairs; the
//! engine in `sync-core` does the rest (watches, caches, the dual fetch, the deletion
//! fork, the authoritative-API switch). The macro only emits the per-pair glue: an
//! `impl sync_core::SyncPair` and, unless you write your own, the stub
//! `impl sync_core::SyncHooks` whose hooks log and wait for the next change.
//!
//! # A complete declaration
//!
//! ```
//! use sync_core::api::{capi, mapi};
//! use sync_macros::sync_controller;
//!
//! /// Mirrors Machine API Machines and Cluster API Machines.
//! #[sync_controller(
//!     mapi = mapi::Machine,
//!     capi = capi::Machine,
//!     infra_ref = spec.infrastructure_ref,
//!     capi_only = mirror_if_owner_mirrored(mapi::MachineSet),
//! )]
//! pub struct MachineSync;
//!
//! // The declaration is a complete pair: the engine runs it with the stub hooks.
//! use sync_core::{CapiOnly, SyncPair};
//! assert_eq!(MachineSync::NAME, "machine-sync");
//! assert_eq!(MachineSync::CAPI_ONLY, CapiOnly::MirrorIfOwnerMirrored);
//! ```
//!
//! It expands to the struct, unchanged, and this (`tests/expanded/machine_sync.rs`, which
//! a unit test keeps equal to the macro's output and this doctest compiles):
//!
//! ```
//! # use sync_core::api::{capi, mapi};
//! # pub struct MachineSync;
#![doc = include_str!("../tests/expanded/machine_sync.rs")]
//! ```
//!
//! The crate that declares a pair depends on `sync-core` under its own name (`sync_core`):
//! the expansion refers to it by absolute paths.
//!
//! # Keys
//!
//! | key | value | required | meaning |
//! |---|---|---|---|
//! | `mapi` | type path | yes | The Machine API kind (`sync_core::MapiObject`), watched in the MAPI namespace. |
//! | `capi` | type path | yes | The Cluster API kind, watched in the CAPI namespace. |
//! | `infra_ref` | Rust field path on the `capi` type | no | Where the CAPI object keeps its infrastructure reference, in Rust field names (`spec.infrastructure_ref`, `spec.template.spec.infrastructure_ref`), not wire names (`spec.infrastructureRef`). The field's type must implement `sync_core::api::AsInfraRef` (v1beta2 `ContractVersionedObjectReference`, v1beta1 `ObjectReference`, or an `Option` of either); the compiler checks it. The controller then watches every infrastructure kind the CAPI objects reference, with no other wiring (`SyncController::with_infra` only shares the watches between controllers). Without the key the pair has no infrastructure object. |
//! | `capi_only` | `ignore` or `mirror_if_owner_mirrored(<MAPI type>)` | no, `ignore` | What to do with a CAPI object that has no MAPI mirror while it lives: run no hook, or `reconcile_capi_to_mapi` when its CAPI owner (a `cluster.x-k8s.io` object of the given MAPI type's kind) has a MAPI mirror of that type; the type must be a `sync_core::MapiObject` (the compiler checks it). Under either policy, a CAPI-only object *being deleted* goes to `reconcile_deletion(CapiToMapi)` with `mapi: None`, so that the pair can release its finalizer once the MAPI side is gone (`docs/design.md` §5). |
//! | `name` | string literal | no, the struct name in kebab case | The controller's name in logs, metrics and Events: lowercase words joined by `-` (`MachineSetSync` → `"machine-set-sync"`). |
//! | `custom_hooks` | flag | no | You implement `sync_core::SyncHooks<Self>` yourself instead of getting the stubs. |
//!
//! The attribute goes on a unit struct or a struct with named fields, without generic
//! parameters. Values are written without quotes, except `name`.
//!
//! # Writing the business logic
//!
//! Each hook of `sync_core::SyncHooks` has a stub default. To replace one, add
//! `custom_hooks` and implement the trait, overriding only the hooks you need; nothing
//! generated is touched and the compiler checks the signatures:
//!
//! ```
//! use sync_core::api::{capi, mapi};
//! use sync_core::{Action, HookResult, SyncContext, SyncHooks, SyncObjects};
//! use sync_macros::sync_controller;
//!
//! /// Mirrors Machine API MachineSets and Cluster API MachineSets.
//! #[sync_controller(
//!     mapi = mapi::MachineSet,
//!     capi = capi::MachineSet,
//!     infra_ref = spec.template.spec.infrastructure_ref,
//!     custom_hooks,
//! )]
//! pub struct MachineSetSync;
//!
//! impl SyncHooks<MachineSetSync> for MachineSetSync {
//!     async fn reconcile_mapi_to_capi(
//!         &self,
//!         objects: &SyncObjects<MachineSetSync>,
//!         _ctx: &SyncContext<MachineSetSync>,
//!     ) -> HookResult {
//!         let Some(mapi) = objects.mapi.as_deref() else {
//!             return Ok(Action::await_change());
//!         };
//!         // Real logic would write the CAPI mirror here.
//!         let _replicas = mapi.spec.replicas;
//!         Ok(Action::requeue(std::time::Duration::from_secs(60)))
//!     }
//! }
//! # fn main() {}
//! ```
//!
//! With `custom_hooks` and no impl, the error points at `custom_hooks`.
//!
//! # Errors
//!
//! Mistakes are compile errors on the offending tokens, all reported at once, and nothing
//! else: with an error in the attribute the macro still emits the struct and placeholder
//! `SyncPair`/`SyncHooks` impls, so that code using the pair adds no errors of its own.
//! The errors: a missing `mapi` or `capi`, an unknown key (with a "did you mean"
//! suggestion), a key given twice, a value of the wrong shape (such as a quoted type), an
//! unknown CAPI-only policy, an invalid `name`, and an item that is not a plain
//! non-generic struct. A field path that names no field, or a field that is not an
//! infrastructure reference, is reported by the compiler on the `infra_ref` value; a
//! `mapi` type that is not a `MapiObject`, on the `mapi` value; an owner type that is not
//! a `MapiObject`, on that type; a missing hooks impl, on `custom_hooks`. `tests/ui/fail`
//! holds a case, with its exact message, for each.
//!
//! # Layout
//!
//! Three stages, like `serde_derive`: `attrs` parses the arguments (darling: keys,
//! duplicates, suggestions; each value's shape), `model` checks them with the item and
//! builds the validated pair, `expand` generates the code. Malformed values are kept as
//! errors spanned on all of their tokens, so one compile reports every mistake.

mod attrs;
mod expand;
mod model;

use proc_macro::TokenStream;

/// Declares a synced MAPI ⇄ CAPI pair on a struct; see the [crate docs](crate) for the
/// keys and an example.
#[proc_macro_attribute]
pub fn sync_controller(args: TokenStream, item: TokenStream) -> TokenStream {
    sync_controller_impl(args.into(), item.into()).into()
}

/// The attribute on `proc_macro2` tokens: the item unchanged, then the glue or the errors.
fn sync_controller_impl(
    args: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let parsed = match syn::parse2::<syn::Item>(item.clone()) {
        Ok(parsed) => parsed,
        Err(err) => return err.to_compile_error(),
    };
    let salvaged = || attrs::Salvaged::from_tokens(args.clone());
    let generated = match model::Pair::new(attrs::Args::parse(args.clone()), salvaged, &parsed) {
        Ok(pair) => expand::expand(&pair),
        Err(invalid) => {
            let errors = invalid.errors.to_compile_error();
            let fallback = expand::fallback(&invalid.fallback);
            quote::quote!(#errors #fallback)
        }
    };
    quote::quote! {
        #item
        #generated
    }
}

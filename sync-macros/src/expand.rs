//! Stage 3: generate the per-pair glue from a validated [`Pair`].
//!
//! The output is what a person would write by hand: one `impl SyncPair` and, unless the
//! user writes their own hooks, `impl DeclaredWithoutCustomHooks` (the stub hooks). Every path is absolute, so the
//! expansion needs no imports besides a dependency on `sync-core`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use crate::model::{CapiOnly, Fallback, Hooks, Pair};

/// The `impl SyncPair` and the hooks impl (or the check that the user wrote one).
pub(crate) fn expand(pair: &Pair) -> TokenStream {
    let Pair {
        ident,
        mapi,
        capi,
        name,
        ..
    } = pair;
    let (owner, policy) = match &pair.capi_only {
        CapiOnly::Ignore => (quote!(::sync_core::NoOwner), quote!(Ignore)),
        CapiOnly::MirrorIfOwnerMirrored(owner) => (quote!(#owner), quote!(MirrorIfOwnerMirrored)),
    };
    let infra_ref = infra_ref_fn(pair);
    let infra_field = match pair.infra_ref.as_deref() {
        Some(members) => {
            let path = members
                .iter()
                .map(|member| quote!(#member).to_string())
                .collect::<Vec<_>>()
                .join(".");
            quote!(::core::option::Option::Some(#path))
        }
        None => quote!(::core::option::Option::None),
    };
    let hooks = hooks(ident, &pair.hooks);
    quote! {
        impl ::sync_core::SyncPair for #ident {
            type Mapi = #mapi;
            type Capi = #capi;
            type OwnerMirror = #owner;
            const NAME: &'static str = #name;
            const CAPI_ONLY: ::sync_core::CapiOnly = ::sync_core::CapiOnly::#policy;
            const INFRA_REF: ::core::option::Option<&'static str> = #infra_field;
            #infra_ref
        }
        #hooks
    }
}

/// The placeholder impls of a declaration with errors, next to the errors: the struct is a
/// `SyncPair` (of the kinds that are well formed, `NoOwner` for the others) with the stub
/// hooks unless `custom_hooks` appears, so that code using the pair compiles and the
/// attribute's errors are the only ones.
pub(crate) fn fallback(fallback: &Fallback) -> TokenStream {
    let Some(ident) = &fallback.ident else {
        return TokenStream::new();
    };
    let placeholder = quote!(::sync_core::NoOwner);
    let kind = |path: &Option<syn::Path>| path.as_ref().map_or(placeholder.clone(), |path| quote!(#path));
    let (mapi, capi, owner) = (kind(&fallback.mapi), kind(&fallback.capi), kind(&fallback.owner));
    let hooks =
        (!fallback.custom_hooks).then(|| quote!(impl ::sync_core::DeclaredWithoutCustomHooks for #ident {}));
    quote! {
        impl ::sync_core::SyncPair for #ident {
            type Mapi = #mapi;
            type Capi = #capi;
            type OwnerMirror = #owner;
            const NAME: &'static str = "invalid-declaration";
            const CAPI_ONLY: ::sync_core::CapiOnly = ::sync_core::CapiOnly::Ignore;
            const INFRA_REF: ::core::option::Option<&'static str> = ::core::option::Option::None;
            fn infra_ref(
                _capi: &#capi,
            ) -> ::core::result::Result<
                ::core::option::Option<::sync_core::api::InfraRef>,
                ::sync_core::api::MalformedRef,
            > {
                ::core::result::Result::Ok(::core::option::Option::None)
            }
        }
        #hooks
    }
}

/// `fn infra_ref`: reads the declared field through `AsInfraRef`, or has no reference.
///
/// The call is spanned on the user's field path, so a missing field or a field whose type
/// is not an infrastructure reference is reported on the `infra_ref = ...` tokens.
fn infra_ref_fn(pair: &Pair) -> TokenStream {
    let capi = &pair.capi;
    let ret = quote! {
        ::core::result::Result<
            ::core::option::Option<::sync_core::api::InfraRef>,
            ::sync_core::api::MalformedRef,
        >
    };
    match pair.infra_ref.as_deref() {
        Some(members @ [first, ..]) => {
            // The parameter and the call carry the field path's span: errors about the
            // field land on the user's tokens, and the parameter resolves the same way
            // as its use wherever the attribute was written.
            let span = first.span();
            let var = Ident::new("capi", span);
            let call = quote_spanned! {span=>
                ::sync_core::api::AsInfraRef::as_infra_ref(&#var #(.#members)*)
            };
            quote! {
                fn infra_ref(#var: &#capi) -> #ret {
                    #call
                }
            }
        }
        _ => quote! {
            fn infra_ref(_capi: &#capi) -> #ret {
                ::core::result::Result::Ok(::core::option::Option::None)
            }
        },
    }
}

/// The stub hooks, or, with `custom_hooks`, a check on that flag that the user's impl exists.
fn hooks(ident: &Ident, hooks: &Hooks) -> TokenStream {
    match hooks {
        Hooks::Stubs => quote! {
            impl ::sync_core::DeclaredWithoutCustomHooks for #ident {}
        },
        Hooks::Custom(span) => {
            let ident = Ident::new(&ident.to_string(), *span);
            quote_spanned! {*span=>
                const _: () = {
                    const fn assert_custom_hooks<T: ::sync_core::SyncPair + ::sync_core::SyncHooks<T>>() {}
                    assert_custom_hooks::<#ident>()
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;
    use syn::parse_quote;

    use super::*;
    use crate::attrs::Args;

    fn expand_str(args: TokenStream, item: syn::Item) -> String {
        match Pair::new(Args::parse(args), Default::default, &item) {
            Ok(pair) => expand(&pair).to_string(),
            Err(invalid) => panic!("{}", invalid.errors),
        }
    }

    #[test]
    fn machine_sync() {
        let out = expand_str(
            quote!(
                mapi = mapi::Machine,
                capi = capi::Machine,
                infra_ref = spec.infrastructure_ref,
                capi_only = mirror_if_owner_mirrored(mapi::MachineSet),
            ),
            parse_quote!(
                pub struct MachineSync;
            ),
        );
        // The rustfmt-formatted expansion the crate docs show and compile.
        let expected = include_str!("../tests/expanded/machine_sync.rs");
        assert_eq!(normalize(&out), normalize(expected));
    }

    /// Token text without the spacing and trailing commas that printing and rustfmt vary.
    fn normalize(code: &str) -> String {
        let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
        code.replace(",)", ")").replace(",>", ">")
    }

    #[test]
    fn normalize_keeps_tokens() {
        assert_eq!(normalize("f(a: &B,) -> R<C, D,>"), "f(a:&B)->R<C,D>");
    }

    #[test]
    fn ignore_without_infra_ref_with_custom_hooks() {
        let out = expand_str(
            quote!(mapi = A, capi = B, name = "w", custom_hooks),
            parse_quote!(
                struct W;
            ),
        );
        let expected = quote! {
            impl ::sync_core::SyncPair for W {
                type Mapi = A;
                type Capi = B;
                type OwnerMirror = ::sync_core::NoOwner;
                const NAME: &'static str = "w";
                const CAPI_ONLY: ::sync_core::CapiOnly = ::sync_core::CapiOnly::Ignore;
                const INFRA_REF: ::core::option::Option<&'static str> = ::core::option::Option::None;
                fn infra_ref(_capi: &B) -> ::core::result::Result<
                    ::core::option::Option<::sync_core::api::InfraRef>,
                    ::sync_core::api::MalformedRef,
                > {
                    ::core::result::Result::Ok(::core::option::Option::None)
                }
            }
            const _: () = {
                const fn assert_custom_hooks<T: ::sync_core::SyncPair + ::sync_core::SyncHooks<T>>() {}
                assert_custom_hooks::<W>()
            };
        };
        assert_eq!(out, expected.to_string());
    }
}

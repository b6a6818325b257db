//! Stage 1: parse the attribute's arguments into [`Args`], syntax only.
//!
//! darling derives the key handling (unknown keys with a "did you mean" suggestion, keys
//! given twice); the value types below say what each value may look like. A malformed
//! value does not stop parsing: it is kept as a `syn::Error` spanned on all of its tokens
//! (darling's own errors carry a single token's span), and the model reports it together
//! with everything else.

use darling::ast::NestedMeta;
use darling::{FromMeta, Result};
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, LitStr, Member, Meta, Path};

/// `#[sync_controller(...)]`'s arguments, as written.
#[derive(Debug, FromMeta)]
pub(crate) struct Args {
    /// `mapi = <type path>`: the Machine API kind (required; checked by the model, whose
    /// message says what the key is for).
    pub mapi: Option<TypePath>,
    /// `capi = <type path>`: the Cluster API kind (required, like `mapi`).
    pub capi: Option<TypePath>,
    /// `infra_ref = <field path>`: where the CAPI kind keeps its infrastructure reference.
    pub infra_ref: Option<FieldPath>,
    /// `capi_only = ignore | mirror_if_owner_mirrored(<type path>)`.
    pub capi_only: Option<CapiOnly>,
    /// `name = "<name>"`: the name in logs, metrics and events.
    pub name: Option<Name>,
    /// `custom_hooks`: the user implements `SyncHooks` themselves.
    pub custom_hooks: Option<CustomHooks>,
}

impl Args {
    /// Parses the tokens inside `#[sync_controller(...)]`.
    pub(crate) fn parse(args: TokenStream) -> Result<Self> {
        let items = NestedMeta::parse_meta_list(args)?;
        Self::from_list(&items)
    }
}

/// What can still be read from arguments that darling rejected (an unknown key, a key
/// given twice): the first well-formed `mapi`, `capi` and owner types, and whether
/// `custom_hooks` is there. Only the fallback expansion uses it, so that one mistake does
/// not also break every use of the pair.
#[derive(Debug, Default)]
pub(crate) struct Salvaged {
    /// `mapi = <type path>`, if well formed.
    pub mapi: Option<Path>,
    /// `capi = <type path>`, if well formed.
    pub capi: Option<Path>,
    /// The type in `capi_only = mirror_if_owner_mirrored(<type path>)`, if well formed.
    pub owner: Option<Path>,
    /// `custom_hooks` appears, in any form.
    pub custom_hooks: bool,
}

impl Salvaged {
    /// Reads what it can from the tokens inside `#[sync_controller(...)]`.
    pub(crate) fn from_tokens(args: TokenStream) -> Self {
        let mut salvaged = Self::default();
        for item in NestedMeta::parse_meta_list(args).unwrap_or_default() {
            let NestedMeta::Meta(meta) = item else { continue };
            let path = meta.path();
            if path.is_ident("custom_hooks") {
                salvaged.custom_hooks = true;
            }
            let Meta::NameValue(pair) = &meta else { continue };
            let first = |slot: &mut Option<Path>, value: Value<Path>| {
                if slot.is_none() {
                    *slot = value.ok();
                }
            };
            if path.is_ident("mapi") {
                first(&mut salvaged.mapi, type_path(&pair.value));
            } else if path.is_ident("capi") {
                first(&mut salvaged.capi, type_path(&pair.value));
            } else if path.is_ident("capi_only")
                && let Ok(Policy::MirrorIfOwnerMirrored(owner)) = policy(&pair.value)
            {
                salvaged.owner.get_or_insert(owner);
            }
        }
        salvaged
    }
}

/// A value as parsed: the value, or an error spanned on its tokens.
pub(crate) type Value<T> = syn::Result<T>;

fn error(tokens: impl ToTokens, message: impl std::fmt::Display) -> syn::Error {
    syn::Error::new_spanned(tokens, message)
}

/// Unwraps the invisible groups a `macro_rules!` caller may leave around a value.
fn ungroup(expr: &Expr) -> &Expr {
    match expr {
        Expr::Group(group) => ungroup(&group.expr),
        other => other,
    }
}

fn plain_path(expr: &Expr) -> Option<&Path> {
    match ungroup(expr) {
        Expr::Path(path) if path.qself.is_none() && path.attrs.is_empty() => Some(&path.path),
        _ => None,
    }
}

fn string_literal(expr: &Expr) -> Option<&LitStr> {
    match ungroup(expr) {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Some(lit),
        _ => None,
    }
}

/// A type path such as `mapi::Machine`, written without quotes.
#[derive(Debug)]
pub(crate) struct TypePath(pub Value<Path>);

impl FromMeta for TypePath {
    fn from_expr(expr: &Expr) -> Result<Self> {
        Ok(Self(type_path(expr)))
    }
}

fn type_path(expr: &Expr) -> Value<Path> {
    if let Some(path) = plain_path(expr) {
        return Ok(path.clone());
    }
    Err(match string_literal(expr) {
        Some(lit) => error(
            lit,
            format!(
                "expected a type path, found a string literal; write it without quotes: `{}`",
                lit.value()
            ),
        ),
        None => error(expr, "expected a type path such as `mapi::Machine`"),
    })
}

/// A dotted field path on the CAPI type, such as `spec.infrastructure_ref`.
#[derive(Debug)]
pub(crate) struct FieldPath(pub Value<Vec<Member>>);

impl FromMeta for FieldPath {
    fn from_expr(expr: &Expr) -> Result<Self> {
        let mut members = Vec::new();
        Ok(Self(push_members(expr, &mut members).map(|()| members)))
    }
}

fn push_members(expr: &Expr, members: &mut Vec<Member>) -> Value<()> {
    match ungroup(expr) {
        Expr::Field(field) if field.attrs.is_empty() => {
            push_members(&field.base, members)?;
            members.push(field.member.clone());
            return Ok(());
        }
        Expr::Path(_) => {}
        _ => {
            return Err(match string_literal(expr) {
                Some(lit) => error(
                    lit,
                    format!(
                        "expected a field path, found a string literal; write it without quotes: `{}`",
                        lit.value()
                    ),
                ),
                None => error(
                    expr,
                    "expected a field path such as `spec.infrastructure_ref` (field names joined by `.`)",
                ),
            });
        }
    }
    match plain_path(expr).and_then(Path::get_ident) {
        Some(ident) => {
            members.push(Member::Named(ident.clone()));
            Ok(())
        }
        None => Err(error(
            expr,
            "expected a field path such as `spec.infrastructure_ref`; \
             a field path starts with a field name, not a type path",
        )),
    }
}

/// The CAPI-only policy, as written.
#[derive(Debug)]
pub(crate) struct CapiOnly(pub Value<Policy>);

/// The CAPI-only policies.
#[derive(Debug)]
pub(crate) enum Policy {
    /// `ignore`.
    Ignore,
    /// `mirror_if_owner_mirrored(<MAPI owner type>)`.
    MirrorIfOwnerMirrored(Path),
}

const IGNORE: &str = "ignore";
const MIRROR: &str = "mirror_if_owner_mirrored";
const EXPECTED_POLICY: &str = "expected `ignore` or `mirror_if_owner_mirrored(<MAPI owner type>)`";
const NEEDS_OWNER: &str = "`mirror_if_owner_mirrored` needs the MAPI type that mirrors the owner: \
                           `mirror_if_owner_mirrored(mapi::MachineSet)`";

impl FromMeta for CapiOnly {
    fn from_expr(expr: &Expr) -> Result<Self> {
        Ok(Self(policy(expr)))
    }
}

fn policy(expr: &Expr) -> Value<Policy> {
    if let Some(path) = plain_path(expr) {
        return match path.get_ident() {
            Some(ident) if ident == IGNORE => Ok(Policy::Ignore),
            Some(ident) if ident == MIRROR => Err(error(ident, NEEDS_OWNER)),
            _ => Err(unknown_policy(path)),
        };
    }
    let Expr::Call(call) = ungroup(expr) else {
        return Err(error(expr, EXPECTED_POLICY));
    };
    match plain_path(&call.func).map(|func| (func, func.get_ident())) {
        Some((_, Some(ident))) if ident == MIRROR => {}
        Some((_, Some(ident))) if ident == IGNORE => {
            return Err(error(call, "`ignore` takes no arguments"));
        }
        Some((func, _)) => return Err(unknown_policy(func)),
        None => return Err(error(&call.func, EXPECTED_POLICY)),
    }
    let mut args = call.args.iter();
    match (args.next(), args.next()) {
        (Some(owner), None) => type_path(owner).map(Policy::MirrorIfOwnerMirrored),
        (None, _) => Err(error(call, NEEDS_OWNER)),
        (Some(_), Some(_)) => Err(error(
            call.args
                .iter()
                .skip(1)
                .fold(TokenStream::new(), |mut extra, arg| {
                    arg.to_tokens(&mut extra);
                    extra
                }),
            "`mirror_if_owner_mirrored` takes one type, the MAPI owner mirror",
        )),
    }
}

fn unknown_policy(path: &Path) -> syn::Error {
    let written = path.to_token_stream().to_string().replace(' ', "");
    error(
        path,
        format!("unknown CAPI-only policy `{written}`; {EXPECTED_POLICY}"),
    )
}

/// `name = "..."`: a string literal.
#[derive(Debug)]
pub(crate) struct Name(pub Value<LitStr>);

impl FromMeta for Name {
    fn from_expr(expr: &Expr) -> Result<Self> {
        Ok(Self(string_literal(expr).cloned().ok_or_else(|| {
            error(
                expr,
                "expected a string literal such as `name = \"machine-sync\"`",
            )
        })))
    }
}

/// The `custom_hooks` flag: a bare word, remembered by its span.
#[derive(Debug)]
pub(crate) struct CustomHooks(pub Value<Span>);

impl FromMeta for CustomHooks {
    fn from_meta(item: &Meta) -> Result<Self> {
        Ok(Self(match item {
            Meta::Path(path) => Ok(path.span()),
            other => Err(error(
                other,
                "`custom_hooks` is a flag: write `custom_hooks`, without a value",
            )),
        }))
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

    fn parse(tokens: TokenStream) -> Args {
        match Args::parse(tokens) {
            Ok(args) => args,
            Err(err) => panic!("{err}"),
        }
    }

    fn text(tokens: impl ToTokens) -> String {
        tokens.to_token_stream().to_string()
    }

    fn message<T: std::fmt::Debug>(value: Option<Value<T>>) -> String {
        match value {
            Some(Err(err)) => err.to_string(),
            other => panic!("not an error: {other:?}"),
        }
    }

    #[test]
    fn full_declaration() -> syn::Result<()> {
        let args = parse(quote!(
            mapi = mapi::Machine,
            capi = capi::Machine,
            infra_ref = spec.template.spec.infrastructure_ref,
            capi_only = mirror_if_owner_mirrored(mapi::MachineSet),
            name = "machines",
            custom_hooks,
        ));
        assert_eq!(
            args.mapi.map(|p| p.0.map(text)).transpose()?.as_deref(),
            Some("mapi :: Machine")
        );
        assert_eq!(
            args.capi.map(|p| p.0.map(text)).transpose()?.as_deref(),
            Some("capi :: Machine")
        );
        let members = args.infra_ref.map(|f| f.0).transpose()?;
        assert_eq!(members.map(|m| m.len()), Some(4));
        match args.capi_only.map(|c| c.0).transpose()? {
            Some(Policy::MirrorIfOwnerMirrored(owner)) => assert_eq!(text(owner), "mapi :: MachineSet"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            args.name.map(|n| n.0).transpose()?.map(|n| n.value()).as_deref(),
            Some("machines")
        );
        assert!(args.custom_hooks.map(|c| c.0).transpose()?.is_some());
        Ok(())
    }

    #[test]
    fn minimal_declaration() {
        let args = parse(quote!(mapi = A, capi = B));
        assert!(args.infra_ref.is_none());
        assert!(args.capi_only.is_none());
        assert!(args.name.is_none());
        assert!(args.custom_hooks.is_none());
    }

    #[test]
    fn keys_may_be_missing_for_the_model_to_report() {
        let args = parse(quote!());
        assert!(args.mapi.is_none() && args.capi.is_none());
    }

    #[test]
    fn ignore_policy() {
        let args = parse(quote!(mapi = A, capi = B, capi_only = ignore));
        assert!(matches!(args.capi_only, Some(CapiOnly(Ok(Policy::Ignore)))));
    }

    #[test]
    fn key_errors_come_from_darling() {
        let err = match Args::parse(quote!(mapi = A, infra_rf = x, mapi = B)) {
            Ok(args) => panic!("{args:?}"),
            Err(err) => err.to_string(),
        };
        assert!(err.contains("Did you mean `infra_ref`?"), "{err}");
        assert!(err.contains("Duplicate field `mapi`"), "{err}");
    }

    #[test]
    fn type_path_shapes() {
        let args = parse(quote!(mapi = "mapi::Machine", capi = B::default()));
        assert!(message(args.mapi.map(|p| p.0)).contains("write it without quotes: `mapi::Machine`"));
        assert!(message(args.capi.map(|p| p.0)).contains("expected a type path"));
    }

    #[test]
    fn field_path_shapes() {
        for (value, expected) in [
            (quote!(spec.r()), "field names joined by `.`"),
            (quote!(a::b.c), "not a type path"),
            (quote!("spec.r"), "without quotes"),
        ] {
            let args = parse(quote!(infra_ref = #value));
            let msg = message(args.infra_ref.map(|f| f.0));
            assert!(msg.contains(expected), "{value}: {msg}");
        }
    }

    #[test]
    fn policy_shapes() {
        for (value, expected) in [
            (quote!(always), "unknown CAPI-only policy `always`"),
            (quote!(mirror_if_owner_mirrored), "needs the MAPI type"),
            (quote!(mirror_if_owner_mirrored()), "needs the MAPI type"),
            (quote!(mirror_if_owner_mirrored(A, B)), "takes one type"),
            (quote!(ignore(A)), "takes no arguments"),
            (quote!(sometimes(A)), "unknown CAPI-only policy `sometimes`"),
            (quote!("ignore"), "expected `ignore` or"),
        ] {
            let args = parse(quote!(capi_only = #value));
            let msg = message(args.capi_only.map(|c| c.0));
            assert!(msg.contains(expected), "{value}: {msg}");
        }
    }

    #[test]
    fn name_must_be_a_string() {
        let args = parse(quote!(name = machines));
        assert!(message(args.name.map(|n| n.0)).contains("string literal"));
    }

    #[test]
    fn custom_hooks_is_a_flag() {
        let args = parse(quote!(custom_hooks = true));
        assert!(message(args.custom_hooks.map(|c| c.0)).contains("is a flag"));
    }
}

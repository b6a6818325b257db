//! Stage 1: parse the attribute's arguments into [`Args`], syntax only.
//!
//! darling derives the key handling (required keys, duplicates, unknown keys with a
//! "did you mean" suggestion); the value types below say what each value may look like and
//! put every error on the value's own tokens.

use darling::ast::NestedMeta;
use darling::util::Flag;
use darling::{Error, FromMeta, Result};
use proc_macro2::TokenStream;
use syn::{Expr, ExprLit, Lit, LitStr, Member, Path};

/// `#[sync_controller(...)]`'s arguments, as written.
#[derive(Debug, FromMeta)]
pub(crate) struct Args {
    /// `mapi = <type path>`: the Machine API kind.
    pub mapi: TypePath,
    /// `capi = <type path>`: the Cluster API kind.
    pub capi: TypePath,
    /// `infra_ref = <field path>`: where the CAPI kind keeps its infrastructure reference.
    pub infra_ref: Option<FieldPath>,
    /// `capi_only = ignore | mirror_if_owner_mirrored(<type path>)`.
    pub capi_only: Option<CapiOnly>,
    /// `name = "<name>"`: the name in logs, metrics and events.
    pub name: Option<Name>,
    /// `custom_hooks`: the user implements `SyncHooks` themselves.
    pub custom_hooks: Flag,
}

impl Args {
    /// Parses the tokens inside `#[sync_controller(...)]`.
    pub(crate) fn parse(args: TokenStream) -> Result<Self> {
        let items = NestedMeta::parse_meta_list(args)?;
        Self::from_list(&items)
    }
}

/// A type path such as `mapi::Machine`, written without quotes.
#[derive(Debug)]
pub(crate) struct TypePath(pub Path);

impl FromMeta for TypePath {
    fn from_expr(expr: &Expr) -> Result<Self> {
        match expr {
            Expr::Path(path) if path.qself.is_none() && path.attrs.is_empty() => Ok(Self(path.path.clone())),
            Expr::Group(group) => Self::from_expr(&group.expr),
            Expr::Lit(ExprLit {
                lit: Lit::Str(lit), ..
            }) => Err(Error::custom(format!(
                "expected a type path, found a string literal; write it without quotes: `{}`",
                lit.value()
            ))
            .with_span(lit)),
            _ => Err(Error::custom("expected a type path such as `mapi::Machine`").with_span(expr)),
        }
    }
}

/// A dotted field path on the CAPI type, such as `spec.infrastructure_ref`.
#[derive(Debug)]
pub(crate) struct FieldPath(pub Vec<Member>);

impl FromMeta for FieldPath {
    fn from_expr(expr: &Expr) -> Result<Self> {
        let mut members = Vec::new();
        push_members(expr, &mut members)?;
        Ok(Self(members))
    }
}

fn push_members(expr: &Expr, members: &mut Vec<Member>) -> Result<()> {
    match expr {
        Expr::Field(field) if field.attrs.is_empty() => {
            push_members(&field.base, members)?;
            members.push(field.member.clone());
            Ok(())
        }
        Expr::Path(path) if path.qself.is_none() && path.attrs.is_empty() => match path.path.get_ident() {
            Some(ident) => {
                members.push(Member::Named(ident.clone()));
                Ok(())
            }
            None => Err(Error::custom(
                "expected a field path such as `spec.infrastructure_ref`; \
                     a field path starts with a field name, not a type path",
            )
            .with_span(&path.path)),
        },
        Expr::Group(group) => push_members(&group.expr, members),
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Err(Error::custom(format!(
            "expected a field path, found a string literal; write it without quotes: `{}`",
            lit.value()
        ))
        .with_span(lit)),
        _ => Err(Error::custom(
            "expected a field path such as `spec.infrastructure_ref` (field names joined by `.`)",
        )
        .with_span(expr)),
    }
}

/// The CAPI-only policy, as written.
#[derive(Debug)]
pub(crate) enum CapiOnly {
    /// `ignore`.
    Ignore,
    /// `mirror_if_owner_mirrored(<MAPI owner type>)`.
    MirrorIfOwnerMirrored(Path),
}

const IGNORE: &str = "ignore";
const MIRROR: &str = "mirror_if_owner_mirrored";
const EXPECTED_POLICY: &str = "expected `ignore` or `mirror_if_owner_mirrored(<MAPI owner type>)`";

impl FromMeta for CapiOnly {
    fn from_expr(expr: &Expr) -> Result<Self> {
        match expr {
            Expr::Path(path) if path.qself.is_none() && path.attrs.is_empty() => {
                match path.path.get_ident() {
                    Some(ident) if ident == IGNORE => Ok(Self::Ignore),
                    Some(ident) if ident == MIRROR => Err(Error::custom(
                        "`mirror_if_owner_mirrored` needs the MAPI type that mirrors the owner: \
                         `mirror_if_owner_mirrored(mapi::MachineSet)`",
                    )
                    .with_span(ident)),
                    _ => Err(unknown_policy(&path.path)),
                }
            }
            Expr::Call(call) if call.attrs.is_empty() => {
                let Expr::Path(func) = &*call.func else {
                    return Err(Error::custom(EXPECTED_POLICY).with_span(&call.func));
                };
                match func.path.get_ident() {
                    Some(ident) if ident == MIRROR => {}
                    Some(ident) if ident == IGNORE => {
                        return Err(Error::custom("`ignore` takes no arguments").with_span(call));
                    }
                    _ => return Err(unknown_policy(&func.path)),
                }
                let mut args = call.args.iter();
                match (args.next(), args.next()) {
                    (Some(owner), None) => {
                        TypePath::from_expr(owner).map(|TypePath(path)| Self::MirrorIfOwnerMirrored(path))
                    }
                    (None, _) => Err(Error::custom(
                        "`mirror_if_owner_mirrored` needs the MAPI type that mirrors the owner: \
                         `mirror_if_owner_mirrored(mapi::MachineSet)`",
                    )
                    .with_span(call)),
                    (Some(_), Some(extra)) => Err(Error::custom(
                        "`mirror_if_owner_mirrored` takes exactly one type, the MAPI owner mirror",
                    )
                    .with_span(extra)),
                }
            }
            Expr::Group(group) => Self::from_expr(&group.expr),
            _ => Err(Error::custom(EXPECTED_POLICY).with_span(expr)),
        }
    }
}

fn unknown_policy(path: &Path) -> Error {
    let written = quote::quote!(#path).to_string().replace(' ', "");
    Error::custom(format!("unknown CAPI-only policy `{written}`; {EXPECTED_POLICY}")).with_span(path)
}

/// `name = "..."`: a string literal.
#[derive(Debug)]
pub(crate) struct Name(pub LitStr);

impl FromMeta for Name {
    fn from_expr(expr: &Expr) -> Result<Self> {
        match expr {
            Expr::Lit(ExprLit {
                lit: Lit::Str(lit), ..
            }) => Ok(Self(lit.clone())),
            Expr::Group(group) => Self::from_expr(&group.expr),
            _ => Err(
                Error::custom("expected a string literal such as `name = \"machine-sync\"`").with_span(expr),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

    fn parse(tokens: TokenStream) -> Result<Args> {
        Args::parse(tokens)
    }

    fn message(tokens: TokenStream) -> String {
        match parse(tokens) {
            Ok(args) => panic!("parsed: {args:?}"),
            Err(err) => err.to_string(),
        }
    }

    #[test]
    fn full_declaration() -> Result<()> {
        let args = parse(quote!(
            mapi = mapi::Machine,
            capi = capi::Machine,
            infra_ref = spec.template.spec.infrastructure_ref,
            capi_only = mirror_if_owner_mirrored(mapi::MachineSet),
            name = "machines",
            custom_hooks,
        ))?;
        let path = |p: &Path| quote!(#p).to_string();
        assert_eq!(path(&args.mapi.0), "mapi :: Machine");
        assert_eq!(path(&args.capi.0), "capi :: Machine");
        let members = args.infra_ref.map(|f| f.0.len());
        assert_eq!(members, Some(4));
        assert!(matches!(
            args.capi_only,
            Some(CapiOnly::MirrorIfOwnerMirrored(ref p)) if path(p) == "mapi :: MachineSet"
        ));
        assert_eq!(args.name.map(|n| n.0.value()).as_deref(), Some("machines"));
        assert!(args.custom_hooks.is_present());
        Ok(())
    }

    #[test]
    fn minimal_declaration() -> Result<()> {
        let args = parse(quote!(mapi = A, capi = B))?;
        assert!(args.infra_ref.is_none());
        assert!(args.capi_only.is_none());
        assert!(args.name.is_none());
        assert!(!args.custom_hooks.is_present());
        Ok(())
    }

    #[test]
    fn ignore_policy() -> Result<()> {
        let args = parse(quote!(mapi = A, capi = B, capi_only = ignore))?;
        assert!(matches!(args.capi_only, Some(CapiOnly::Ignore)));
        Ok(())
    }

    #[test]
    fn errors_are_accumulated() {
        let msg = message(quote!(mapi = "A", infra_rf = x, capi_only = always));
        assert!(msg.contains("string literal"), "{msg}");
        assert!(msg.contains("Missing field `capi`"), "{msg}");
        assert!(msg.contains("Did you mean `infra_ref`?"), "{msg}");
        assert!(msg.contains("unknown CAPI-only policy `always`"), "{msg}");
    }

    #[test]
    fn field_path_shapes() {
        assert!(message(quote!(mapi = A, capi = B, infra_ref = spec.r())).contains("field path"));
        assert!(message(quote!(mapi = A, capi = B, infra_ref = a::b.c)).contains("not a type path"));
        assert!(message(quote!(mapi = A, capi = B, infra_ref = "spec.r")).contains("without quotes"));
    }

    #[test]
    fn policy_shapes() {
        let msg = message(quote!(mapi = A, capi = B, capi_only = mirror_if_owner_mirrored));
        assert!(msg.contains("needs the MAPI type"), "{msg}");
        let msg = message(quote!(mapi = A, capi = B, capi_only = mirror_if_owner_mirrored()));
        assert!(msg.contains("needs the MAPI type"), "{msg}");
        let msg = message(quote!(
            mapi = A,
            capi = B,
            capi_only = mirror_if_owner_mirrored(A, B)
        ));
        assert!(msg.contains("exactly one type"), "{msg}");
        let msg = message(quote!(mapi = A, capi = B, capi_only = ignore(A)));
        assert!(msg.contains("takes no arguments"), "{msg}");
    }

    #[test]
    fn name_must_be_a_string() {
        assert!(message(quote!(mapi = A, capi = B, name = machines)).contains("string literal"));
    }
}

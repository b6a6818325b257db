//! Stage 2: check the parsed arguments and the annotated item, and build the [`Pair`]
//! that code generation reads. Every error is collected, so one compile shows them all.

use darling::{Error, Result};
use proc_macro2::Span;
use quote::quote;
use syn::{Fields, Ident, Item, ItemStruct, Member, Path};

use crate::attrs::{self, Args};

/// A validated `#[sync_controller]` declaration.
#[derive(Debug)]
pub(crate) struct Pair {
    /// The annotated struct's name.
    pub ident: Ident,
    /// The Machine API kind.
    pub mapi: Path,
    /// The Cluster API kind.
    pub capi: Path,
    /// The field path of the infrastructure reference on the CAPI kind.
    pub infra_ref: Option<Vec<Member>>,
    /// The CAPI-only policy.
    pub capi_only: CapiOnly,
    /// The name for logs, metrics and events.
    pub name: String,
    /// Who implements `SyncHooks`.
    pub hooks: Hooks,
}

/// The CAPI-only policy.
#[derive(Debug)]
pub(crate) enum CapiOnly {
    /// Ignore CAPI objects without a MAPI mirror.
    Ignore,
    /// Mirror them when their CAPI owner's MAPI mirror (of this type) exists.
    MirrorIfOwnerMirrored(Path),
}

/// Who implements `SyncHooks` for the pair.
#[derive(Debug)]
pub(crate) enum Hooks {
    /// The macro emits the stub impl (the trait's defaults).
    Stubs,
    /// The user does; the span is the `custom_hooks` flag's.
    Custom(Span),
}

const EXPECTED_ITEM: &str = "#[sync_controller] goes on a unit struct or a struct with named fields, such as `pub struct MachineSync;`";

impl Pair {
    /// Validates the parsed arguments (or their parse errors) against the annotated item.
    pub(crate) fn new(args: Result<Args>, item: &Item) -> Result<Self> {
        let mut errors = Error::accumulator();
        let ident = errors.handle(check_item(item));
        let args = errors.handle(args);
        let name = match args.as_ref().and_then(|args| args.name.as_ref()) {
            Some(attrs::Name(lit)) => errors.handle(check_name(&lit.value()).map_err(|e| e.with_span(lit))),
            None => ident.as_ref().map(|ident| kebab_case(&ident.to_string())),
        };
        let (Some(ident), Some(args), Some(name)) = (ident, args, name) else {
            // Something above failed and was recorded: `finish` returns it.
            return Err(errors
                .finish()
                .err()
                .unwrap_or_else(|| Error::custom(EXPECTED_ITEM)));
        };
        errors.finish_with(Self {
            ident,
            mapi: args.mapi.0,
            capi: args.capi.0,
            infra_ref: args.infra_ref.map(|path| path.0),
            capi_only: match args.capi_only {
                None | Some(attrs::CapiOnly::Ignore) => CapiOnly::Ignore,
                Some(attrs::CapiOnly::MirrorIfOwnerMirrored(owner)) => CapiOnly::MirrorIfOwnerMirrored(owner),
            },
            name,
            hooks: if args.custom_hooks.is_present() {
                Hooks::Custom(args.custom_hooks.span())
            } else {
                Hooks::Stubs
            },
        })
    }
}

/// The item must be a non-generic unit struct or struct with named fields.
fn check_item(item: &Item) -> Result<Ident> {
    let ItemStruct {
        ident,
        generics,
        fields,
        ..
    } = match item {
        Item::Struct(item) => item,
        Item::Enum(item) => {
            let (token, ident) = (&item.enum_token, &item.ident);
            return Err(not_a_struct("an enum").with_span(&quote!(#token #ident)));
        }
        Item::Union(item) => {
            let (token, ident) = (&item.union_token, &item.ident);
            return Err(not_a_struct("a union").with_span(&quote!(#token #ident)));
        }
        Item::Fn(item) => {
            let sig = &item.sig;
            let (token, ident) = (&sig.fn_token, &sig.ident);
            return Err(not_a_struct("a function").with_span(&quote!(#token #ident)));
        }
        other => return Err(Error::custom(EXPECTED_ITEM).with_span(other)),
    };
    let mut errors = Error::accumulator();
    if let Fields::Unnamed(fields) = fields {
        errors.push(
            Error::custom(format!(
                "{EXPECTED_ITEM}, not a tuple struct; name the fields or make it `struct {ident};`"
            ))
            .with_span(fields),
        );
    }
    if !generics.params.is_empty() || generics.where_clause.is_some() {
        errors.push(
            Error::custom(
                "#[sync_controller] declares one concrete pair: the struct cannot have generic \
                 parameters or a where clause",
            )
            .with_span(generics),
        );
    }
    errors.finish_with(ident.clone())
}

fn not_a_struct(what: &str) -> Error {
    Error::custom(format!("{EXPECTED_ITEM}, not {what}"))
}

/// A name must read well in logs, metric labels and Event sources: lowercase ASCII words
/// joined by `-`.
fn check_name(name: &str) -> Result<String> {
    let words_ok = name
        .split('-')
        .all(|word| !word.is_empty() && word.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
    if words_ok && name.starts_with(|c: char| c.is_ascii_lowercase()) {
        Ok(name.to_owned())
    } else {
        Err(Error::custom(format!(
            "invalid name {name:?}: use lowercase letters, digits and single `-` between words, \
             starting with a letter, such as \"machine-sync\""
        )))
    }
}

/// `MachineSetSync` → `machine-set-sync`, `AWSMachineSync` → `aws-machine-sync`.
pub(crate) fn kebab_case(ident: &str) -> String {
    let ident = ident.strip_prefix("r#").unwrap_or(ident);
    let chars: Vec<char> = ident.chars().collect();
    let mut out = String::with_capacity(ident.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c == '_' {
            if !out.is_empty() && !out.ends_with('-') {
                out.push('-');
            }
            continue;
        }
        if c.is_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let boundary =
                prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower);
            if boundary && !out.ends_with('-') {
                out.push('-');
            }
        }
        out.extend(c.to_lowercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use quote::quote;
    use syn::parse_quote;

    use super::*;

    fn pair(args: proc_macro2::TokenStream, item: Item) -> Result<Pair> {
        Pair::new(Args::parse(args), &item)
    }

    #[test]
    fn kebab_case_of_struct_names() {
        assert_eq!(kebab_case("MachineSync"), "machine-sync");
        assert_eq!(kebab_case("MachineSetSync"), "machine-set-sync");
        assert_eq!(kebab_case("AWSMachineSync"), "aws-machine-sync");
        assert_eq!(kebab_case("V1Beta2Sync"), "v1-beta2-sync");
        assert_eq!(kebab_case("Widget"), "widget");
        assert_eq!(kebab_case("widget_sync"), "widget-sync");
    }

    #[test]
    fn names() {
        assert!(check_name("machine-sync").is_ok());
        assert!(check_name("m2").is_ok());
        for bad in ["", "Machine", "machine_sync", "-m", "m-", "m--s", "2m", "m s"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn defaults() -> Result<()> {
        let pair = pair(
            quote!(mapi = A, capi = B),
            parse_quote!(
                pub struct WidgetSync;
            ),
        )?;
        assert_eq!(pair.name, "widget-sync");
        assert!(matches!(pair.capi_only, CapiOnly::Ignore));
        assert!(matches!(pair.hooks, Hooks::Stubs));
        assert!(pair.infra_ref.is_none());
        Ok(())
    }

    #[test]
    fn named_fields_are_fine() -> Result<()> {
        let item = parse_quote!(
            struct S {
                retries: u32,
            }
        );
        pair(quote!(mapi = A, capi = B, name = "s"), item).map(|_| ())
    }

    #[test]
    fn item_and_argument_errors_are_reported_together() {
        let item = parse_quote!(
            struct S<T>(T);
        );
        let Err(err) = pair(quote!(capi = B, name = "Bad"), item) else {
            panic!("accepted");
        };
        let msg = err.to_string();
        assert!(msg.contains("tuple struct"), "{msg}");
        assert!(msg.contains("generic"), "{msg}");
        assert!(msg.contains("Missing field `mapi`"), "{msg}");
    }

    #[test]
    fn invalid_name_is_reported_with_other_errors() {
        let Err(err) = pair(
            quote!(mapi = A, capi = B, name = "Bad"),
            parse_quote!(
                struct S;
            ),
        ) else {
            panic!("accepted");
        };
        assert!(err.to_string().contains("invalid name \"Bad\""));
    }

    #[test]
    fn not_a_struct() {
        for item in [
            parse_quote!(
                enum E {
                    A,
                }
            ),
            parse_quote!(union U { a: u32 }),
            parse_quote!(
                fn f() {}
            ),
            parse_quote!(
                mod m {}
            ),
        ] {
            assert!(pair(quote!(mapi = A, capi = B), item).is_err());
        }
    }
}

//! Stage 2: check the parsed arguments and the annotated item, and build the [`Pair`]
//! that code generation reads. Every error is collected, so one compile shows them all.

use proc_macro2::Span;
use quote::{ToTokens, quote};
use syn::{Fields, Ident, Item, ItemStruct, Member, Path};

use crate::attrs::{self, Args, Policy, Value};

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
    /// The macro emits `impl DeclaredWithoutCustomHooks`: the stubs (the trait's defaults).
    Stubs,
    /// The user does; the span is the `custom_hooks` flag's.
    Custom(Span),
}

const EXPECTED_ITEM: &str = "#[sync_controller] goes on a unit struct or a struct with named fields, such as `pub struct MachineSync;`";

/// The errors found so far, combined into one `syn::Error` that reports each at its span.
#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(errors) => errors.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// The value, or `None` with its error recorded.
    fn take<T>(&mut self, value: Value<T>) -> Option<T> {
        value.map_err(|error| self.push(error)).ok()
    }

    /// An optional value: `Some(None)` when absent, `None` when malformed.
    fn take_opt<T>(&mut self, value: Option<Value<T>>) -> Option<Option<T>> {
        match value {
            None => Some(None),
            Some(value) => self.take(value).map(Some),
        }
    }
}

/// A declaration with errors: the errors, and what the fallback expansion may still use.
pub(crate) struct Invalid {
    /// Every error found, each at its span.
    pub errors: syn::Error,
    /// The parts that are well formed (boxed: an error path, and paths are large).
    pub fallback: Box<Fallback>,
}

/// The well-formed parts of an invalid declaration, for the placeholder impls that keep
/// the pair's uses from failing too.
#[derive(Debug, Default)]
pub(crate) struct Fallback {
    /// The struct's name, when the item is a non-generic struct.
    pub ident: Option<Ident>,
    /// The Machine API kind, if given and well formed.
    pub mapi: Option<Path>,
    /// The Cluster API kind, if given and well formed.
    pub capi: Option<Path>,
    /// The owner-mirror kind, if given and well formed.
    pub owner: Option<Path>,
    /// The user implements the hooks (`custom_hooks` appears, well formed or not).
    pub custom_hooks: bool,
}

impl Pair {
    /// Validates the parsed arguments (or darling's key errors) against the annotated item.
    /// `salvaged` is what the fallback may use when darling rejected the arguments.
    pub(crate) fn new(
        args: darling::Result<Args>,
        salvaged: impl FnOnce() -> attrs::Salvaged,
        item: &Item,
    ) -> Result<Self, Invalid> {
        let mut errors = Errors::default();
        let ident = errors.take(check_item(item));
        let mut fallback = Fallback {
            ident: ident.clone().filter(|_| is_plain_struct(item)),
            ..Fallback::default()
        };
        let pair = match args {
            Ok(args) => errors.pair(args, ident, &mut fallback),
            Err(error) => {
                errors.push(error.into());
                let attrs::Salvaged {
                    mapi,
                    capi,
                    owner,
                    custom_hooks,
                } = salvaged();
                fallback = Fallback {
                    mapi,
                    capi,
                    owner,
                    custom_hooks,
                    ..fallback
                };
                None
            }
        };
        match (pair, errors.0) {
            (Some(pair), None) => Ok(pair),
            (_, Some(errors)) => Err(Invalid {
                errors,
                fallback: Box::new(fallback),
            }),
            (None, None) => Err(Invalid {
                errors: syn::Error::new(Span::call_site(), EXPECTED_ITEM),
                fallback: Box::new(fallback),
            }),
        }
    }
}

/// A struct the fallback impls can name as is: not generic.
fn is_plain_struct(item: &Item) -> bool {
    matches!(item, Item::Struct(item) if item.generics.params.is_empty() && item.generics.where_clause.is_none())
}

impl Errors {
    /// Checks every argument, recording each problem; the pair when all are fine.
    fn pair(&mut self, args: Args, ident: Option<Ident>, fallback: &mut Fallback) -> Option<Pair> {
        fallback.custom_hooks = args.custom_hooks.is_some();
        let mapi = self.required(
            args.mapi,
            "mapi",
            "the Machine API kind, such as `mapi = mapi::Machine`",
        );
        let capi = self.required(
            args.capi,
            "capi",
            "the Cluster API kind, such as `capi = capi::Machine`",
        );
        fallback.mapi.clone_from(&mapi);
        fallback.capi.clone_from(&capi);
        let infra_ref = self.take_opt(args.infra_ref.map(|path| path.0));
        let capi_only = self.take_opt(args.capi_only.map(|policy| policy.0));
        if let Some(Some(Policy::MirrorIfOwnerMirrored(owner))) = &capi_only {
            fallback.owner = Some(owner.clone());
        }
        let name = match self.take_opt(args.name.map(|name| name.0)) {
            Some(Some(lit)) => self.take(check_name(&lit)),
            Some(None) => ident.as_ref().map(|ident| kebab_case(&ident.to_string())),
            None => None,
        };
        let hooks = self.take_opt(args.custom_hooks.map(|flag| flag.0));
        Some(Pair {
            ident: ident?,
            mapi: mapi?,
            capi: capi?,
            infra_ref: infra_ref?,
            capi_only: match capi_only? {
                None | Some(Policy::Ignore) => CapiOnly::Ignore,
                Some(Policy::MirrorIfOwnerMirrored(owner)) => CapiOnly::MirrorIfOwnerMirrored(owner),
            },
            name: name?,
            hooks: hooks?.map_or(Hooks::Stubs, Hooks::Custom),
        })
    }

    fn required(&mut self, value: Option<attrs::TypePath>, key: &str, what: &str) -> Option<Path> {
        match value {
            Some(path) => self.take(path.0),
            None => {
                self.push(syn::Error::new(
                    Span::call_site(),
                    format!("missing `{key} = <type path>`: {what}"),
                ));
                None
            }
        }
    }
}

/// The item must be a non-generic unit struct or struct with named fields.
fn check_item(item: &Item) -> Value<Ident> {
    let not_a = |what: &str, keyword: &dyn ToTokens, ident: &Ident| {
        Err(syn::Error::new_spanned(
            quote!(#keyword #ident),
            format!("{EXPECTED_ITEM}, not {what}"),
        ))
    };
    let ItemStruct {
        ident,
        generics,
        fields,
        ..
    } = match item {
        Item::Struct(item) => item,
        Item::Enum(item) => return not_a("an enum", &item.enum_token, &item.ident),
        Item::Union(item) => return not_a("a union", &item.union_token, &item.ident),
        Item::Fn(item) => return not_a("a function", &item.sig.fn_token, &item.sig.ident),
        other => return Err(syn::Error::new_spanned(other, EXPECTED_ITEM)),
    };
    let mut errors = Errors::default();
    if let Fields::Unnamed(fields) = fields {
        errors.push(syn::Error::new_spanned(
            fields,
            format!("{EXPECTED_ITEM}, not a tuple struct; name the fields or make it `struct {ident};`"),
        ));
    }
    if !generics.params.is_empty() || generics.where_clause.is_some() {
        errors.push(syn::Error::new_spanned(
            generics,
            "#[sync_controller] declares one concrete pair: the struct cannot have generic \
             parameters or a where clause",
        ));
    }
    match errors.0 {
        Some(errors) => Err(errors),
        None => Ok(ident.clone()),
    }
}

/// A name must read well in logs, metric labels and Event sources: lowercase ASCII words
/// joined by `-`.
fn check_name(lit: &syn::LitStr) -> Value<String> {
    let name = lit.value();
    let words_ok = name
        .split('-')
        .all(|word| !word.is_empty() && word.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
    if words_ok && name.starts_with(|c: char| c.is_ascii_lowercase()) {
        Ok(name)
    } else {
        Err(syn::Error::new_spanned(
            lit,
            format!(
                "invalid name {name:?}: use lowercase letters, digits and single `-` between words, \
             starting with a letter, such as \"machine-sync\""
            ),
        ))
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

    fn invalid(args: proc_macro2::TokenStream, item: Item) -> Result<Pair, Invalid> {
        let salvaged = attrs::Salvaged::from_tokens(args.clone());
        Pair::new(Args::parse(args), || salvaged, &item)
    }

    fn pair(args: proc_macro2::TokenStream, item: Item) -> syn::Result<Pair> {
        invalid(args, item).map_err(|invalid| invalid.errors)
    }

    fn errors(args: proc_macro2::TokenStream, item: Item) -> Vec<String> {
        match pair(args, item) {
            Ok(pair) => panic!("accepted: {pair:?}"),
            Err(err) => err.into_iter().map(|e| e.to_string()).collect(),
        }
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
        let check = |name: &str| check_name(&syn::LitStr::new(name, Span::call_site()));
        assert!(check("machine-sync").is_ok());
        assert!(check("m2").is_ok());
        for bad in ["", "Machine", "machine_sync", "-m", "m-", "m--s", "2m", "m s"] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn defaults() -> syn::Result<()> {
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
    fn named_fields_are_fine() -> syn::Result<()> {
        let item = parse_quote!(
            struct S {
                retries: u32,
            }
        );
        pair(quote!(mapi = A, capi = B, name = "s", custom_hooks), item).map(|_| ())
    }

    #[test]
    fn item_and_argument_errors_are_reported_together() {
        let errors = errors(
            quote!(capi = "B", name = "Bad", capi_only = always),
            parse_quote!(
                struct S<T>(T);
            ),
        );
        let expected = [
            "not a tuple struct",
            "cannot have generic parameters",
            "missing `mapi = <type path>`",
            "found a string literal",
            "unknown CAPI-only policy `always`",
            "invalid name \"Bad\"",
        ];
        assert_eq!(errors.len(), expected.len(), "{errors:#?}");
        for (error, expected) in errors.iter().zip(expected) {
            assert!(error.contains(expected), "{error} should contain {expected}");
        }
    }

    #[test]
    fn darling_key_errors_are_reported_with_item_errors() {
        let errors = errors(
            quote!(mapi = A, capi = B, mapi = C),
            parse_quote!(
                enum E {}
            ),
        );
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert!(errors[0].contains("not an enum"));
        assert!(errors[1].contains("Duplicate field `mapi`"));
    }

    #[test]
    fn an_invalid_declaration_keeps_its_well_formed_parts_for_the_fallback() {
        let item: Item = parse_quote!(
            pub struct S;
        );
        let fallback = |args| match invalid(args, item.clone()) {
            Ok(pair) => panic!("accepted: {pair:?}"),
            Err(invalid) => invalid.fallback,
        };
        let text = |path: Option<Path>| path.map(|p| p.to_token_stream().to_string());
        let shape = fallback(quote!(
            mapi = m::A,
            capi = "B",
            capi_only = mirror_if_owner_mirrored(m::O),
            name = "Bad"
        ));
        assert_eq!(shape.ident.map(|i| i.to_string()).as_deref(), Some("S"));
        assert_eq!(text(shape.mapi).as_deref(), Some("m :: A"));
        assert_eq!(shape.capi, None);
        assert_eq!(text(shape.owner).as_deref(), Some("m :: O"));
        assert!(!shape.custom_hooks);
        // darling rejected the keys: the parts are salvaged from the tokens.
        let keys = fallback(quote!(
            mapi = m::A,
            capi = m::B,
            mapi = m::C,
            infra_rf = x,
            custom_hooks
        ));
        assert_eq!(text(keys.mapi).as_deref(), Some("m :: A"));
        assert_eq!(text(keys.capi).as_deref(), Some("m :: B"));
        assert!(keys.custom_hooks);
        // A generic struct cannot be named by the fallback impls.
        let generic = match invalid(
            quote!(mapi = A, capi = B),
            parse_quote!(
                struct G<T>(T);
            ),
        ) {
            Ok(pair) => panic!("accepted: {pair:?}"),
            Err(invalid) => invalid.fallback,
        };
        assert!(generic.ident.is_none());
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

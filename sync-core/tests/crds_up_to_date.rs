//! The committed `deploy/crds/*.yaml` must be exactly what the Rust types generate.

use std::path::Path;

#[test]
fn committed_crds_match_the_types() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds");
    for (file, crd) in sync_core::api::crds::all() {
        let path = dir.join(file);
        let committed =
            std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let generated = sync_core::api::crds::to_yaml(&crd).unwrap_or_else(|error| panic!("{file}: {error}"));
        assert!(
            committed == generated,
            "{} drifted from the Rust types; regenerate with `cargo run -p sync-core --bin gen-crds`",
            path.display()
        );
    }
}

#[test]
fn generated_crds_carry_the_authoritative_api_rules() {
    for (file, crd) in sync_core::api::crds::all()
        .into_iter()
        .filter(|(f, _)| f.starts_with("machine.openshift.io"))
    {
        let yaml = sync_core::api::crds::to_yaml(&crd).unwrap_or_default();
        assert!(
            yaml.contains("self == 'Migrating' || self == oldSelf || oldSelf == 'Migrating'"),
            "{file}"
        );
        assert!(
            yaml.contains("has(self.authoritativeAPI) || !has(oldSelf.authoritativeAPI)"),
            "{file}"
        );
    }
}

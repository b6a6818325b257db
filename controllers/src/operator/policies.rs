//! The project's admission policies (`deploy/admission-policies/`) as `kubectl kustomize`
//! renders them, for `--embedded` and the tests: the kustomization's resources in order,
//! each `PatchTransformer` it lists applied to the objects its target names (the
//! exemption list of `exempt-controllers.yaml`), and the Machine API and Cluster API
//! namespaces renamed to the operator's.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::samples::{SAMPLE_NAMESPACES, SampleError, read_documents};

/// The operator's user as the policies name it (its ServiceAccount in `deploy/operator/`).
pub const OPERATOR_USER: &str = "system:serviceaccount:openshift-machine-sync:machine-sync-controllers";
/// The Cluster API controllers' user, which the policies exempt: the simulated providers
/// run as it.
pub const PROVIDERS_USER: &str = "system:serviceaccount:openshift-cluster-api:capi-controllers";

/// The policies folder of `deploy`.
pub fn dir(deploy: &Path) -> PathBuf {
    deploy.join("admission-policies")
}

/// The rendered policies and bindings of `dir`, each with the file it came from.
pub fn render(
    dir: &Path,
    rename_namespace: &dyn Fn(&str) -> String,
) -> Result<Vec<(PathBuf, Value)>, SampleError> {
    let kustomization_path = dir.join("kustomization.yaml");
    let kustomization = read_documents(&kustomization_path)?
        .into_iter()
        .next()
        .unwrap_or_default();
    let files = |field: &str| -> Vec<PathBuf> {
        kustomization[field]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|file| dir.join(file))
            .collect()
    };
    let mut documents = Vec::new();
    for path in files("resources") {
        documents.extend(read_documents(&path)?.into_iter().map(|doc| (path.clone(), doc)));
    }
    for path in files("transformers") {
        for transformer in read_documents(&path)? {
            apply_transformer(&path, &transformer, &mut documents)?;
        }
    }
    for (_, doc) in &mut documents {
        rename(doc, rename_namespace);
    }
    Ok(documents)
}

/// Applies one `PatchTransformer` (a JSON 6902 patch, as text, and a target kind).
fn apply_transformer(
    path: &Path,
    transformer: &Value,
    documents: &mut [(PathBuf, Value)],
) -> Result<(), SampleError> {
    let error = |message: String| SampleError::File {
        path: path.to_path_buf(),
        message,
    };
    if transformer["kind"] != "PatchTransformer" {
        return Err(error(format!(
            "only PatchTransformer is supported, not {}",
            transformer["kind"]
        )));
    }
    let text = transformer["patch"].as_str().unwrap_or_default();
    let operations: json_patch::Patch =
        serde_saphyr::from_str(text).map_err(|e| error(format!("patch: {e}")))?;
    let target = &transformer["target"];
    let targeted = |doc: &Value| {
        let api_version = doc["apiVersion"].as_str().unwrap_or_default();
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        target["kind"].as_str().is_none_or(|k| doc["kind"] == k)
            && target["group"].as_str().is_none_or(|g| g == group)
    };
    for (file, doc) in documents.iter_mut().filter(|(_, doc)| targeted(doc)) {
        let name = doc["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        json_patch::patch(doc, &operations)
            .map_err(|e| error(format!("patching {name} of {}: {e}", file.display())))?;
    }
    Ok(())
}

/// Renames every string value that is exactly one of the sample namespaces (namespace
/// selectors, `paramRef.namespace`); expressions, which name ServiceAccounts of those
/// namespaces, are left alone.
fn rename(value: &mut Value, rename_namespace: &dyn Fn(&str) -> String) {
    match value {
        Value::String(text) if SAMPLE_NAMESPACES.contains(&text.as_str()) => *text = rename_namespace(text),
        Value::Array(items) => items.iter_mut().for_each(|item| rename(item, rename_namespace)),
        Value::Object(map) => map.values_mut().for_each(|item| rename(item, rename_namespace)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `kubectl kustomize deploy/admission-policies` prints, as JSON objects.
    fn kustomized(dir: &Path) -> Result<Vec<Value>, Box<dyn std::error::Error>> {
        let output = std::process::Command::new("kubectl")
            .arg("kustomize")
            .arg(dir)
            .output()?;
        if !output.status.success() {
            return Err(String::from_utf8_lossy(&output.stderr).into_owned().into());
        }
        Ok(serde_saphyr::from_multiple(&String::from_utf8(output.stdout)?)?)
    }

    #[test]
    fn the_policies_render_as_kubectl_kustomize_renders_them() -> Result<(), Box<dyn std::error::Error>> {
        let dir = dir(&super::super::samples::deploy_dir());
        let mut ours: Vec<Value> = render(&dir, &|n| n.to_owned())?
            .into_iter()
            .map(|(_, doc)| doc)
            .collect();
        let mut theirs = kustomized(&dir)?;
        let key = |v: &Value| (v["kind"].to_string(), v["metadata"]["name"].to_string());
        ours.sort_by_key(key);
        theirs.sort_by_key(key);
        assert_eq!(ours.len(), theirs.len());
        for (a, b) in ours.iter().zip(&theirs) {
            assert_eq!(a, b, "{} differs from kubectl kustomize's", a["metadata"]["name"]);
        }
        assert!(ours.iter().any(|d| d["kind"] == "ValidatingAdmissionPolicy"));
        Ok(())
    }

    #[test]
    fn every_policy_exempts_the_same_users_first() -> Result<(), Box<dyn std::error::Error>> {
        let dir = dir(&super::super::samples::deploy_dir());
        let policies: Vec<Value> = render(&dir, &|n| n.to_owned())?
            .into_iter()
            .map(|(_, doc)| doc)
            .filter(|d| d["kind"] == "ValidatingAdmissionPolicy")
            .collect();
        let first = &policies[0]["spec"]["matchConditions"][0];
        assert_eq!(first["name"], "exempt-controllers");
        assert!(
            first["expression"].as_str().is_some_and(
                |e| e.contains("system:serviceaccount:openshift-machine-sync:machine-sync-controllers")
            ),
            "{first}"
        );
        for policy in &policies {
            assert_eq!(
                &policy["spec"]["matchConditions"][0], first,
                "{}",
                policy["metadata"]["name"]
            );
        }
        Ok(())
    }

    #[test]
    fn the_namespaces_are_renamed_but_not_inside_expressions() -> Result<(), Box<dyn std::error::Error>> {
        let dir = dir(&super::super::samples::deploy_dir());
        let rename = |n: &str| format!("team-{n}");
        let text = serde_json::to_string(
            &render(&dir, &rename)?
                .into_iter()
                .map(|(_, d)| d)
                .collect::<Vec<_>>(),
        )?;
        assert!(
            !text.contains("\"openshift-machine-api\""),
            "a namespace value was not renamed"
        );
        assert!(text.contains("\"team-openshift-machine-api\""));
        assert!(text.contains("system:serviceaccount:openshift-machine-api:machine-api-controllers"));
        Ok(())
    }
}

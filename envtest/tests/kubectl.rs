//! The real `kubectl` binary against the envtest server: every command issue 3 lists
//! (`get -o yaml|json|jsonpath`, `apply`, `create -f` and generators, `label`, `annotate`,
//! `patch --type merge|json`, `replace`, `delete --wait`, `get -w`, `api-resources`,
//! `wait --for=condition=Established`), each checked against what kube-apiserver returns.
//!
//! With `USE_EXISTING_CLUSTER=true` the same tests run against the cluster of `KUBECONFIG`
//! (each in its own namespace, CRDs in a group of their own, everything removed after).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use envtest::TestEnv;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

type TestResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// How long one kubectl command, or one expected line of a watch, may take.
const WAIT: Duration = Duration::from_secs(60);

fn use_existing_cluster() -> bool {
    std::env::var("USE_EXISTING_CLUSTER").is_ok_and(|v| v == "true" || v == "1")
}

fn suffix() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{:x}{:x}{n}", std::process::id() % 0xfff, nanos % 0xfffff)
}

/// What a finished kubectl printed.
#[derive(Debug)]
struct Output {
    success: bool,
    stdout: String,
    stderr: String,
}

impl Output {
    /// stdout of a successful run, else an error with stderr.
    fn ok(self) -> TestResult<String> {
        if self.success {
            Ok(self.stdout)
        } else {
            Err(format!("kubectl failed: {}{}", self.stderr, self.stdout).into())
        }
    }

    /// stderr of a failed run, else an error.
    fn failed(self) -> TestResult<String> {
        if self.success {
            Err(format!("kubectl should have failed, printed {:?}", self.stdout).into())
        } else {
            Ok(self.stderr)
        }
    }
}

/// A server (envtest, or the existing cluster) plus a namespace of this test.
struct Cluster {
    env: Option<TestEnv>,
    client: Client,
    kubeconfig: Option<PathBuf>,
    dir: PathBuf,
    ns: String,
    suffix: String,
}

impl Cluster {
    async fn start() -> TestResult<Option<Self>> {
        if which_kubectl().is_none() {
            eprintln!("kubectl is not installed: skipping (CI requires it)");
            return Ok(None);
        }
        let suffix = suffix();
        let (env, client, kubeconfig) = if use_existing_cluster() {
            (None, Client::try_default().await?, None)
        } else {
            let env = TestEnv::builder().start().await?;
            let client = env.client();
            let kubeconfig = env.kubeconfig_path()?;
            (Some(env), client, Some(kubeconfig))
        };
        let dir = std::env::temp_dir().join(format!("envtest-kubectl-{suffix}"));
        std::fs::create_dir_all(&dir)?;
        let ns = format!("kubectl-{suffix}");
        let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}}))?;
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await?;
        Ok(Some(Self {
            env,
            client,
            kubeconfig,
            dir,
            ns,
            suffix,
        }))
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("kubectl");
        if let Some(kubeconfig) = &self.kubeconfig {
            command.arg("--kubeconfig").arg(kubeconfig);
        }
        // A discovery cache of this test only: discovery must reflect this server now.
        command.arg("--cache-dir").arg(self.dir.join("cache"));
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }

    /// Runs kubectl to completion.
    async fn kubectl(&self, args: &[&str]) -> TestResult<Output> {
        let output = tokio::time::timeout(WAIT, self.command(args).output())
            .await
            .map_err(|_| format!("kubectl {args:?} did not finish"))??;
        Ok(Output {
            success: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        })
    }

    /// Runs kubectl in this test's namespace.
    async fn kubectl_ns(&self, args: &[&str]) -> TestResult<Output> {
        let mut all = vec!["-n", self.ns.as_str()];
        all.extend_from_slice(args);
        self.kubectl(&all).await
    }

    /// Starts a long-running kubectl (in the namespace) whose stdout is read line by line.
    fn spawn_ns(&self, args: &[&str]) -> TestResult<(Child, Lines<BufReader<ChildStdout>>)> {
        let mut all = vec!["-n", self.ns.as_str()];
        all.extend_from_slice(args);
        let mut child = self.command(&all).spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        Ok((child, BufReader::new(stdout).lines()))
    }

    /// Writes a manifest file for `-f`.
    fn file(&self, name: &str, contents: &str) -> TestResult<String> {
        let path = self.dir.join(name);
        std::fs::write(&path, contents)?;
        Ok(path.display().to_string())
    }

    fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    async fn create_configmap(&self, name: &str, labels: Value, data: Value) -> TestResult<ConfigMap> {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "data": data}))?;
        Ok(self.configmaps().create(&PostParams::default(), &cm).await?)
    }

    /// Deletes what the test created on a real cluster.
    async fn cleanup(self, crds: &[&str], namespaces: &[&str]) -> TestResult {
        if self.env.is_none() {
            let crd_api = Api::<CustomResourceDefinition>::all(self.client.clone());
            for crd in crds {
                let _ = crd_api.delete(crd, &DeleteParams::default()).await;
            }
            let ns_api = Api::<Namespace>::all(self.client.clone());
            for ns in namespaces.iter().copied().chain([self.ns.as_str()]) {
                let _ = ns_api.delete(ns, &DeleteParams::default()).await;
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        Ok(())
    }
}

fn which_kubectl() -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("kubectl"))
            .find(|path| Path::new(path).is_file())
    })
}

/// The next line of a streaming kubectl, waiting at most [`WAIT`].
async fn next_line(lines: &mut Lines<BufReader<ChildStdout>>) -> TestResult<String> {
    match tokio::time::timeout(WAIT, lines.next_line()).await {
        Ok(Ok(Some(line))) => Ok(line),
        Ok(Ok(None)) => Err("kubectl closed its output".into()),
        Ok(Err(e)) => Err(e.into()),
        Err(_) => Err("no line from kubectl in time".into()),
    }
}

#[tokio::test]
async fn get_prints_yaml_json_jsonpath_and_tables() -> TestResult {
    let Some(c) = Cluster::start().await? else {
        return Ok(());
    };
    let created = c
        .create_configmap("a", json!({"app": "web"}), json!({"k": "v", "n": "1"}))
        .await?;
    c.create_configmap("b", json!({"app": "db"}), json!({"k": "w"}))
        .await?;

    // -o json is the object as the server returns it.
    let json: Value = serde_json::from_str(
        &c.kubectl_ns(&["get", "configmap", "a", "-o", "json"])
            .await?
            .ok()?,
    )?;
    assert_eq!(json["apiVersion"], "v1");
    assert_eq!(json["kind"], "ConfigMap");
    assert_eq!(json["metadata"]["name"], "a");
    assert_eq!(json["metadata"]["namespace"], c.ns.as_str());
    assert_eq!(json["metadata"]["uid"], json!(created.metadata.uid));
    assert_eq!(
        json["metadata"]["resourceVersion"],
        json!(created.resource_version())
    );
    assert_eq!(
        json["metadata"]["creationTimestamp"],
        json!(created.metadata.creation_timestamp)
    );
    assert_eq!(json["metadata"]["labels"], json!({"app": "web"}));
    assert_eq!(json["data"], json!({"k": "v", "n": "1"}));

    // -o yaml is the same object.
    let yaml = c.kubectl_ns(&["get", "cm", "a", "-o", "yaml"]).await?.ok()?;
    let from_yaml: Value = serde_saphyr::from_str(&yaml)?;
    assert_eq!(from_yaml, json);

    // jsonpath on one object and on a list.
    let out = c
        .kubectl_ns(&["get", "cm", "a", "-o", "jsonpath={.data.k}"])
        .await?
        .ok()?;
    assert_eq!(out, "v");
    let out = c
        .kubectl_ns(&[
            "get",
            "configmaps",
            "-l",
            "app",
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ])
        .await?
        .ok()?;
    assert_eq!(out, "a b");

    // A list is printed as a v1 List; a label selector filters it.
    // (`-l app`: a real cluster adds kube-root-ca.crt to every namespace.)
    let list: Value = serde_json::from_str(
        &c.kubectl_ns(&["get", "cm", "-l", "app", "-o", "json"])
            .await?
            .ok()?,
    )?;
    assert_eq!(list["kind"], "List");
    let names: Vec<&str> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["a", "b"]);
    let out = c
        .kubectl_ns(&["get", "cm", "-l", "app=web", "-o", "name"])
        .await?
        .ok()?;
    assert_eq!(out.trim(), "configmap/a");
    let out = c
        .kubectl_ns(&["get", "cm", "-l", "app notin (web)", "-o", "name"])
        .await?
        .ok()?;
    assert_eq!(out.trim(), "configmap/b");
    let out = c
        .kubectl_ns(&["get", "cm", "--field-selector", "metadata.name=b", "-o", "name"])
        .await?
        .ok()?;
    assert_eq!(out.trim(), "configmap/b");

    // The default table output.
    let table = c.kubectl_ns(&["get", "configmaps", "-l", "app"]).await?.ok()?;
    let mut rows = table.lines();
    assert!(
        rows.next().is_some_and(|header| header.starts_with("NAME")),
        "{table}"
    );
    let names: Vec<&str> = rows.filter_map(|r| r.split_whitespace().next()).collect();
    assert_eq!(names, ["a", "b"]);

    // Errors print the server's Status message.
    let err = c.kubectl_ns(&["get", "cm", "missing"]).await?.failed()?;
    assert!(
        err.contains(r#"Error from server (NotFound): configmaps "missing" not found"#),
        "{err}"
    );
    let err = c.kubectl_ns(&["get", "cm", "-l", "a in (b"]).await?.failed()?;
    assert!(!err.is_empty());
    c.cleanup(&[], &[]).await
}

#[tokio::test]
async fn create_from_files_and_generators() -> TestResult {
    let Some(c) = Cluster::start().await? else {
        return Ok(());
    };
    let file = c.file(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-file\ndata:\n  k: v\n",
    )?;
    let out = c.kubectl_ns(&["create", "-f", &file]).await?.ok()?;
    assert_eq!(out.trim(), "configmap/from-file created");
    assert_eq!(
        c.configmaps().get("from-file").await?.data,
        Some([("k".to_owned(), "v".to_owned())].into())
    );
    let err = c.kubectl_ns(&["create", "-f", &file]).await?.failed()?;
    assert!(
        err.contains(&format!(
            r#"Error from server (AlreadyExists): error when creating "{file}": configmaps "from-file" already exists"#
        )),
        "{err}"
    );

    // Generators go through client-go's typed clients: protobuf request bodies.
    let out = c
        .kubectl_ns(&[
            "create",
            "configmap",
            "gen",
            "--from-literal=a=b",
            "--from-literal=c=d",
        ])
        .await?
        .ok()?;
    assert_eq!(out.trim(), "configmap/gen created");
    let cm = c.configmaps().get("gen").await?;
    assert_eq!(
        cm.data,
        Some([("a".to_owned(), "b".to_owned()), ("c".to_owned(), "d".to_owned())].into())
    );
    assert!(cm.metadata.uid.is_some());
    let err = c.kubectl_ns(&["create", "configmap", "gen"]).await?.failed()?;
    assert!(err.contains(r#"configmaps "gen" already exists"#), "{err}");

    let out = c
        .kubectl_ns(&[
            "create",
            "secret",
            "generic",
            "pw",
            "--from-literal=password=hunter2",
        ])
        .await?
        .ok()?;
    assert_eq!(out.trim(), "secret/pw created");
    let secret = Api::<Secret>::namespaced(c.client.clone(), &c.ns)
        .get("pw")
        .await?;
    let password = secret.data.as_ref().and_then(|d| d.get("password"));
    assert_eq!(password.map(|p| p.0.as_slice()), Some(&b"hunter2"[..]));
    assert_eq!(secret.type_.as_deref(), Some("Opaque"));
    // stringData is write-only: merged into data.
    let file = c.file(
        "secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: sd\nstringData:\n  token: abc\n",
    )?;
    c.kubectl_ns(&["create", "-f", &file]).await?.ok()?;
    let secret: Value =
        serde_json::from_str(&c.kubectl_ns(&["get", "secret", "sd", "-o", "json"]).await?.ok()?)?;
    assert_eq!(secret["data"], json!({"token": "YWJj"}));
    assert_eq!(secret["type"], "Opaque");
    assert!(secret.get("stringData").is_none());

    let out = c.kubectl_ns(&["create", "serviceaccount", "robot"]).await?.ok()?;
    assert_eq!(out.trim(), "serviceaccount/robot created");

    let out = c
        .kubectl_ns(&[
            "create",
            "role",
            "reader",
            "--verb=get,list",
            "--resource=configmaps",
        ])
        .await?
        .ok()?;
    assert_eq!(out.trim(), "role.rbac.authorization.k8s.io/reader created");
    let role = Api::<Role>::namespaced(c.client.clone(), &c.ns)
        .get("reader")
        .await?;
    let rule = role
        .rules
        .unwrap_or_default()
        .into_iter()
        .next()
        .ok_or("no rule")?;
    assert_eq!(rule.verbs, ["get", "list"]);
    assert_eq!(rule.resources, Some(vec!["configmaps".to_owned()]));
    assert_eq!(rule.api_groups, Some(vec![String::new()]));

    let subject = format!("--serviceaccount={}:robot", c.ns);
    let out = c
        .kubectl_ns(&[
            "create",
            "rolebinding",
            "read",
            "--role=reader",
            "--user=alice",
            &subject,
        ])
        .await?
        .ok()?;
    assert_eq!(out.trim(), "rolebinding.rbac.authorization.k8s.io/read created");
    let binding = Api::<RoleBinding>::namespaced(c.client.clone(), &c.ns)
        .get("read")
        .await?;
    assert_eq!(binding.role_ref.kind, "Role");
    assert_eq!(binding.role_ref.name, "reader");
    let subjects: Vec<(String, String)> = binding
        .subjects
        .unwrap_or_default()
        .into_iter()
        .map(|s| (s.kind, s.name))
        .collect();
    assert_eq!(
        subjects,
        [
            ("User".to_owned(), "alice".to_owned()),
            ("ServiceAccount".to_owned(), "robot".to_owned())
        ]
    );

    let ns = format!("created-{}", c.suffix);
    let out = c.kubectl(&["create", "namespace", &ns]).await?.ok()?;
    assert_eq!(out.trim(), format!("namespace/{ns} created"));
    let namespace = Api::<Namespace>::all(c.client.clone()).get(&ns).await?;
    assert_eq!(namespace.status.and_then(|s| s.phase).as_deref(), Some("Active"));
    assert_eq!(
        namespace
            .metadata
            .labels
            .and_then(|l| l.get("kubernetes.io/metadata.name").cloned()),
        Some(ns.clone())
    );

    // A server-side dry run answers like a create and stores nothing.
    let out = c
        .kubectl_ns(&["create", "configmap", "dry", "--dry-run=server"])
        .await?
        .ok()?;
    assert_eq!(out.trim(), "configmap/dry created (server dry run)");
    assert!(c.configmaps().get_opt("dry").await?.is_none());
    c.cleanup(&[], &[&ns]).await
}

#[tokio::test]
async fn apply_creates_configures_and_prunes_keys() -> TestResult {
    let Some(c) = Cluster::start().await? else {
        return Ok(());
    };
    let manifest = |data: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  labels:\n    app: web\ndata:\n{data}"
        )
    };
    let file = c.file("applied.yaml", &manifest("  k: v\n  gone: soon\n"))?;
    let apply = ["apply", "-f", file.as_str()];
    assert_eq!(
        c.kubectl_ns(&apply).await?.ok()?.trim(),
        "configmap/applied created"
    );
    let first = c.configmaps().get("applied").await?;
    let last_applied = first
        .annotations()
        .get("kubectl.kubernetes.io/last-applied-configuration")
        .cloned()
        .ok_or("no last-applied-configuration")?;
    let last_applied: Value = serde_json::from_str(&last_applied)?;
    assert_eq!(last_applied["data"], json!({"k": "v", "gone": "soon"}));

    assert_eq!(
        c.kubectl_ns(&apply).await?.ok()?.trim(),
        "configmap/applied unchanged"
    );
    assert_eq!(
        c.configmaps().get("applied").await?.resource_version(),
        first.resource_version()
    );

    std::fs::write(&file, manifest("  k: v2\n"))?;
    assert_eq!(
        c.kubectl_ns(&apply).await?.ok()?.trim(),
        "configmap/applied configured"
    );
    let cm = c.configmaps().get("applied").await?;
    // The three-way merge removed the key dropped from the manifest.
    assert_eq!(cm.data, Some([("k".to_owned(), "v2".to_owned())].into()));
    assert_eq!(cm.labels().get("app").map(String::as_str), Some("web"));

    // Client-side validation against the served OpenAPI document: an unknown field fails.
    std::fs::write(&file, manifest("  k: v2\nbogus: 1\n"))?;
    let err = c.kubectl_ns(&["apply", "-f", &file]).await?.failed()?;
    assert!(err.contains("unknown field \"bogus\""), "{err}");
    // --validate=false sends it anyway; the server drops the unknown field.
    c.kubectl_ns(&["apply", "-f", &file, "--validate=false"])
        .await?
        .ok()?;
    c.cleanup(&[], &[]).await
}

#[tokio::test]
async fn label_and_annotate() -> TestResult {
    let Some(c) = Cluster::start().await? else {
        return Ok(());
    };
    c.create_configmap("a", json!({}), json!({})).await?;
    let out = c
        .kubectl_ns(&["label", "cm", "a", "env=prod", "tier=web"])
        .await?
        .ok()?;
    assert_eq!(out.trim(), "configmap/a labeled");
    let labels = c.configmaps().get("a").await?.labels().clone();
    assert_eq!(labels.get("env").map(String::as_str), Some("prod"));
    assert_eq!(labels.get("tier").map(String::as_str), Some("web"));

    let err = c.kubectl_ns(&["label", "cm", "a", "env=dev"]).await?.failed()?;
    assert!(
        err.contains("'env' already has a value (prod), and --overwrite is false"),
        "{err}"
    );
    c.kubectl_ns(&["label", "cm", "a", "env=dev", "--overwrite"])
        .await?
        .ok()?;
    let out = c.kubectl_ns(&["label", "cm", "a", "tier-"]).await?.ok()?;
    assert_eq!(out.trim(), "configmap/a unlabeled");
    let labels = c.configmaps().get("a").await?.labels().clone();
    assert_eq!(labels.len(), 1);
    assert_eq!(labels.get("env").map(String::as_str), Some("dev"));

    // A stale --resource-version is a Conflict.
    let err = c
        .kubectl_ns(&["label", "cm", "a", "x=y", "--resource-version=1"])
        .await?
        .failed()?;
    assert!(
        err.contains(r#"Error from server (Conflict): Operation cannot be fulfilled on configmaps "a": the object has been modified; please apply your changes to the latest version and try again"#),
        "{err}"
    );

    let out = c
        .kubectl_ns(&["annotate", "cm", "a", "note=hello world", "owner=me"])
        .await?
        .ok()?;
    assert_eq!(out.trim(), "configmap/a annotated");
    let err = c
        .kubectl_ns(&["annotate", "cm", "a", "note=again"])
        .await?
        .failed()?;
    assert!(err.contains("--overwrite is false"), "{err}");
    c.kubectl_ns(&["annotate", "cm", "a", "owner-"]).await?.ok()?;
    let annotations = c.configmaps().get("a").await?.annotations().clone();
    assert_eq!(annotations.get("note").map(String::as_str), Some("hello world"));
    assert!(!annotations.contains_key("owner"));

    // Both by selector, over several objects.
    c.create_configmap("b", json!({"env": "dev"}), json!({})).await?;
    let out = c
        .kubectl_ns(&["annotate", "cm", "-l", "env=dev", "seen=yes"])
        .await?
        .ok()?;
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["configmap/a annotated", "configmap/b annotated"]);
    c.cleanup(&[], &[]).await
}

#[tokio::test]
async fn patch_merge_and_json() -> TestResult {
    let Some(c) = Cluster::start().await? else {
        return Ok(());
    };
    c.create_configmap("p", json!({}), json!({"k": "v", "drop": "me"}))
        .await?;
    let out = c
        .kubectl_ns(&[
            "patch",
            "cm",
            "p",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"k":"v2","drop":null}}"#,
        ])
        .await?
        .ok()?;
    assert_eq!(out.trim(), "configmap/p patched");
    assert_eq!(
        c.configmaps().get("p").await?.data,
        Some([("k".to_owned(), "v2".to_owned())].into())
    );
    let out = c
        .kubectl_ns(&[
            "patch",
            "cm",
            "p",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"k":"v2"}}"#,
        ])
        .await?
        .ok()?;
    assert_eq!(out.trim(), "configmap/p patched (no change)");

    let out = c
        .kubectl_ns(&[
            "patch",
            "cm",
            "p",
            "--type",
            "json",
            "-p",
            r#"[{"op":"add","path":"/data/n","value":"1"},{"op":"replace","path":"/data/k","value":"v3"}]"#,
        ])
        .await?
        .ok()?;
    assert_eq!(out.trim(), "configmap/p patched");
    assert_eq!(
        c.configmaps().get("p").await?.data,
        Some(
            [
                ("k".to_owned(), "v3".to_owned()),
                ("n".to_owned(), "1".to_owned())
            ]
            .into()
        )
    );

    // A failing `test` operation is 422, nothing changes.
    let before = c.configmaps().get("p").await?.resource_version();
    let err = c
        .kubectl_ns(&[
            "patch",
            "cm",
            "p",
            "--type",
            "json",
            "-p",
            r#"[{"op":"test","path":"/data/n","value":"2"}]"#,
        ])
        .await?
        .failed()?;
    assert!(err.contains("The request is invalid"), "{err}");
    assert_eq!(c.configmaps().get("p").await?.resource_version(), before);

    let err = c
        .kubectl_ns(&["patch", "cm", "missing", "--type", "merge", "-p", "{}"])
        .await?
        .failed()?;
    assert!(err.contains(r#"configmaps "missing" not found"#), "{err}");
    c.cleanup(&[], &[]).await
}

#[tokio::test]
async fn replace_and_conflicts() -> TestResult {
    let Some(c) = Cluster::start().await? else {
        return Ok(());
    };
    c.create_configmap("r", json!({}), json!({"k": "v"})).await?;
    let mut object: Value =
        serde_json::from_str(&c.kubectl_ns(&["get", "cm", "r", "-o", "json"]).await?.ok()?)?;
    object["data"]["k"] = json!("v2");
    let file = c.file("r.json", &object.to_string())?;
    let out = c.kubectl_ns(&["replace", "-f", &file]).await?.ok()?;
    assert_eq!(out.trim(), "configmap/r replaced");
    assert_eq!(
        c.configmaps().get("r").await?.data,
        Some([("k".to_owned(), "v2".to_owned())].into())
    );

    // The file still carries the old resourceVersion: a Conflict.
    object["data"]["k"] = json!("v3");
    std::fs::write(&file, object.to_string())?;
    let err = c.kubectl_ns(&["replace", "-f", &file]).await?.failed()?;
    assert!(
        err.contains(&format!(
            r#"Error from server (Conflict): error when replacing "{file}": Operation cannot be fulfilled on configmaps "r": the object has been modified; please apply your changes to the latest version and try again"#
        )),
        "{err}"
    );

    // Without a resourceVersion the replace is unconditional (ConfigMaps allow it).
    if let Some(meta) = object["metadata"].as_object_mut() {
        meta.remove("resourceVersion");
    }
    std::fs::write(&file, object.to_string())?;
    c.kubectl_ns(&["replace", "-f", &file]).await?.ok()?;
    assert_eq!(
        c.configmaps().get("r").await?.data,
        Some([("k".to_owned(), "v3".to_owned())].into())
    );

    let mut missing = object.clone();
    missing["metadata"]["name"] = json!("missing");
    std::fs::write(&file, missing.to_string())?;
    let err = c.kubectl_ns(&["replace", "-f", &file]).await?.failed()?;
    assert!(err.contains(r#"configmaps "missing" not found"#), "{err}");
    c.cleanup(&[], &[]).await
}

#[tokio::test]
async fn delete_waits_for_finalizers() -> TestResult {
    let Some(c) = Cluster::start().await? else {
        return Ok(());
    };
    c.create_configmap("plain", json!({}), json!({})).await?;
    let out = c.kubectl_ns(&["delete", "cm", "plain"]).await?.ok()?;
    assert_eq!(out.trim(), r#"configmap "plain" deleted"#);
    assert!(c.configmaps().get_opt("plain").await?.is_none());

    let err = c.kubectl_ns(&["delete", "cm", "plain"]).await?.failed()?;
    assert!(
        err.contains(r#"Error from server (NotFound): configmaps "plain" not found"#),
        "{err}"
    );
    let out = c
        .kubectl_ns(&["delete", "cm", "plain", "--ignore-not-found"])
        .await?
        .ok()?;
    assert_eq!(out, "");

    // With a finalizer the object stays, terminating, and `--wait` waits for it to go.
    let held: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}))?;
    c.configmaps().create(&PostParams::default(), &held).await?;
    let err = c
        .kubectl_ns(&["delete", "cm", "held", "--timeout=2s"])
        .await?
        .failed()?;
    assert!(err.contains("timed out waiting for the condition"), "{err}");
    let held = c.configmaps().get("held").await?;
    assert!(held.metadata.deletion_timestamp.is_some());

    let (mut child, mut lines) = c.spawn_ns(&["delete", "cm", "held", "--timeout=60s"])?;
    assert_eq!(next_line(&mut lines).await?, r#"configmap "held" deleted"#);
    c.configmaps()
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await?;
    let status = tokio::time::timeout(WAIT, child.wait()).await??;
    assert!(status.success());
    assert!(c.configmaps().get_opt("held").await?.is_none());

    // --wait=false returns as soon as the delete is accepted.
    let held: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "held2", "finalizers": ["example.com/hold"]}}))?;
    c.configmaps().create(&PostParams::default(), &held).await?;
    c.kubectl_ns(&["delete", "cm", "held2", "--wait=false"])
        .await?
        .ok()?;
    assert!(
        c.configmaps()
            .get("held2")
            .await?
            .metadata
            .deletion_timestamp
            .is_some()
    );
    c.configmaps()
        .patch(
            "held2",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await?;

    // By label selector.
    c.create_configmap("l1", json!({"del": "yes"}), json!({})).await?;
    c.create_configmap("l2", json!({"del": "yes"}), json!({})).await?;
    c.create_configmap("keep", json!({"del": "no"}), json!({}))
        .await?;
    let out = c.kubectl_ns(&["delete", "cm", "-l", "del=yes"]).await?.ok()?;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [r#"configmap "l1" deleted"#, r#"configmap "l2" deleted"#]
    );
    let left: Vec<String> = c
        .configmaps()
        .list(&Default::default())
        .await?
        .items
        .iter()
        .map(|cm| cm.name_any())
        .filter(|n| n != "kube-root-ca.crt")
        .collect();
    assert_eq!(left, ["keep"]);
    c.cleanup(&[], &[]).await
}

#[tokio::test]
async fn get_watch_streams_events() -> TestResult {
    let Some(c) = Cluster::start().await? else {
        return Ok(());
    };
    c.create_configmap("a", json!({}), json!({})).await?;
    let (mut child, mut lines) = c.spawn_ns(&[
        "get",
        "configmaps",
        "--watch",
        "--output-watch-events",
        "-o",
        r#"jsonpath={.type} {.object.metadata.name} {.object.metadata.labels.x}{"\n"}"#,
    ])?;
    let mut first = next_line(&mut lines).await?;
    if first.contains("kube-root-ca.crt") {
        // A real cluster's root CA ConfigMap.
        first = next_line(&mut lines).await?;
    }
    assert_eq!(first.trim(), "ADDED a");
    c.create_configmap("b", json!({}), json!({})).await?;
    assert_eq!(next_line(&mut lines).await?.trim(), "ADDED b");
    c.configmaps()
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await?;
    assert_eq!(next_line(&mut lines).await?.trim(), "MODIFIED a y");
    c.configmaps().delete("b", &DeleteParams::default()).await?;
    assert_eq!(next_line(&mut lines).await?.trim(), "DELETED b");
    child.kill().await?;

    // The default output: a table whose header comes first.
    let (mut child, mut lines) = c.spawn_ns(&["get", "configmaps", "-w"])?;
    assert!(next_line(&mut lines).await?.starts_with("NAME"));
    let row = next_line(&mut lines).await?;
    assert!(
        row.starts_with("a ") || row.starts_with("kube-root-ca.crt "),
        "{row}"
    );
    child.kill().await?;
    c.cleanup(&[], &[]).await
}

#[tokio::test]
async fn api_resources_lists_builtins_and_crds() -> TestResult {
    let Some(c) = Cluster::start().await? else {
        return Ok(());
    };
    let out = c.kubectl(&["api-resources"]).await?.ok()?;
    let rows: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(
        rows.first().map(Vec::as_slice),
        Some(&["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"][..])
    );
    for expected in [
        &["configmaps", "cm", "v1", "true", "ConfigMap"][..],
        &["namespaces", "ns", "v1", "false", "Namespace"],
        &["secrets", "v1", "true", "Secret"],
        &["serviceaccounts", "sa", "v1", "true", "ServiceAccount"],
        &["events", "ev", "v1", "true", "Event"],
        &[
            "customresourcedefinitions",
            "crd,crds",
            "apiextensions.k8s.io/v1",
            "false",
            "CustomResourceDefinition",
        ],
        &["leases", "coordination.k8s.io/v1", "true", "Lease"],
        &["events", "ev", "events.k8s.io/v1", "true", "Event"],
        &[
            "clusterrolebindings",
            "rbac.authorization.k8s.io/v1",
            "false",
            "ClusterRoleBinding",
        ],
        &[
            "clusterroles",
            "rbac.authorization.k8s.io/v1",
            "false",
            "ClusterRole",
        ],
        &[
            "rolebindings",
            "rbac.authorization.k8s.io/v1",
            "true",
            "RoleBinding",
        ],
        &["roles", "rbac.authorization.k8s.io/v1", "true", "Role"],
    ] {
        assert!(
            rows.iter().any(|r| r.as_slice() == expected),
            "{expected:?} missing from:\n{out}"
        );
    }
    let out = c
        .kubectl(&[
            "api-resources",
            "--namespaced=false",
            "-o",
            "name",
            "--api-group=rbac.authorization.k8s.io",
        ])
        .await?
        .ok()?;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "clusterrolebindings.rbac.authorization.k8s.io",
            "clusterroles.rbac.authorization.k8s.io"
        ]
    );

    // A new CRD shows up in discovery.
    let group = format!("k{}.example.com", c.suffix);
    let crd = crd_yaml(&group);
    let file = c.file("crd.yaml", &crd)?;
    c.kubectl(&["apply", "-f", &file]).await?.ok()?;
    let name = format!("gadgets.{group}");
    c.kubectl(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/{name}"),
        "--timeout=60s",
    ])
    .await?
    .ok()?;
    let out = c
        .kubectl(&["api-resources", &format!("--api-group={group}")])
        .await?
        .ok()?;
    let rows: Vec<Vec<&str>> = out
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    let version = format!("{group}/v1");
    assert_eq!(rows, [vec!["gadgets", "gd", version.as_str(), "true", "Gadget"]]);

    if c.env.is_some() {
        let version: Value = serde_json::from_str(&c.kubectl(&["version", "-o", "json"]).await?.ok()?)?;
        assert_eq!(version["serverVersion"]["gitVersion"], "v1.35.0-envtest");
    }
    c.cleanup(&[&name], &[]).await
}

fn crd_yaml(group: &str) -> String {
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.{group}
spec:
  group: {group}
  scope: Namespaced
  names: {{plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList, shortNames: [gd]}}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {{status: {{}}}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#
    )
}

#[tokio::test]
async fn wait_for_crd_established_then_use_it() -> TestResult {
    let Some(c) = Cluster::start().await? else {
        return Ok(());
    };
    let group = format!("w{}.example.com", c.suffix);
    let name = format!("gadgets.{group}");
    let file = c.file("crd.yaml", &crd_yaml(&group))?;
    let out = c.kubectl(&["create", "-f", &file]).await?.ok()?;
    assert_eq!(
        out.trim(),
        format!("customresourcedefinition.apiextensions.k8s.io/{name} created")
    );
    let out = c
        .kubectl(&[
            "wait",
            "--for=condition=Established",
            &format!("crd/{name}"),
            "--timeout=60s",
        ])
        .await?
        .ok()?;
    assert_eq!(
        out.trim(),
        format!("customresourcedefinition.apiextensions.k8s.io/{name} condition met")
    );
    let out = c
        .kubectl(&[
            "wait",
            "--for=condition=NamesAccepted=True",
            "-f",
            &file,
            "--timeout=60s",
        ])
        .await?
        .ok()?;
    assert!(out.contains("condition met"), "{out}");
    let established = c
        .kubectl(&[
            "get",
            "crd",
            &name,
            "-o",
            r#"jsonpath={.status.conditions[?(@.type=="Established")].status}"#,
        ])
        .await?
        .ok()?;
    assert_eq!(established, "True");

    // The new kind is usable right away, through its short name too.
    let gadget = c.file(
        "gadget.yaml",
        &format!("apiVersion: {group}/v1\nkind: Gadget\nmetadata:\n  name: g1\nspec:\n  size: 3\n"),
    )?;
    let out = c.kubectl_ns(&["create", "-f", &gadget]).await?.ok()?;
    assert_eq!(out.trim(), format!("gadget.{group}/g1 created"));
    let size = c
        .kubectl_ns(&["get", "gd", "g1", "-o", "jsonpath={.spec.size}"])
        .await?
        .ok()?;
    assert_eq!(size, "3");
    let out = c
        .kubectl_ns(&[
            "patch",
            &format!("gadgets.{group}"),
            "g1",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"size":4}}"#,
        ])
        .await?
        .ok()?;
    assert_eq!(out.trim(), format!("gadget.{group}/g1 patched"));
    // Custom resources have no strategic merge patch (kubectl's default patch type): 415.
    let err = c
        .kubectl_ns(&["patch", "gd", "g1", "-p", r#"{"spec":{"size":5}}"#])
        .await?
        .failed()?;
    assert!(
        err.contains("application/strategic-merge-patch+json is not supported"),
        "{err}"
    );

    // A condition that never comes: kubectl times out.
    let err = c
        .kubectl(&[
            "wait",
            "--for=condition=Bogus",
            &format!("crd/{name}"),
            "--timeout=1s",
        ])
        .await?
        .failed()?;
    assert!(err.contains("timed out waiting for the condition"), "{err}");

    // Deleting the CRD stops serving the kind.
    let out = c.kubectl(&["delete", "crd", &name]).await?.ok()?;
    assert_eq!(
        out.trim(),
        format!(r#"customresourcedefinition.apiextensions.k8s.io "{name}" deleted"#)
    );
    let err = c
        .kubectl_ns(&["get", &format!("gadgets.v1.{group}")])
        .await?
        .failed()?;
    assert!(
        err.contains("the server doesn't have a resource type") || err.contains("NotFound"),
        "{err}"
    );
    c.cleanup(&[&name], &[]).await
}

#[tokio::test]
async fn label_selectors_as_kube_parses_them() -> TestResult {
    let Some(c) = Cluster::start().await? else {
        return Ok(());
    };
    c.create_configmap("two", json!({"n": "2", "tier": "web"}), json!({}))
        .await?;
    c.create_configmap("ten", json!({"n": "10", "tier": ""}), json!({}))
        .await?;
    c.create_configmap("none", json!({}), json!({})).await?;
    let names = |selector: &'static str| {
        let c = &c;
        async move {
            let out = c
                .kubectl_ns(&[
                    "get",
                    "cm",
                    "-l",
                    selector,
                    "-o",
                    "jsonpath={.items[*].metadata.name}",
                ])
                .await?
                .ok()?;
            TestResult::Ok(out)
        }
    };
    assert_eq!(names("n>3").await?, "ten", "numeric, not lexical");
    assert_eq!(names("n<3").await?, "two");
    assert_eq!(names("n>3,tier").await?, "ten");
    assert_eq!(
        names("tier in ()").await?,
        "ten",
        "an empty set holds the empty value"
    );
    assert_eq!(names("tier notin (web,)").await?, "none");
    assert_eq!(
        names("tier in (in)").await?,
        "",
        "keywords are values inside a set"
    );

    let err = c.kubectl_ns(&["get", "cm", "-l", "n>x"]).await?.failed()?;
    assert!(
        err.contains("unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer"),
        "{err}"
    );
    let err = c
        .kubectl_ns(&["get", "cm", "-l", "tier in web"])
        .await?
        .failed()?;
    assert!(err.contains("(BadRequest)"), "{err}");
    assert!(
        err.contains("unable to parse requirement: found 'web' expected: '('"),
        "{err}"
    );
    let err = c.kubectl_ns(&["get", "cm", "-l", "-bad-=x"]).await?.failed()?;
    assert!(
        err.contains("unable to parse requirement: <nil>: Invalid value: \"-bad-\": name part must consist of alphanumeric characters"),
        "{err}"
    );
    c.cleanup(&[], &[]).await
}

/// `kubectl create deployment` sends its Deployment as protobuf (client-go's typed
/// client): it is decoded, gets kube's defaults, and `kubectl get` prints kube's columns.
#[tokio::test(flavor = "multi_thread")]
async fn create_deployment_from_protobuf() -> TestResult {
    let Some(c) = Cluster::start().await? else {
        return Ok(());
    };
    let out = c
        .kubectl_ns(&[
            "create",
            "deployment",
            "web",
            "--image=nginx:1.27",
            "--replicas=2",
            "--port=80",
        ])
        .await?
        .ok()?;
    assert_eq!(out.trim(), "deployment.apps/web created");
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(c.client.clone(), &c.ns);
    let stored = serde_json::to_value(deployments.get("web").await?)?;
    assert_eq!(stored["metadata"]["labels"], json!({"app": "web"}));
    assert_eq!(stored["metadata"]["generation"], 1);
    let spec = &stored["spec"];
    assert_eq!(spec["replicas"], 2);
    assert_eq!(spec["selector"], json!({"matchLabels": {"app": "web"}}));
    assert_eq!(
        spec["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["progressDeadlineSeconds"], 600);
    let template = &spec["template"];
    assert_eq!(template["metadata"]["labels"], json!({"app": "web"}));
    let pod = &template["spec"];
    assert_eq!(pod["restartPolicy"], "Always");
    assert_eq!(pod["terminationGracePeriodSeconds"], 30);
    assert_eq!(pod["dnsPolicy"], "ClusterFirst");
    assert_eq!(pod["securityContext"], json!({}));
    assert_eq!(pod["schedulerName"], "default-scheduler");
    assert_eq!(
        pod["containers"],
        json!([{
            "name": "nginx",
            "image": "nginx:1.27",
            "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "resources": {},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "imagePullPolicy": "IfNotPresent",
        }])
    );

    let out = c.kubectl_ns(&["get", "deployments"]).await?.ok()?;
    let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0], ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    assert_eq!(lines[1][..4], ["web", "0/2", "0", "0"]);
    let out = c
        .kubectl_ns(&["get", "deployment", "web", "-o", "wide"])
        .await?
        .ok()?;
    let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(
        lines[0],
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ]
    );
    assert_eq!(lines[1][5..], ["nginx", "nginx:1.27", "app=web"]);

    // kubectl scale goes through /scale; the table follows.
    c.kubectl_ns(&["scale", "deployment", "web", "--replicas=3"])
        .await?
        .ok()?;
    assert_eq!(
        deployments.get("web").await?.spec.and_then(|s| s.replicas),
        Some(3)
    );
    Ok(())
}

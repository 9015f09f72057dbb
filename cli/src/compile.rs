//! `kwas compile FILE`: Job and JobSet manifests to the Workload and runtime groups their controllers would
//! create, offline. Validation errors are rendered as kubectl renders the API server's `Invalid` errors.
//!
//! Names derive from `metadata.uid` as the controllers' do; a manifest without a uid (not yet created)
//! compiles as if its uid were empty, so the Workload's name differs from the one the cluster will show.
//!
//! Manifests are decoded strictly: a field their type does not have is an error naming its path, with the
//! API's name when it is a KEP-6089 draft name (`policy` for `schedulingPolicy`, ...; see [`crate::strict`]).
//! A `scheduling.k8s.io/v1alpha3` Workload is checked the same way and with kube-apiserver's rules, and
//! printed as it is.
//!
//! With `--flat`, Workloads are compiled for clusters without CompositePodGroups (what LeaderWorkerSet and
//! upstream JobSet do): only `podGroupTemplates`, one per leaf, and PodGroups without a parent. A JobSet's
//! root must then be Basic (`spec.scheduling.schedulingPolicy: {basic: {}}`) without topology or `all`;
//! a Job's Workload has one PodGroupTemplate either way.
//!
//! With `--resolved`, each manifest prints the `WorkloadItem` tree its controller builds, resolved: per
//! item the controller's default, the user's values, their merge, the result after the controller's
//! callbacks and where each field came from (`sources`), plus the validation errors with their origins.

use std::fmt::Write as _;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::scheduling::v1alpha3::Workload;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use kwas_api_types::jobset::{self, JobSet, PodGroupManagement};
use kwas_api_types::names::JOB_CONTROLLER_NAME;
use kwas_controllers::job::mode::{ManagementMode, UnmanagedReason, management_mode};
use kwas_controllers::job::scheduling::{desired_root_pod_group, desired_workload};
use kwas_controllers::jobset::children::{
    ChildWiring, children, desired_child_group, desired_child_group_under, desired_job, desired_root_group,
    root_group_name,
};
use serde_json::Value;
use workloadbuilder::{FieldErrors, ResolvedItem, Stage, WorkloadBuilder};

use crate::strict;

/// The uid given to manifests that have none (objects not created yet).
pub const PLACEHOLDER_UID: &str = "00000000-0000-0000-0000-000000000000";

/// The uid given to the `index`th child Job of a JobSet (not created yet): distinct per child, so the
/// PodGroups the child Jobs would name after their uids are distinct too.
pub fn child_placeholder_uid(index: usize) -> String {
    format!(
        "00000000-0000-0000-0000-{:012}",
        index.saturating_add(1) % 1_000_000_000_000
    )
}

/// How manifests are compiled.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// The PodGroup management of JobSets that do not choose one.
    pub management: PodGroupManagement,
    /// The namespace of manifests that name none (as kubectl's `--namespace`).
    pub namespace: String,
    /// Print each manifest's resolved `WorkloadItem` tree instead of the objects.
    pub resolved: bool,
    /// Compile for a cluster without CompositePodGroups: Workloads with only `podGroupTemplates` and
    /// PodGroups without a parent.
    pub flat: bool,
}

/// The resolved `WorkloadItem` tree of one manifest (`--resolved`).
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedDocument {
    /// The manifest's `apiVersion`.
    pub api_version: String,
    /// The manifest's `kind`.
    pub kind: String,
    /// The manifest's name.
    pub name: String,
    /// The manifest's namespace.
    pub namespace: Option<String>,
    /// The tree its controller builds, resolved.
    pub tree: ResolvedItem,
    /// Why the tree does not compile, each error with its origin (stage and item).
    #[serde(skip_serializing_if = "FieldErrors::is_empty")]
    pub errors: FieldErrors,
}

/// One compiled input document.
#[derive(Debug, Default)]
pub struct Compiled {
    /// The objects, in creation order.
    pub objects: Vec<Value>,
    /// With `--resolved`: the manifest's resolved tree.
    pub resolved: Option<ResolvedDocument>,
    /// Notes for the user (for example why a Job compiles to nothing).
    pub notes: Vec<String>,
    /// With `--resolved`: the validation errors of a tree that resolved but does not compile, rendered as
    /// kubectl renders an `Invalid` error (the tree is printed all the same).
    pub invalid: Option<String>,
}

/// kubectl's rendering of a 422 `Invalid` Status for `kind` `name` with `errs`.
pub fn kubectl_invalid(kind: &str, name: &str, errs: &FieldErrors) -> String {
    let mut s = format!("The {kind} {name:?} is invalid:");
    if errs.len() == 1 {
        let e = &errs.as_slice()[0];
        let _ = write!(s, " {}: {}", e.field, e.body());
        return s;
    }
    s.push_str(" \n");
    for e in errs {
        let _ = writeln!(s, "* {}: {}", e.field, e.body());
    }
    s.trim_end().to_string()
}

/// Parse every YAML document of `input` (empty documents are skipped).
pub fn documents(input: &str) -> Result<Vec<Value>> {
    let docs: Vec<Value> = serde_saphyr::from_str_multiple(input).context("parsing YAML")?;
    Ok(docs.into_iter().filter(|v| !v.is_null()).collect())
}

/// Compile one manifest.
pub fn compile_document(doc: &Value, options: &CompileOptions) -> Result<Compiled> {
    let api_version = doc
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
    let mut doc = doc.clone();
    let meta = doc
        .as_object_mut()
        .context("a manifest is a YAML mapping")?
        .entry("metadata")
        .or_insert_with(|| serde_json::json!({}));
    let meta = meta.as_object_mut().context("metadata is a mapping")?;
    meta.entry("namespace")
        .or_insert_with(|| Value::String(options.namespace.clone()));
    if (api_version.as_str(), kind.as_str()) == ("scheduling.k8s.io/v1alpha3", "Workload") {
        return check_workload(&doc);
    }
    let placeholder = !meta.contains_key("uid");
    meta.entry("uid")
        .or_insert_with(|| Value::String(PLACEHOLDER_UID.to_string()));
    // A jobset.x-k8s.io/v1 JobSet is checked against v1's fields, then compiled as the API server hands
    // it to the controller: converted to v1alpha2 (its startup-policy annotation back in spec).
    let api_version = if (api_version.as_str(), kind.as_str()) == (jobset::v1::API_VERSION, "JobSet") {
        decode_strict::<jobset::v1::JobSet>(&doc, "JobSet")?;
        doc = jobset::v1::convert(doc, jobset::v1alpha2::API_VERSION)
            .map_err(|e| anyhow::anyhow!("converting the JobSet to v1alpha2: {e}"))?;
        jobset::v1alpha2::API_VERSION.to_string()
    } else {
        api_version
    };
    let mut out = match (api_version.as_str(), kind.as_str()) {
        ("batch/v1", "Job") if options.resolved => resolve_job(&decode_strict(&doc, "Job")?)?,
        ("jobset.x-k8s.io/v1alpha2", "JobSet") if options.resolved => resolve_jobset(&decode_strict(&doc, "JobSet")?)?,
        ("batch/v1", "Job") => compile_job(&decode_strict(&doc, "Job")?)?,
        ("jobset.x-k8s.io/v1alpha2", "JobSet") if options.flat => {
            compile_jobset_flat(&decode_strict(&doc, "JobSet")?, options.management)?
        }
        ("jobset.x-k8s.io/v1alpha2", "JobSet") => compile_jobset(&decode_strict(&doc, "JobSet")?, options.management)?,
        // What a workload's manifest carries along (its claim templates, priority classes, budgets) is
        // not compiled: the controllers create nothing from it.
        (v, _) if v.starts_with("resource.k8s.io/") || v == "scheduling.k8s.io/v1" || v == "policy/v1" => {
            let name = doc
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            return Ok(Compiled {
                objects: Vec::new(),
                notes: vec![format!("{api_version} {kind} {name}: not a workload, skipped")],
                ..Compiled::default()
            });
        }
        _ => bail!(
            "kwas compile handles batch/v1 Jobs, jobset.x-k8s.io/v1alpha2 and v1 JobSets and scheduling.k8s.io/v1alpha3 \
             Workloads, not {api_version} {kind}"
        ),
    };
    if placeholder && !out.objects.is_empty() {
        out.notes.push(format!(
            "{kind} has no metadata.uid (not created yet): names derived from it use {PLACEHOLDER_UID} and differ from the cluster's"
        ));
    }
    Ok(out)
}

/// Decode `doc` into `T` strictly: a field `T` does not have is an error naming its path (see [`strict`]).
fn decode_strict<T: serde::de::DeserializeOwned + serde::Serialize>(doc: &Value, kind: &str) -> Result<T> {
    let typed: T = serde_json::from_value(doc.clone()).with_context(|| format!("decoding the {kind}"))?;
    let unknown = strict::unknown_fields(doc, &serde_json::to_value(&typed)?);
    if !unknown.is_empty() {
        let name = doc
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        bail!("{}", strict::render(kind, name, &unknown));
    }
    Ok(typed)
}

/// A Workload manifest: strictly decoded and checked with kube-apiserver's rules; printed back as checked.
/// Its controller compiles it; `kwas compile` does not.
fn check_workload(doc: &Value) -> Result<Compiled> {
    let workload: Workload = decode_strict(doc, "Workload")?;
    let name = workload.name_any();
    let errs = workloadbuilder::validation::validate_workload(&workload);
    if !errs.is_empty() {
        bail!("{}", kubectl_invalid("Workload", &name, &errs));
    }
    Ok(Compiled {
        objects: vec![to_value(&workload)?],
        notes: vec![format!(
            "Workload {name}: a compiled Workload, checked (strict decoding, the API server's rules) and printed as it is"
        )],
        ..Compiled::default()
    })
}

fn to_value<T: serde::Serialize>(obj: &T) -> Result<Value> {
    Ok(serde_json::to_value(obj)?)
}

fn compile_job(job: &Job) -> Result<Compiled> {
    let mut out = Compiled::default();
    let name = job.name_any();
    match management_mode(job).map_err(|e| anyhow::anyhow!(kubectl_invalid("Job", &name, &e)))? {
        ManagementMode::None(UnmanagedReason::PodTemplateSchedulingGroup) => {
            out.notes.push(format!(
                "Job {name}: its pod template names a PodGroup; the Job controller creates no scheduling objects"
            ));
        }
        ManagementMode::None(UnmanagedReason::ParentManaged) => {
            out.notes.push(format!(
                "Job {name}: its parent controller manages its scheduling objects"
            ));
        }
        ManagementMode::PodGroupOnly(m) => {
            out.notes.push(format!(
                "Job {name}: delegated; its PodGroup is instantiated from template {} of the parent's Workload at run time",
                m.group_template_name
            ));
        }
        ManagementMode::Both => {
            let workload = desired_workload(job, JOB_CONTROLLER_NAME)
                .map_err(|e| anyhow::anyhow!(kubectl_invalid("Job", &name, &e)))?;
            let template = workload
                .spec
                .pod_group_templates
                .as_ref()
                .and_then(|t| t.first())
                .map(|t| t.name.clone())
                .unwrap_or_default();
            let group = desired_root_pod_group(job, &workload, &template, JOB_CONTROLLER_NAME)?;
            out.objects.push(to_value(&workload)?);
            out.objects.push(to_value(&group)?);
        }
    }
    Ok(out)
}

/// The resolved tree of `builder` for the object `kind` `name`, as one document, with its validation errors.
fn resolved_document(api_version: &str, kind: &str, meta: &ObjectMeta, builder: &WorkloadBuilder) -> Result<Compiled> {
    let name = meta.name.clone().unwrap_or_default();
    let (tree, errors) = match builder.validate() {
        Ok(tree) => (tree, FieldErrors::new()),
        // Names are checked before resolution; any other error comes with the resolved tree.
        Err(errs) if errs.iter().any(|e| e.stage() == Some(Stage::Resolve)) => {
            bail!("{}", kubectl_invalid(kind, &name, &errs))
        }
        Err(errs) => (builder.resolve(), errs),
    };
    Ok(Compiled {
        invalid: (!errors.is_empty()).then(|| kubectl_invalid(kind, &name, &errors)),
        resolved: Some(ResolvedDocument {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            name,
            namespace: meta.namespace.clone(),
            tree,
            errors,
        }),
        ..Compiled::default()
    })
}

fn resolve_job(job: &Job) -> Result<Compiled> {
    let name = job.name_any();
    if let ManagementMode::Both =
        management_mode(job).map_err(|e| anyhow::anyhow!(kubectl_invalid("Job", &name, &e)))?
    {
        let builder = workloadbuilder::job::job_workload_builder(job)
            .map_err(|e| anyhow::anyhow!(kubectl_invalid("Job", &name, &e)))?;
        return resolved_document("batch/v1", "Job", &job.metadata, &builder);
    }
    Ok(Compiled {
        notes: vec![format!(
            "Job {name}: its Workload is not its own (a parent's, or none): it has no tree to resolve"
        )],
        ..Compiled::default()
    })
}

fn resolve_jobset(js: &JobSet) -> Result<Compiled> {
    let name = js.name_any();
    let builder = kwas_controllers::jobset::compile::jobset_builder(js)
        .map_err(|e| anyhow::anyhow!(kubectl_invalid("JobSet", &name, &e)))?;
    resolved_document("jobset.x-k8s.io/v1alpha2", "JobSet", &js.metadata, &builder)
}

fn compile_jobset(js: &JobSet, default_management: PodGroupManagement) -> Result<Compiled> {
    let name = js.name_any();
    let workload = kwas_controllers::jobset::compile::desired_workload(js)
        .map_err(|e| anyhow::anyhow!(kubectl_invalid("JobSet", &name, &e)))?;
    let root = desired_root_group(js, &workload)?;
    let management = js
        .spec
        .scheduling
        .as_ref()
        .and_then(|s| s.pod_group_management)
        .unwrap_or(default_management);
    let mut out = Compiled::default();
    out.objects.push(to_value(&workload)?);
    out.objects.push(to_value(&root)?);
    let wiring = ChildWiring {
        management,
        root_group: Some(root_group_name(&workload.name_any())),
        job_managed_by: Some(JOB_CONTROLLER_NAME.to_string()),
        restart_attempt: 0,
    };
    for (i, child) in children(js).into_iter().enumerate() {
        match management {
            PodGroupManagement::Centralized => out
                .objects
                .push(to_value(&desired_child_group(js, &workload, &child)?)?),
            PodGroupManagement::Delegated => {
                let mut job = desired_job(js, &child, &wiring);
                // The child Job does not exist yet: its group's owner gets a placeholder uid of its own.
                job.metadata.uid = Some(child_placeholder_uid(i));
                let mapping = workloadbuilder::DownwardMapping::read(
                    job.metadata.annotations.as_ref().unwrap_or(&Default::default()),
                )
                .map_err(|e| anyhow::anyhow!(e.to_string()))?
                .context("a delegated child Job carries the downward-mapping annotations")?;
                let group = kwas_controllers::job::scheduling::desired_delegated_pod_group(
                    &job,
                    &workload,
                    &mapping,
                    JOB_CONTROLLER_NAME,
                )?;
                out.objects.push(to_value(&group)?);
            }
        }
    }
    Ok(out)
}

/// A JobSet for a cluster without CompositePodGroups: the flat Workload (one PodGroupTemplate per replicated
/// job), then one root PodGroup per child Job: owned by the JobSet (centralized) or by the child Job, whose
/// downward mapping names only the template (delegated).
fn compile_jobset_flat(js: &JobSet, default_management: PodGroupManagement) -> Result<Compiled> {
    let name = js.name_any();
    let workload = kwas_controllers::jobset::compile::desired_flat_workload(js)
        .map_err(|e| anyhow::anyhow!(kubectl_invalid("JobSet", &name, &e)))?;
    let management = js
        .spec
        .scheduling
        .as_ref()
        .and_then(|s| s.pod_group_management)
        .unwrap_or(default_management);
    let mut out = Compiled::default();
    out.objects.push(to_value(&workload)?);
    let wiring = ChildWiring {
        management,
        root_group: None,
        job_managed_by: Some(JOB_CONTROLLER_NAME.to_string()),
        restart_attempt: 0,
    };
    for (i, child) in children(js).into_iter().enumerate() {
        let group = match management {
            PodGroupManagement::Centralized => desired_child_group_under(js, &workload, &child, None)?,
            PodGroupManagement::Delegated => {
                let mut job = desired_job(js, &child, &wiring);
                // The child Job does not exist yet: its group's owner gets a placeholder uid of its own.
                job.metadata.uid = Some(child_placeholder_uid(i));
                let mapping = workloadbuilder::DownwardMapping::new(child.replicated_job.clone());
                kwas_controllers::job::scheduling::desired_delegated_pod_group(
                    &job,
                    &workload,
                    &mapping,
                    JOB_CONTROLLER_NAME,
                )?
            }
        };
        out.objects.push(to_value(&group)?);
    }
    Ok(out)
}

/// Render objects as a multi-document YAML stream.
pub fn to_yaml<T: serde::Serialize>(objects: &[T]) -> Result<String> {
    let mut s = String::new();
    for o in objects {
        s.push_str("---\n");
        s.push_str(&serde_saphyr::to_string(o)?);
        if !s.ends_with('\n') {
            s.push('\n');
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use workloadbuilder::FieldError;

    #[test]
    fn kubectl_rendering() {
        let one: FieldErrors = FieldError::invalid("spec.scheduling.disruptionMode", "", "bad").into();
        assert_eq!(
            kubectl_invalid("Job", "train", &one),
            "The Job \"train\" is invalid: spec.scheduling.disruptionMode: Invalid value: \"\": bad"
        );
        let two: FieldErrors = vec![
            FieldError::required("spec.a", ""),
            FieldError::forbidden("spec.b", "no"),
        ]
        .into();
        assert_eq!(
            kubectl_invalid("Job", "t", &two),
            "The Job \"t\" is invalid: \n* spec.a: Required value\n* spec.b: Forbidden: no"
        );
    }

    #[test]
    fn multi_document_input() {
        let docs = documents("---\napiVersion: v1\nkind: A\n---\n---\napiVersion: v1\nkind: B\n").unwrap();
        assert_eq!(docs.len(), 2);
    }
}

//! `kwas convert`: rewrites manifests of kwas' retired `jobsets.kwas.dev/v1alpha1` JobSets as
//! `jobset.x-k8s.io/v1alpha2` JobSets (the conversion loses nothing: `kwas_api_types::jobset::v1alpha2::convert`),
//! passing every other document through unchanged.

use anyhow::{Context, Result, bail};
use kwas_api_types::jobset::{JobSet, kwas_v1alpha1};
use serde_json::Value;

/// Converts every `kwas.dev/v1alpha1` JobSet in `input` (YAML, several documents allowed); returns the
/// documents as YAML and how many were converted.
pub fn convert(input: &str) -> Result<(String, usize)> {
    let mut out = String::new();
    let mut converted = 0;
    for doc in crate::compile::documents(input)? {
        let api_version = doc.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
        let doc = if (api_version, kind) == ("kwas.dev/v1alpha1", "JobSet") {
            let name = doc
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let old: kwas_v1alpha1::JobSet =
                serde_json::from_value(doc).with_context(|| format!("decoding kwas.dev/v1alpha1 JobSet {name:?}"))?;
            converted += 1;
            let mut new = serde_json::to_value(JobSet::from(old))?;
            if let Some(m) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                // What the API server set on the old object does not carry over to a new one.
                for server in [
                    "uid",
                    "resourceVersion",
                    "generation",
                    "creationTimestamp",
                    "managedFields",
                ] {
                    m.remove(server);
                }
            }
            if let Some(o) = new.as_object_mut() {
                o.remove("status");
            }
            new
        } else {
            doc
        };
        if doc.is_null() {
            continue;
        }
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(&doc)?);
    }
    if out.is_empty() {
        bail!("no documents");
    }
    Ok((out, converted))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kwas_dev_jobset_becomes_a_jobset_x_k8s_io_one_and_others_pass_through() {
        let input = r#"
apiVersion: kwas.dev/v1alpha1
kind: JobSet
metadata: {name: pretrain, namespace: ml, uid: old-uid, resourceVersion: "7"}
spec:
  failurePolicy: {maxRestarts: 2}
  successPolicy: {operator: All, targetReplicatedJobs: [workers]}
  scheduling: {schedulingPolicy: {basic: {}}}
  replicatedJobs:
  - name: workers
    replicas: 2
    template: {spec: {parallelism: 4, template: {spec: {containers: [{name: c, image: i}]}}}}
status: {restarts: 1}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: keep}
"#;
        let (out, n) = convert(input).unwrap();
        assert_eq!(n, 1);
        let docs = crate::compile::documents(&out).unwrap();
        assert_eq!(docs.len(), 2);
        let js = &docs[0];
        assert_eq!(js["apiVersion"], "jobset.x-k8s.io/v1alpha2");
        assert_eq!(js["kind"], "JobSet");
        assert_eq!(js["metadata"]["name"], "pretrain");
        assert!(js["metadata"].get("uid").is_none() && js.get("status").is_none());
        assert_eq!(js["spec"]["failurePolicy"]["maxRestarts"], 2);
        assert_eq!(js["spec"]["replicatedJobs"][0]["replicas"], 2);
        assert_eq!(
            js["spec"]["scheduling"]["schedulingPolicy"],
            serde_json::json!({"basic": {}})
        );
        let typed: JobSet = serde_json::from_value(js.clone()).unwrap();
        assert_eq!(
            typed.spec.replicated_jobs[0]
                .template
                .spec
                .as_ref()
                .unwrap()
                .parallelism,
            Some(4)
        );
        assert_eq!(docs[1]["kind"], "ConfigMap");
    }

    #[test]
    fn an_undecodable_kwas_dev_jobset_is_an_error_naming_it() {
        let err =
            convert("apiVersion: kwas.dev/v1alpha1\nkind: JobSet\nmetadata: {name: bad}\nspec: {replicatedJobs: 5}\n")
                .unwrap_err();
        assert!(format!("{err:#}").contains("\"bad\""), "{err:#}");
    }
}

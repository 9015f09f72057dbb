//! OpenAPI v3 documents: the index at `/openapi/v3` and one document per group version with the
//! resource paths, their operations, `x-kubernetes-group-version-kind` and the query parameters they
//! accept.
//!
//! This is what kubectl 1.37 reads before writing: it looks for the `fieldValidation` parameter on a
//! kind's PATCH operation to decide that the server validates fields itself (then it sends
//! `fieldValidation=Strict` and skips client-side schema validation, which would need the full
//! `/openapi/v2` schema), and it looks at the PATCH request content types to decide how client-side
//! `apply` computes its patch. The PATCH operations list JSON patch, merge patch and apply patch but not
//! strategic merge patch, so kubectl computes strategic merge patches for built-in kinds from its compiled
//! types (the same list merge keys upstream uses) and JSON merge patches for custom resources, and never
//! needs the schema components. Object schemas are not published (`kubectl explain` has nothing to show),
//! and `/openapi/v2` is not served.

use serde_json::{Map, Value, json};

use crate::resource::{Registry, ResourceInfo};

fn gv_paths(registry: &Registry) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for g in registry.groups() {
        let (versions, _) = registry.group_versions(&g);
        for v in versions {
            let path = if g.is_empty() {
                format!("api/{v}")
            } else {
                format!("apis/{g}/{v}")
            };
            out.push((path, g.clone(), v));
        }
    }
    out
}

fn hash_of(v: &Value) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in v.to_string().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016X}")
}

/// `/openapi/v3`: the group versions and where their documents are.
pub fn v3_index(registry: &Registry) -> Option<Value> {
    let mut paths = Map::new();
    for (path, g, v) in gv_paths(registry) {
        let doc = document(registry, &g, &v);
        paths.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={}", hash_of(&doc))}),
        );
    }
    Some(json!({"paths": paths}))
}

/// `/openapi/v3/api/v1`, `/openapi/v3/apis/<group>/<version>`.
pub fn v3_document(registry: &Registry, path: &str) -> Option<Value> {
    let (g, v) = match path.split('/').collect::<Vec<_>>().as_slice() {
        ["api", v] => (String::new(), (*v).to_string()),
        ["apis", g, v] => ((*g).to_string(), (*v).to_string()),
        _ => return None,
    };
    if !registry.serves_group_version(&g, &v) {
        return None;
    }
    Some(document(registry, &g, &v))
}

fn param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": "string", "uniqueItems": true}})
}

fn operation(r: &ResourceInfo, action: &str, params: Vec<Value>, body: Option<Vec<&str>>) -> Value {
    let gvk = json!({"group": r.group, "version": r.version, "kind": r.kind});
    let schema_ref = json!({"$ref": format!("#/components/schemas/{}", schema_name(r))});
    let mut op = json!({
        "description": format!("{action} {}", r.kind),
        "operationId": format!("{action}{}", r.kind),
        "parameters": params,
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": schema_ref}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
    });
    if let Some(types) = body {
        let content: Map<String, Value> = types
            .into_iter()
            .map(|t| (t.to_string(), json!({"schema": {"type": "object"}})))
            .collect();
        op["requestBody"] = json!({"content": content, "required": true});
    }
    op
}

fn schema_name(r: &ResourceInfo) -> String {
    let group = if r.group.is_empty() {
        "core".to_string()
    } else {
        r.group.clone()
    };
    format!("{group}.{}.{}", r.version, r.kind)
}

fn document(registry: &Registry, group: &str, version: &str) -> Value {
    let write = || {
        vec![
            param(
                "dryRun",
                "When present, indicates that modifications should not be persisted.",
            ),
            param(
                "fieldManager",
                "fieldManager is a name associated with the actor or entity that is making these changes.",
            ),
            param(
                "fieldValidation",
                "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields: Ignore, Warn (default) or Strict.",
            ),
        ]
    };
    let mut paths = Map::new();
    let mut schemas = Map::new();
    let prefix = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    for r in registry.resources_in(group, version) {
        let base = if r.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", r.plural)
        } else {
            format!("{prefix}/{}", r.plural)
        };
        let mut patch_params = write();
        patch_params.push(param("force", "Force is going to \"force\" Apply requests."));
        let patch_types = vec![
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ];
        paths.insert(
            base.clone(),
            json!({
                "get": operation(&r, "list", vec![param("labelSelector", ""), param("fieldSelector", ""), param("limit", ""), param("continue", ""), param("resourceVersion", ""), param("watch", "")], None),
                "post": operation(&r, "post", write(), Some(vec!["application/json", "application/yaml"])),
                "delete": operation(&r, "deletecollection", vec![param("labelSelector", ""), param("fieldSelector", ""), param("propagationPolicy", "")], Some(vec!["application/json"])),
            }),
        );
        paths.insert(
            format!("{base}/{{name}}"),
            json!({
                "get": operation(&r, "get", vec![], None),
                "put": operation(&r, "put", write(), Some(vec!["application/json", "application/yaml"])),
                "patch": operation(&r, "patch", patch_params.clone(), Some(patch_types.clone())),
                "delete": operation(&r, "delete", vec![param("gracePeriodSeconds", ""), param("propagationPolicy", ""), param("dryRun", "")], Some(vec!["application/json"])),
            }),
        );
        if r.status_subresource {
            paths.insert(
                format!("{base}/{{name}}/status"),
                json!({
                    "get": operation(&r, "get", vec![], None),
                    "put": operation(&r, "put", write(), Some(vec!["application/json"])),
                    "patch": operation(&r, "patch", patch_params, Some(patch_types)),
                }),
            );
        }
        schemas.insert(
            schema_name(&r),
            json!({
                "description": format!("{} is served by kwas devcluster; its schema is not published.", r.kind),
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": true,
                "x-kubernetes-group-version-kind": [{"group": r.group, "version": r.version, "kind": r.kind}],
            }),
        );
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": crate::KUBE_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_operations_advertise_field_validation_without_strategic_merge() {
        let reg = Registry::new(crate::kinds::builtin_resources());
        let index = v3_index(&reg).unwrap();
        assert!(
            index["paths"]["apis/scheduling.k8s.io/v1alpha3"]["serverRelativeURL"]
                .as_str()
                .unwrap()
                .starts_with("/openapi/v3/apis/scheduling.k8s.io/v1alpha3?hash=")
        );
        let doc = v3_document(&reg, "api/v1").unwrap();
        let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Pod");
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        assert!(
            patch["requestBody"]["content"]
                .get("application/strategic-merge-patch+json")
                .is_none()
        );
        assert!(v3_document(&reg, "apis/nope/v1").is_none());
    }
}

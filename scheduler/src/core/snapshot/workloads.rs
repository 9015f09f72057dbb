//! Workloads' template trees, for KEP-6012's Beta check that a runtime group tree matches the Workload
//! it was created from (see `hierarchy`).

use std::collections::HashMap;

use kwas_api_types::v1alpha3::{CompositePodGroupTemplate, PodGroupTemplate, Workload};

use super::Snapshot;

/// One template of a Workload: its kind, policy, disruption mode and parent template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TemplateShape {
    pub composite: bool,
    pub gang: bool,
    pub all: bool,
    pub parent: Option<String>,
}

fn leaf(t: &PodGroupTemplate, parent: Option<&str>, out: &mut HashMap<String, TemplateShape>) {
    out.insert(
        t.name.clone(),
        TemplateShape {
            composite: false,
            gang: t.scheduling_policy.gang.is_some(),
            all: t.disruption_mode.as_ref().is_some_and(|d| d.all.is_some()),
            parent: parent.map(str::to_string),
        },
    );
}

fn composite(
    t: &CompositePodGroupTemplate,
    parent: Option<&str>,
    out: &mut HashMap<String, TemplateShape>,
    depth: usize,
) {
    out.insert(
        t.name.clone(),
        TemplateShape {
            composite: true,
            gang: t.scheduling_policy.gang.is_some(),
            all: t.disruption_mode.as_ref().is_some_and(|d| d.all.is_some()),
            parent: parent.map(str::to_string),
        },
    );
    if depth > 8 {
        return;
    }
    for c in t.pod_group_templates.iter().flatten() {
        leaf(c, Some(&t.name), out);
    }
    for c in t.composite_pod_group_templates.iter().flatten() {
        composite(c, Some(&t.name), out, depth + 1);
    }
}

impl Snapshot {
    /// Adds or updates a Workload (its template tree).
    pub fn upsert_workload(&mut self, w: &Workload) {
        let ns = w.metadata.namespace.clone().unwrap_or_else(|| "default".into());
        let name = w.metadata.name.clone().unwrap_or_default();
        let mut templates = HashMap::new();
        for t in w.spec.pod_group_templates.iter().flatten() {
            leaf(t, None, &mut templates);
        }
        for t in w.spec.composite_pod_group_templates.iter().flatten() {
            composite(t, None, &mut templates, 1);
        }
        self.workloads.insert((ns, name), templates);
    }

    /// Removes a Workload.
    pub fn remove_workload(&mut self, namespace: &str, name: &str) {
        self.workloads.remove(&(namespace.to_string(), name.to_string()));
    }

    /// A template of a Workload, if the Workload is known.
    pub(crate) fn workload_template(
        &self,
        namespace: &str,
        workload: &str,
        template: &str,
    ) -> Option<Option<&TemplateShape>> {
        self.workloads
            .get(&(namespace.to_string(), workload.to_string()))
            .map(|t| t.get(template))
    }
}

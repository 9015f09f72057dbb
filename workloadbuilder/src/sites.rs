//! Where each item of a tree sits: its names from the root, the path of the template it compiles to, the path
//! of its configuration in the controller's API, its depth. Computed only when something has to be reported,
//! so a valid build allocates none of it.

use crate::field::FieldPath;
use crate::types::{ResolvedItem, WorkloadItem};

/// A node of a tree the builder walks: a [`WorkloadItem`] before resolution, a [`ResolvedItem`] after.
pub(crate) trait Node: Sized {
    fn node_name(&self) -> &str;
    fn node_children(&self) -> &[Self];
    fn node_config_path(&self) -> Option<&FieldPath>;
    fn node_name_path(&self) -> Option<&FieldPath>;
}

impl Node for WorkloadItem {
    fn node_name(&self) -> &str {
        &self.name
    }
    fn node_children(&self) -> &[Self] {
        &self.children
    }
    fn node_config_path(&self) -> Option<&FieldPath> {
        self.config_path.as_ref()
    }
    fn node_name_path(&self) -> Option<&FieldPath> {
        self.name_path.as_ref()
    }
}

impl Node for ResolvedItem {
    fn node_name(&self) -> &str {
        &self.name
    }
    fn node_children(&self) -> &[Self] {
        &self.children
    }
    fn node_config_path(&self) -> Option<&FieldPath> {
        self.config_path.as_ref()
    }
    fn node_name_path(&self) -> Option<&FieldPath> {
        self.name_path.as_ref()
    }
}

/// One item's place in the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Site {
    /// The names from the root to the item (the root's first).
    pub names: Vec<String>,
    /// The path of the template the item compiles to in the nested Workload
    /// (`spec.compositePodGroupTemplates[0].podGroupTemplates[1]`).
    pub template: FieldPath,
    /// The item's `config_path`, if the controller set one.
    pub config: Option<FieldPath>,
    /// The item's `name_path`, if the controller set one.
    pub name: Option<FieldPath>,
    /// 0 for the root.
    pub depth: usize,
    /// True when the item has no children.
    pub leaf: bool,
}

/// True when `field` is `prefix` or lies under it (`prefix.x`, `prefix[0]`).
fn is_under(field: &str, prefix: &str) -> bool {
    match field.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with('.') || rest.starts_with('['),
        None => false,
    }
}

/// The item an error at `field` is about: the one whose template path or config path is the longest prefix
/// of `field` (the deepest item; with identical config paths, the first in pre-order).
pub(crate) fn site_of<'s>(sites: &'s [Site], field: &FieldPath) -> Option<&'s Site> {
    let mut best: Option<(&Site, usize)> = None;
    for site in sites {
        for path in std::iter::once(&site.template)
            .chain(site.config.as_ref())
            .chain(site.name.as_ref())
        {
            let len = path.as_str().len();
            if is_under(field.as_str(), path.as_str()) && best.is_none_or(|(_, l)| len > l) {
                best = Some((site, len));
            }
        }
    }
    best.map(|(site, _)| site)
}

/// The path of the template a root compiles to: `spec.podGroupTemplates[0]` for a leaf,
/// `spec.compositePodGroupTemplates[0]` otherwise.
pub(crate) fn root_template(leaf: bool) -> FieldPath {
    let list = if leaf {
        "podGroupTemplates"
    } else {
        "compositePodGroupTemplates"
    };
    FieldPath::new("spec").child(list).index(0)
}

/// Every item's site, in pre-order (the root first, children in order).
pub(crate) fn sites<N: Node>(root: &N) -> Vec<Site> {
    let mut out = Vec::new();
    let leaf = root.node_children().is_empty();
    walk(root, root_template(leaf), Vec::new(), 0, &mut out);
    out
}

fn walk<N: Node>(item: &N, template: FieldPath, mut names: Vec<String>, depth: usize, out: &mut Vec<Site>) {
    names.push(item.node_name().to_string());
    let children = item.node_children();
    out.push(Site {
        names: names.clone(),
        template: template.clone(),
        config: item.node_config_path().cloned(),
        name: item.node_name_path().cloned(),
        depth,
        leaf: children.is_empty(),
    });
    let (mut leaves, mut composites) = (0usize, 0usize);
    for child in children {
        let path = if child.node_children().is_empty() {
            let i = leaves;
            leaves = leaves.saturating_add(1);
            template.child("podGroupTemplates").index(i)
        } else {
            let i = composites;
            composites = composites.saturating_add(1);
            template.child("compositePodGroupTemplates").index(i)
        };
        walk(child, path, names.clone(), depth.saturating_add(1), out);
    }
}

/// True when some item of the tree has an empty name (checked without allocating).
pub(crate) fn any_empty_name<N: Node>(root: &N) -> bool {
    root.node_name().is_empty() || root.node_children().iter().any(any_empty_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sites_follow_the_nested_template_lists() {
        let root = WorkloadItem::new("root")
            .with_child(WorkloadItem::new("a"))
            .with_child(WorkloadItem::new("mid").with_child(WorkloadItem::new("b")))
            .with_child(WorkloadItem::new("c").with_config_path("spec.c"));
        let s = sites(&root);
        let got: Vec<(String, &str, usize, bool)> = s
            .iter()
            .map(|s| (s.names.join("/"), s.template.as_str(), s.depth, s.leaf))
            .collect();
        assert_eq!(
            got,
            [
                ("root".to_string(), "spec.compositePodGroupTemplates[0]", 0, false),
                (
                    "root/a".to_string(),
                    "spec.compositePodGroupTemplates[0].podGroupTemplates[0]",
                    1,
                    true
                ),
                (
                    "root/mid".to_string(),
                    "spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0]",
                    1,
                    false
                ),
                (
                    "root/mid/b".to_string(),
                    "spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0].podGroupTemplates[0]",
                    2,
                    true
                ),
                (
                    "root/c".to_string(),
                    "spec.compositePodGroupTemplates[0].podGroupTemplates[1]",
                    1,
                    true
                ),
            ]
        );
        assert_eq!(s[4].config.as_ref().map(FieldPath::as_str), Some("spec.c"));
        assert_eq!(
            sites(&WorkloadItem::new("leaf"))[0].template.as_str(),
            "spec.podGroupTemplates[0]"
        );
    }

    #[test]
    fn errors_are_attributed_to_the_deepest_item_whose_path_they_are_under() {
        let root = WorkloadItem::new("root")
            .with_config_path("spec.scheduling")
            .with_child(WorkloadItem::new("a").with_config_path("spec.scheduling.policies[0]"))
            .with_child(WorkloadItem::new("mid").with_child(WorkloadItem::new("b")));
        let s = sites(&root);
        let of = |f: &str| site_of(&s, &FieldPath::from(f)).map(|s| s.names.join("/"));
        assert_eq!(of("spec.scheduling.schedulingPolicy").as_deref(), Some("root"));
        assert_eq!(of("spec.scheduling").as_deref(), Some("root"));
        assert_eq!(
            of("spec.scheduling.policies[0].disruptionMode").as_deref(),
            Some("root/a")
        );
        // `policies[1]` is not under `policies[0]`, and `spec.schedulingX` not under `spec.scheduling`.
        assert_eq!(of("spec.scheduling.policies[1]").as_deref(), Some("root"));
        assert_eq!(of("spec.schedulingX"), None);
        assert_eq!(
            of("spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0].podGroupTemplates[0].name").as_deref(),
            Some("root/mid/b")
        );
        assert_eq!(
            of("spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0]").as_deref(),
            Some("root/mid")
        );
        assert_eq!(of("metadata.name"), None);
    }

    #[test]
    fn empty_names_are_found_at_any_depth() {
        assert!(!any_empty_name(
            &WorkloadItem::new("a").with_child(WorkloadItem::new("b"))
        ));
        assert!(any_empty_name(&WorkloadItem::new("")));
        let deep = WorkloadItem::new("a").with_child(WorkloadItem::new("b").with_child(WorkloadItem::new("")));
        assert!(any_empty_name(&deep));
    }
}

//! Every crate of the workspace is layered: no module imports (through `crate::` paths) a module that
//! imports it back, at the top level or one level down. The scheduler and devcluster also check their
//! declared layer order in their own tests.

use kwas_test_tools::run::repo_root;
use kwas_test_tools::source::{cycles, module_edges};

pub(crate) const CRATES: &[&str] = &[
    "api-types",
    "cel",
    "workloadbuilder",
    "scheduler",
    "controllers",
    "devcluster",
    "cli",
    "stack",
    "shell",
    "tests",
    "test-tools",
    "examples/lws-controller",
];

#[test]
fn no_crate_has_an_import_cycle_between_its_modules() {
    let root = repo_root();
    let mut found = Vec::new();
    for krate in CRATES {
        for depth in [1, 2] {
            for cycle in cycles(&module_edges(&root.join(krate), depth)) {
                found.push(format!("{krate} (depth {depth}): {}", cycle.join(" -> ")));
            }
        }
    }
    assert!(found.is_empty(), "import cycles:\n{}", found.join("\n"));
}

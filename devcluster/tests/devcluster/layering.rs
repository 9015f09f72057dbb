//! The crate's layering, read from its source: the module map in `src/lib.rs` gives every top-level
//! module a layer, each `use crate::` edge (and `crate::` path in code) must go to a lower layer, and the
//! module graph has no cycle. Run with the hardening suite; reads files only.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `module -> layer` from the rows of the `## Module map` table in `src/lib.rs`'s docs
/// (`//! | 3 | `work` | ... |`).
fn declared_layers() -> BTreeMap<String, u32> {
    let lib = std::fs::read_to_string(crate_dir().join("src/lib.rs")).expect("src/lib.rs");
    let mut layers = BTreeMap::new();
    let mut in_map = false;
    for line in lib.lines() {
        let Some(doc) = line.strip_prefix("//!") else { continue };
        let doc = doc.trim();
        if doc.starts_with("## ") {
            in_map = doc == "## Module map";
            continue;
        }
        if !in_map || !doc.starts_with('|') {
            continue;
        }
        let cells: Vec<&str> = doc.split('|').map(str::trim).collect();
        let (Some(layer), Some(module)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        let Ok(layer) = layer.parse::<u32>() else { continue };
        let module = module.trim_matches('`').trim_end_matches('/').to_string();
        assert!(
            layers.insert(module.clone(), layer).is_none(),
            "module {module} listed twice in the module map"
        );
    }
    layers
}

/// The top-level modules on disk: `src/<name>.rs` and `src/<name>/mod.rs` (the crate roots aside).
fn modules_on_disk() -> BTreeSet<String> {
    let src = crate_dir().join("src");
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(&src).expect("src/") {
        let path = entry.expect("entry").path();
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("").to_string();
        let module_dir = path.is_dir() && path.join("mod.rs").exists();
        let module_file = path.extension().is_some_and(|e| e == "rs") && name != "lib" && name != "main";
        if module_dir || module_file {
            out.insert(name);
        }
    }
    out
}

/// The files of a top-level module.
fn files_of(module: &str) -> Vec<PathBuf> {
    let src = crate_dir().join("src");
    let mut out = Vec::new();
    let file = src.join(format!("{module}.rs"));
    if file.exists() {
        out.push(file);
    }
    let mut dirs = vec![src.join(module)];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Where `from` names `to`: the files of `from` that mention `crate::<to>` (or `super::<to>`).
fn where_used(from: &str, to: &str) -> Vec<String> {
    let needles = [format!("crate::{to}"), format!("super::{to}")];
    files_of(from)
        .into_iter()
        .filter(|f| std::fs::read_to_string(f).is_ok_and(|text| needles.iter().any(|n| text.contains(n.as_str()))))
        .map(|f| f.strip_prefix(crate_dir()).unwrap_or(&f).display().to_string())
        .collect()
}

#[test]
fn the_module_map_lists_every_module_with_a_layer() {
    let declared: BTreeSet<String> = declared_layers().into_keys().collect();
    let on_disk = modules_on_disk();
    let missing: Vec<_> = on_disk.difference(&declared).collect();
    let gone: Vec<_> = declared.difference(&on_disk).collect();
    assert!(
        missing.is_empty() && gone.is_empty(),
        "src/lib.rs's module map is not the modules on disk: not listed {missing:?}, listed but absent {gone:?}"
    );
}

#[test]
fn every_edge_goes_down_the_declared_layers_and_there_is_no_cycle() {
    let layers = declared_layers();
    let edges = kwas_test_tools::source::module_edges(crate_dir(), 1);
    let mut upward = Vec::new();
    for (from, targets) in &edges {
        let Some(&lf) = layers.get(from) else {
            upward.push(format!("{from} has no layer in the module map"));
            continue;
        };
        for to in targets {
            let Some(&lt) = layers.get(to) else {
                upward.push(format!("{to} (used by {from}) has no layer in the module map"));
                continue;
            };
            if lt >= lf {
                upward.push(format!(
                    "{from} (layer {lf}) -> {to} (layer {lt}) in {}",
                    where_used(from, to).join(", ")
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "edges that do not go down the layers of src/lib.rs's module map:\n{}",
        upward.join("\n")
    );
    let cycles = kwas_test_tools::source::cycles(&edges);
    assert!(cycles.is_empty(), "module cycles: {cycles:?}");
}

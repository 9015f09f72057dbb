//! The crate's shape, kept deliberate: modules only use the modules below them in the layer table of
//! the crate docs (`src/lib.rs`), which lists every module on disk; the module graph has no cycle; and
//! the public surface is a reviewed snapshot.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use kwas_test_tools::source::{cycles, module_edges, public_api};

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The modules of the layer table in the crate docs, lowest first.
fn declared_layers() -> Vec<String> {
    let lib = std::fs::read_to_string(crate_dir().join("src/lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| l.strip_prefix("//! | `"))
        .filter_map(|l| l.split_once('`').map(|(m, _)| m.to_string()))
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every module on disk (`core/dra/mod.rs` is `core::dra`), without the crate root and the unit-test
/// files (`tests.rs`).
fn modules_on_disk() -> BTreeSet<String> {
    let src = crate_dir().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .iter()
        .filter_map(|f| {
            let rel = f.strip_prefix(&src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            match parts.last().map(String::as_str) {
                Some("lib" | "tests") => return None,
                Some("mod") => {
                    parts.pop();
                }
                _ => {}
            }
            Some(parts.join("::"))
        })
        .collect()
}

#[test]
fn the_layer_table_lists_every_module_once() {
    let declared = declared_layers();
    let set: BTreeSet<String> = declared.iter().cloned().collect();
    assert_eq!(set.len(), declared.len(), "a module is listed twice: {declared:?}");
    let disk = modules_on_disk();
    let missing: Vec<_> = disk.difference(&set).collect();
    let stale: Vec<_> = set.difference(&disk).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "src/lib.rs's layer table: missing {missing:?}, not on disk {stale:?}"
    );
}

#[test]
fn no_module_uses_a_module_above_it() {
    let declared = declared_layers();
    let layer = |m: &str| declared.iter().position(|d| d == m);
    let edges = module_edges(crate_dir(), usize::MAX);
    let mut up = Vec::new();
    for (from, tos) in &edges {
        for to in tos {
            match (layer(from), layer(to)) {
                (Some(f), Some(t)) if t < f => {}
                _ => up.push(format!("{from} -> {to}")),
            }
        }
    }
    assert!(
        up.is_empty(),
        "edges going up (or to a module missing from the layer table in src/lib.rs):\n{}",
        up.join("\n")
    );
    for depth in [1, 2, usize::MAX] {
        let c = cycles(&module_edges(crate_dir(), depth));
        assert!(c.is_empty(), "module cycles at depth {depth}: {c:?}");
    }
}

/// The core's own modules name what they use by its module, not through `core`'s re-exports (which the
/// edge reader cannot follow, so such a use would hide an edge).
#[test]
fn core_modules_do_not_use_the_core_re_exports() {
    let core = crate_dir().join("src/core");
    let mut files = Vec::new();
    rust_files(&core, &mut files);
    let mut found = Vec::new();
    for f in files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if name == "testing.rs" || name == "tests.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let production = text.split("#[cfg(test)]").next().unwrap_or_default();
        let top_level = f.parent() == Some(core.as_path()) && name != "mod.rs";
        for (n, line) in production.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            let via_crate = line
                .match_indices("crate::core::")
                .any(|(i, m)| line[i + m.len()..].starts_with(|c: char| c.is_ascii_uppercase() || c == '{'));
            let via_super = top_level
                && line
                    .match_indices("super::")
                    .any(|(i, m)| line[i + m.len()..].starts_with(|c: char| c.is_ascii_uppercase() || c == '{'));
            if via_crate || via_super {
                found.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "uses of core's re-exports inside core:\n{}",
        found.join("\n")
    );
}

/// Every public name of the crate (release build: `core::testing` is behind the `testing` feature), so
/// that each change to the surface shows up in review.
#[test]
fn the_public_surface_is_deliberate() {
    let api = public_api(crate_dir());
    insta::assert_snapshot!("public_api", api.join("\n"));
}

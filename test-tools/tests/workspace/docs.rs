//! The documentation's maps against the files on disk: every relative link of every Markdown file resolves
//! (and its `#anchor` names a heading of the target), every source path a crate's README names exists, and
//! the crates with a module map list every module they have.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use kwas_test_tools::run::repo_root;

/// Markdown files of the repository (not build outputs or tool caches).
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if path.is_dir() {
            if !matches!(name.as_str(), "target" | ".git" | ".venv" | "node_modules") && !name.starts_with('.') {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut in_code = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            out.insert(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// The targets of `[text](target)` links outside code blocks.
fn links(text: &str) -> Vec<String> {
    let mut in_code = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_of_the_documentation_resolves() {
    let root = repo_root();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    assert!(
        files.len() > 5,
        "found {} Markdown files under {}",
        files.len(),
        root.display()
    );
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for link in links(&text) {
            if link.starts_with("http://") || link.starts_with("https://") || link.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = link.split_once('#').unwrap_or((link.as_str(), ""));
            let target = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap_or(&root).join(path)
            };
            let shown = format!("{}: ({link})", file.strip_prefix(&root).unwrap_or(file).display());
            if !target.exists() {
                broken.push(format!("{shown}: no such file"));
                continue;
            }
            let inside = root
                .canonicalize()
                .is_ok_and(|r| target.canonicalize().is_ok_and(|t| t.starts_with(r)));
            if !inside {
                broken.push(format!("{shown}: outside the repository"));
            }
            if !anchor.is_empty() && target.extension().is_some_and(|e| e == "md") {
                let headings = anchors(&std::fs::read_to_string(&target).unwrap_or_default());
                if !headings.contains(anchor) {
                    broken.push(format!("{shown}: no heading #{anchor}"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// Backticked tokens that look like source paths (`runtime/engine/`, `core/cycle.rs`).
fn source_paths(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| {
            !t.contains(' ')
                && !t.contains("::")
                && !t.starts_with('-')
                // Build outputs are not sources: a clean checkout has none.
                && !t.starts_with("target/")
                && (t.ends_with(".rs") || (t.ends_with('/') && t.len() > 1))
        })
        .map(str::to_string)
        .collect()
}

/// Every file (`a/b.rs`) and folder (`a/`) under `dir`, relative to `base`.
fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let rel = path.strip_prefix(base).unwrap_or(&path).to_string_lossy().to_string();
        if path.is_dir() {
            if !matches!(entry.file_name().to_str(), Some("target" | ".git")) {
                // Git keeps no empty directory: one here exists on this disk
                // only, not on a clean checkout, so it names nothing.
                let mut inside = Vec::new();
                walk(base, &path, &mut inside);
                if !inside.is_empty() {
                    out.push(format!("{rel}/"));
                    out.extend(inside);
                }
            }
        } else {
            out.push(rel);
        }
    }
}

/// A file, or a directory holding at least one file (what a clean checkout has).
fn tracked_on_disk(path: &std::path::Path) -> bool {
    if path.is_file() {
        return true;
    }
    let mut inside = Vec::new();
    walk(path, path, &mut inside);
    !inside.is_empty()
}

#[test]
fn every_source_path_a_crate_readme_names_exists() {
    let root = repo_root();
    let mut missing = Vec::new();
    for krate in [
        "scheduler",
        "devcluster",
        "controllers",
        "workloadbuilder",
        "cel",
        "cli",
        "api-types",
    ] {
        let readme = root.join(krate).join("README.md");
        let Ok(text) = std::fs::read_to_string(&readme) else {
            continue;
        };
        let mut on_disk = Vec::new();
        walk(&root.join(krate), &root.join(krate), &mut on_disk);
        for path in source_paths(&text) {
            let wanted = path.trim_start_matches("./");
            let found = on_disk
                .iter()
                .any(|p| p == wanted || p.ends_with(&format!("/{wanted}")))
                || tracked_on_disk(&root.join(wanted));
            if !found {
                missing.push(format!("{krate}/README.md: `{path}`"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths named but not on disk:\n{}",
        missing.join("\n")
    );
}

/// The modules of a folder: `x.rs` files (not `mod.rs`, `lib.rs`, `main.rs`) and folders with Rust files.
fn modules_in(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let path = entry.path();
        if path.is_dir() {
            if path.join("mod.rs").exists() || dir.join(format!("{name}.rs")).exists() {
                out.push(name);
            }
        } else if let Some(stem) = name.strip_suffix(".rs")
            && !matches!(stem, "mod" | "lib" | "main")
            && !out.contains(&stem.to_string())
        {
            out.push(stem.to_string());
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn the_module_maps_list_every_module_on_disk() {
    let root = repo_root();
    // (crate, folders under src/ whose modules the map lists)
    let maps: [(&str, &[&str]); 2] = [("scheduler", &["", "core", "runtime"]), ("devcluster", &[""])];
    let mut unlisted = Vec::new();
    for (krate, folders) in maps {
        let mut text = std::fs::read_to_string(root.join(krate).join("README.md")).unwrap_or_default();
        text.push_str(&std::fs::read_to_string(root.join(krate).join("src/lib.rs")).unwrap_or_default());
        let named: BTreeSet<String> = text
            .split('`')
            .skip(1)
            .step_by(2)
            .flat_map(|t| {
                t.split(['/', ':'])
                    .map(|p| p.trim_end_matches(".rs").to_string())
                    .collect::<Vec<_>>()
            })
            .collect();
        for folder in folders {
            for module in modules_in(&root.join(krate).join("src").join(folder)) {
                if !named.contains(&module) {
                    unlisted.push(format!("{krate}: {folder}/{module}"));
                }
            }
        }
    }
    assert!(
        unlisted.is_empty(),
        "modules missing from their crate's module map (README.md or lib.rs docs):\n{}",
        unlisted.join("\n")
    );
}

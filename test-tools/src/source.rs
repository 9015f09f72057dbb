//! Reading a crate's own source, for the tests that keep its shape deliberate: the public API
//! ([`public_api`]: every public name a user can reach, for a snapshot test that makes each change to the
//! surface show up in review) and the module graph ([`module_edges`]: which module uses which, for a test
//! that fails on a back-edge against a declared layer order).
//!
//! Both parse the source with `syn`, following `mod` declarations from `src/lib.rs`; items under
//! `#[cfg(test)]` are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::{Item, Visibility};

/// One module of a crate: its path (`core::dra`), its file, its items.
struct Module {
    path: Vec<String>,
    items: Vec<Item>,
    /// Whether every module on the way to it is public.
    public: bool,
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta.require_list().is_ok_and(|l| {
                l.tokens
                    .to_string()
                    .split(|c: char| !c.is_alphanumeric())
                    .any(|t| t == "test")
            })
    })
}

fn is_pub(v: &Visibility) -> bool {
    matches!(v, Visibility::Public(_))
}

/// Every module of the crate at `crate_dir`, from `src/lib.rs` (or `src/main.rs`).
fn modules(crate_dir: &Path) -> Vec<Module> {
    let src = crate_dir.join("src");
    let root = if src.join("lib.rs").exists() {
        src.join("lib.rs")
    } else {
        src.join("main.rs")
    };
    let mut out = Vec::new();
    load(&root, &src, Vec::new(), true, &mut out);
    out
}

fn load(file: &Path, dir: &Path, path: Vec<String>, public: bool, out: &mut Vec<Module>) {
    let Ok(text) = std::fs::read_to_string(file) else {
        return;
    };
    let Ok(parsed) = syn::parse_file(&text) else {
        return;
    };
    walk(parsed.items, file, dir, path, public, out);
}

fn walk(items: Vec<Item>, file: &Path, dir: &Path, path: Vec<String>, public: bool, out: &mut Vec<Module>) {
    for item in &items {
        let Item::Mod(m) = item else { continue };
        if is_test(&m.attrs) {
            continue;
        }
        let name = m.ident.to_string();
        let mut child = path.clone();
        child.push(name.clone());
        let child_public = public && is_pub(&m.vis);
        // A module's children live next to it: `a.rs` -> `a/b.rs`; `a/mod.rs` or `lib.rs` -> `a/b.rs`.
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let here = if matches!(stem, "lib" | "main" | "mod") {
            dir.to_path_buf()
        } else {
            dir.join(stem)
        };
        match &m.content {
            Some((_, inner)) => walk(inner.clone(), file, &here.join(&name), child, child_public, out),
            None => {
                let custom = m.attrs.iter().find_map(|a| {
                    if !a.path().is_ident("path") {
                        return None;
                    }
                    match &a.meta {
                        syn::Meta::NameValue(nv) => match &nv.value {
                            syn::Expr::Lit(syn::ExprLit {
                                lit: syn::Lit::Str(s), ..
                            }) => Some(here.join(s.value())),
                            _ => None,
                        },
                        _ => None,
                    }
                });
                let candidates: Vec<PathBuf> = match custom {
                    Some(p) => vec![p],
                    None => vec![here.join(format!("{name}.rs")), here.join(&name).join("mod.rs")],
                };
                if let Some(f) = candidates.into_iter().find(|p| p.exists()) {
                    let child_dir = if f.file_name().and_then(|n| n.to_str()) == Some("mod.rs") {
                        f.parent().map(Path::to_path_buf).unwrap_or_default()
                    } else {
                        here.clone()
                    };
                    load(&f, &child_dir, child, child_public, out);
                }
            }
        }
    }
    out.push(Module { path, items, public });
}

fn joined(path: &[String], name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{}::{name}", path.join("::"))
    }
}

fn use_names(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(String, String)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_names(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => out.push((n.ident.to_string(), prefix.join("::"))),
        syn::UseTree::Rename(r) => out.push((r.rename.to_string(), format!("{}::{}", prefix.join("::"), r.ident))),
        syn::UseTree::Glob(_) => out.push(("*".to_string(), prefix.join("::"))),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_names(t, prefix, out);
            }
        }
    }
}

/// Every public name of the crate at `crate_dir`, sorted, one per line: items of public modules
/// (`mod`, `fn`, `struct`, `enum`, `trait`, `type`, `const`, `static`, `macro`), public inherent methods
/// and associated constants of their types (`Type::method`), and `pub use` re-exports (`name (= path)`).
pub fn public_api(crate_dir: &Path) -> Vec<String> {
    let mut out = BTreeSet::new();
    for m in modules(crate_dir) {
        if !m.public {
            continue;
        }
        if !m.path.is_empty() {
            out.insert(format!("mod {}", m.path.join("::")));
        }
        for item in &m.items {
            let (kind, name) = match item {
                Item::Fn(f) if is_pub(&f.vis) && !is_test(&f.attrs) => ("fn", f.sig.ident.to_string()),
                Item::Struct(s) if is_pub(&s.vis) => ("struct", s.ident.to_string()),
                Item::Enum(e) if is_pub(&e.vis) => ("enum", e.ident.to_string()),
                Item::Trait(t) if is_pub(&t.vis) => ("trait", t.ident.to_string()),
                Item::Type(t) if is_pub(&t.vis) => ("type", t.ident.to_string()),
                Item::Const(c) if is_pub(&c.vis) => ("const", c.ident.to_string()),
                Item::Static(s) if is_pub(&s.vis) => ("static", s.ident.to_string()),
                Item::Macro(mac) if mac.attrs.iter().any(|a| a.path().is_ident("macro_export")) => {
                    ("macro", mac.ident.as_ref().map(ToString::to_string).unwrap_or_default())
                }
                Item::Use(u) if is_pub(&u.vis) && !is_test(&u.attrs) => {
                    let mut names = Vec::new();
                    use_names(&u.tree, &mut Vec::new(), &mut names);
                    for (name, from) in names {
                        out.insert(format!("use {} (= {from})", joined(&m.path, &name)));
                    }
                    continue;
                }
                Item::Impl(i) if i.trait_.is_none() && !is_test(&i.attrs) => {
                    let ty = match &*i.self_ty {
                        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
                        _ => None,
                    };
                    let Some(ty) = ty else { continue };
                    for ii in &i.items {
                        match ii {
                            syn::ImplItem::Fn(f) if is_pub(&f.vis) => {
                                out.insert(format!("fn {}::{}", joined(&m.path, &ty), f.sig.ident));
                            }
                            syn::ImplItem::Const(c) if is_pub(&c.vis) => {
                                out.insert(format!("const {}::{}", joined(&m.path, &ty), c.ident));
                            }
                            _ => {}
                        }
                    }
                    continue;
                }
                _ => continue,
            };
            out.insert(format!("{kind} {}", joined(&m.path, &name)));
        }
    }
    out.into_iter().collect()
}

/// The crate's module graph: for each module (`a::b`), the other modules of the crate it names through
/// `crate::` paths in `use` declarations (`crate::x::y::Z` counts as module `x`'s subtree, recorded as the
/// longest known module prefix). Child modules are folded into `depth` path segments (`depth` 1: top-level
/// modules only).
pub fn module_edges(crate_dir: &Path, depth: usize) -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules(crate_dir);
    let known: BTreeSet<Vec<String>> = modules.iter().map(|m| m.path.clone()).collect();
    let fold = |p: &[String]| p.iter().take(depth).cloned().collect::<Vec<_>>().join("::");
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for m in &modules {
        if m.path.is_empty() {
            continue;
        }
        let from = fold(&m.path);
        let mut paths = Vec::new();
        for item in &m.items {
            match item {
                Item::Use(u) => {
                    if is_test(&u.attrs) {
                        continue;
                    }
                    collect_crate_paths(&u.tree, &mut Vec::new(), &m.path, &mut paths);
                }
                // Child modules are modules of their own.
                Item::Mod(_) => {}
                other => {
                    if item_is_test(other) {
                        continue;
                    }
                    let mut v = PathVisitor {
                        here: &m.path,
                        out: &mut paths,
                    };
                    syn::visit::Visit::visit_item(&mut v, other);
                }
            }
        }
        for p in paths {
            // The longest prefix that is a module.
            let mut target = None;
            for n in (1..=p.len()).rev() {
                if known.contains(&p[..n]) {
                    target = Some(p[..n].to_vec());
                    break;
                }
            }
            if let Some(t) = target {
                let to = fold(&t);
                if !to.is_empty()
                    && to != from
                    && !from.starts_with(&format!("{to}::"))
                    && !to.starts_with(&format!("{from}::"))
                {
                    edges.entry(from.clone()).or_default().insert(to);
                }
            }
        }
    }
    edges
}

fn collect_crate_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, here: &[String], out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            let seg = p.ident.to_string();
            match (prefix.is_empty(), seg.as_str()) {
                (true, "crate") => {
                    prefix.push("crate".into());
                }
                (true, "super") => {
                    prefix.push("crate".into());
                    prefix.extend(here.iter().take(here.len().saturating_sub(1)).cloned());
                }
                (true, "self") => {
                    prefix.push("crate".into());
                    prefix.extend(here.iter().cloned());
                }
                (true, _) => return,
                (false, "super") => {
                    prefix.pop();
                }
                _ => prefix.push(seg),
            }
            collect_crate_paths(&p.tree, prefix, here, out);
            prefix.clear();
        }
        syn::UseTree::Name(n) => {
            if prefix.first().map(String::as_str) == Some("crate") {
                let mut p: Vec<String> = prefix[1..].to_vec();
                p.push(n.ident.to_string());
                out.push(p);
            }
        }
        syn::UseTree::Rename(r) => {
            if prefix.first().map(String::as_str) == Some("crate") {
                let mut p: Vec<String> = prefix[1..].to_vec();
                p.push(r.ident.to_string());
                out.push(p);
            }
        }
        syn::UseTree::Glob(_) => {
            if prefix.first().map(String::as_str) == Some("crate") {
                out.push(prefix[1..].to_vec());
            }
        }
        syn::UseTree::Group(g) => {
            for t in &g.items {
                let mut p = prefix.clone();
                collect_crate_paths(t, &mut p, here, out);
            }
        }
    }
}

fn item_is_test(item: &Item) -> bool {
    match item {
        Item::Fn(f) => is_test(&f.attrs),
        Item::Impl(i) => is_test(&i.attrs),
        Item::Struct(x) => is_test(&x.attrs),
        Item::Enum(x) => is_test(&x.attrs),
        Item::Const(x) => is_test(&x.attrs),
        Item::Static(x) => is_test(&x.attrs),
        Item::Trait(x) => is_test(&x.attrs),
        Item::Type(x) => is_test(&x.attrs),
        _ => false,
    }
}

/// `crate::a::b` and `super::x` paths in code (not only in `use` declarations).
struct PathVisitor<'a> {
    here: &'a [String],
    out: &'a mut Vec<Vec<String>>,
}

impl<'ast> syn::visit::Visit<'ast> for PathVisitor<'_> {
    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        let resolved = match segs.first().map(String::as_str) {
            Some("crate") => Some(segs[1..].to_vec()),
            Some("super") => {
                let mut base: Vec<String> = self.here.to_vec();
                let mut rest = &segs[..];
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop();
                    rest = &rest[1..];
                }
                base.extend(rest.iter().cloned());
                Some(base)
            }
            _ => None,
        };
        if let Some(r) = resolved
            && !r.is_empty()
        {
            self.out.push(r);
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {}
}

/// The cycles of `edges` (each as the modules on it), empty when the graph is layered.
pub fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Tarjan's strongly connected components; a component of more than one module is a cycle.
    struct T<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    impl<'a> T<'a> {
        fn visit(&mut self, v: &'a str) {
            self.index.insert(v, self.next);
            self.low.insert(v, self.next);
            self.next += 1;
            self.stack.push(v);
            self.on.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low[v];
                    self.low.insert(v, lv.min(lw));
                } else if self.on.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low[v];
                    self.low.insert(v, lv.min(iw));
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on.remove(w);
                    comp.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    self.out.push(comp);
                }
            }
        }
    }
    let mut t = T {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    let nodes: BTreeSet<&str> = edges
        .iter()
        .flat_map(|(k, v)| std::iter::once(k.as_str()).chain(v.iter().map(String::as_str)))
        .collect();
    for n in nodes {
        if !t.index.contains_key(n) {
            t.visit(n);
        }
    }
    t.out
}

//! Parsing with cel-go's limits and error rendering.
//!
//! The parser is the `cel` crate's (the one kube-cel re-exports). It recurses deeply: the generated
//! grammar takes a lot of stack per nesting level, most of all in unoptimized builds, so parsing runs on
//! a stack of its own ([`stacker::grow`], reserved and committed as used) whatever thread calls it, and
//! nesting deeper than cel-go's parser limit (250) is refused before the parser sees it. Past the
//! parser nothing in this crate recurses deeper than the expression's height, which is capped at the
//! same 250 (the evaluator and the analysis also grow their stack on demand).

use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr};
use kube_cel::cel::parser::Parser;

use crate::CompileError;

/// cel-go's parser recursion limit (`expression recursion limit exceeded: 250`).
pub const MAX_RECURSION: u16 = 250;

/// cel-go's parser's default `ExpressionSizeCodePointLimit`: longer sources are refused unparsed (a
/// parse tree takes a few hundred bytes per source byte).
pub const MAX_CODE_POINTS: usize = 100_000;

/// Stack reserved for the parser (committed only as used).
const PARSE_STACK: usize = 256 * 1024 * 1024;

/// Parses `source` (optional syntax on, as Kubernetes enables `cel.OptionalTypes`), refusing what nests
/// deeper than cel-go allows. Errors are rendered as cel-go renders them:
/// `ERROR: <input>:1:17: Syntax error: ...` with the source line and a caret.
pub fn parse(source: &str) -> Result<IdedExpr, CompileError> {
    if source.len() > MAX_CODE_POINTS {
        let size = source.chars().count();
        if size > MAX_CODE_POINTS {
            return Err(CompileError::invalid(format!(
                "compilation failed: ERROR: <input>:-1:0: expression code point size exceeds limit: size: {size}, limit {MAX_CODE_POINTS}"
            )));
        }
    }
    if let Some((line, col)) = too_deep(source) {
        return Err(recursion_error(source, line, col));
    }
    // The tree is measured (and, when too deep, dropped: dropping recurses too) on the parser's stack.
    let parsed = stacker::grow(PARSE_STACK, || {
        std::panic::catch_unwind(|| {
            let parsed = Parser::new()
                .max_recursion_depth(MAX_RECURSION)
                .enable_optional_syntax(true)
                .parse(source);
            match parsed {
                Ok(ast) if height(&ast) > usize::from(MAX_RECURSION) => {
                    drop(ast);
                    None
                }
                other => Some(other),
            }
        })
    });
    let ast = match parsed {
        Ok(Some(Ok(ast))) => ast,
        Ok(Some(Err(errors))) => {
            let rendered: Vec<String> = errors
                .errors
                .iter()
                .map(|e| {
                    let line = usize::try_from(e.pos.0).unwrap_or(1).max(1);
                    let col = usize::try_from(e.pos.1).unwrap_or(1).max(1);
                    render(source, line, col, &e.msg)
                })
                .collect();
            return Err(CompileError::invalid(format!(
                "compilation failed: {}",
                rendered.join("\n")
            )));
        }
        Ok(None) | Err(_) => return Err(recursion_error(source, 1, 1)),
    };
    Ok(ast)
}

fn recursion_error(source: &str, line: usize, col: usize) -> CompileError {
    CompileError::invalid(format!(
        "compilation failed: {}",
        render(
            source,
            line,
            col,
            &format!("expression recursion limit exceeded: {MAX_RECURSION}")
        )
    ))
}

/// cel-go's rendering of one error: location, message, the source line and a caret under the column.
pub fn render(source: &str, line: usize, col: usize, message: &str) -> String {
    let mut out = format!("ERROR: <input>:{line}:{col}: {message}");
    if let Some(text) = source.lines().nth(line.saturating_sub(1)) {
        out.push_str(&format!("\n | {text}\n | {}^", ".".repeat(col.saturating_sub(1))));
    }
    out
}

/// Where brackets or unary operators first nest deeper than the parser's limit, outside string literals.
/// cel-go refuses that nesting too; the parser here would first recurse through all of it.
fn too_deep(source: &str) -> Option<(usize, usize)> {
    let max = usize::from(MAX_RECURSION);
    let (mut depth, mut unary) = (0usize, 0usize);
    let (mut quote, mut escaped) = (None::<char>, false);
    let (mut line, mut col) = (1usize, 0usize);
    for c in source.chars() {
        if c == '\n' {
            line += 1;
            col = 0;
        } else {
            col += 1;
        }
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if c == '!' || c == '-' {
            unary += 1;
        } else if !c.is_whitespace() {
            unary = 0;
        }
        if depth > max || unary > max {
            return Some((line, col));
        }
    }
    None
}

/// The 1-based line and column of the first use of identifier `name` (not after a `.`), outside string
/// literals; where cel-go points an `undeclared reference` error.
pub fn locate_identifier(source: &str, name: &str) -> Option<(usize, usize)> {
    let chars: Vec<char> = source.chars().collect();
    let (mut line, mut col) = (1usize, 1usize);
    let mut i = 0usize;
    let mut last_significant: Option<char> = None;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' {
            let q = c;
            i += 1;
            col += 1;
            while i < chars.len() && chars[i] != q {
                if chars[i] == '\\' {
                    i += 1;
                    col += 1;
                }
                if chars.get(i) == Some(&'\n') {
                    line += 1;
                    col = 0;
                }
                i += 1;
                col += 1;
            }
            i += 1;
            col += 1;
            last_significant = Some(q);
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            let start_col = col;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
                col += 1;
            }
            let word: String = chars[start..i].iter().collect();
            if word == name && last_significant != Some('.') {
                return Some((line, start_col));
            }
            last_significant = Some('a');
            continue;
        }
        if c == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
        if !c.is_whitespace() {
            last_significant = Some(c);
        }
        i += 1;
    }
    None
}

/// The height of an expression's tree (cel-go's recursion depth: `&&` and `||` chains are balanced by
/// the parser), measured without recursing.
pub fn height(root: &IdedExpr) -> usize {
    let mut max = 0usize;
    let mut stack = vec![(root, 1usize)];
    while let Some((e, depth)) = stack.pop() {
        max = max.max(depth);
        let next = depth.saturating_add(1);
        match &e.expr {
            Expr::Call(c) => {
                stack.extend(c.target.as_deref().map(|t| (t, next)));
                stack.extend(c.args.iter().map(|a| (a, next)));
            }
            Expr::Select(sel) => stack.push((&sel.operand, next)),
            Expr::Comprehension(c) => {
                for x in [&c.iter_range, &c.accu_init, &c.loop_cond, &c.loop_step, &c.result] {
                    stack.push((x, next));
                }
            }
            Expr::List(l) => stack.extend(l.elements.iter().map(|x| (x, next))),
            Expr::Map(m) => stack.extend(m.entries.iter().flat_map(|entry| match &entry.expr {
                EntryExpr::MapEntry(me) => vec![(&me.key, next), (&me.value, next)],
                EntryExpr::StructField(f) => vec![(&f.value, next)],
            })),
            Expr::Struct(st) => stack.extend(st.entries.iter().flat_map(|entry| match &entry.expr {
                EntryExpr::MapEntry(me) => vec![(&me.key, next), (&me.value, next)],
                EntryExpr::StructField(f) => vec![(&f.value, next)],
            })),
            Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_are_rendered_like_cel_go() {
        let err = parse("device.driver ==").unwrap_err().to_string();
        assert!(err.starts_with("compilation failed: ERROR: <input>:1:"), "{err}");
        assert!(err.contains("\n | device.driver ==\n | "), "{err}");
        assert!(err.ends_with('^'), "{err}");
    }

    #[test]
    fn sources_past_cel_gos_size_limit_are_refused_unparsed() {
        let long = vec!["true"; 30_000].join(" && ");
        assert_eq!(
            parse(&long).unwrap_err().to_string(),
            "compilation failed: ERROR: <input>:-1:0: expression code point size exceeds limit: size: 239996, limit 100000"
        );
    }

    #[test]
    fn nesting_past_cel_gos_limit_is_refused_before_parsing() {
        let deep = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
        let err = parse(&deep).unwrap_err().to_string();
        assert!(err.contains("expression recursion limit exceeded: 250"), "{err}");
        let chain = vec!["1"; 300].join(" + ");
        assert!(parse(&chain).unwrap_err().to_string().contains("recursion limit"));
        // `&&` chains are balanced by the parser.
        assert!(parse(&vec!["true"; 300].join(" && ")).is_ok());
    }

    #[test]
    fn hostile_sources_fail_or_parse_on_a_small_calling_stack() {
        let handle = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                for e in [
                    format!("{}true", "!".repeat(10 * 1024)),
                    vec!["1"; 5000].join("+"),
                    format!("x{}", ".a".repeat(5000)),
                    format!("x{}", "[0]".repeat(3300)),
                    format!("x{}", ".f()".repeat(2500)),
                    format!("{}true", "true ? true : ".repeat(700)),
                    format!("{}1{}", "size(".repeat(2000), ")".repeat(2000)),
                    format!("{}x{}{}", "(".repeat(250), ".a".repeat(4500), ")".repeat(250)),
                    String::new(),
                    "\u{0}".into(),
                    "'unterminated".into(),
                    "\"\\".into(),
                    "🙂 == 🙂".into(),
                    "}".into(),
                    "a.b(".into(),
                    "?:".into(),
                ] {
                    let _ = parse(&e);
                }
            })
            .unwrap();
        handle.join().unwrap();
    }
}

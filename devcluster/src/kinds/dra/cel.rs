//! Compiling DRA CEL selector expressions (`selectors[].cel.expression`) the way kube-apiserver's
//! `dynamic-resource-allocation/cel` compiler reports it, with the `cel` crate kube-cel re-exports
//! (`kube_cel::cel`, the crate kwas' scheduler evaluates the same expressions with).
//!
//! Upstream compiles in an environment with one variable, `device` (`driver`, `attributes`, `capacity`),
//! type-checks, and requires a `bool` (or dynamic) result. Here an expression must:
//!
//! - be at most [`MAX_EXPRESSION_LENGTH`] bytes (`Too long`, checked by the caller);
//! - parse (cel-go's grammar; the parser's errors rendered as cel-go renders them:
//!   `ERROR: <input>:1:17: Syntax error: ...` with the source line and a caret);
//! - nest at most 250 deep (brackets, unary operators, the expression tree, where `&&` and `||` chains
//!   are balanced), cel-go's parser limit (`expression recursion limit exceeded: 250`);
//! - reference no variable but `device`, the variables macros and `cel.bind` introduce, and type names
//!   (`undeclared reference to 'x' (in container '')`);
//! - not have a result whose type is known not to be `bool` (`must evaluate to bool or the unknown type,
//!   not int`): literals, list and map literals, `device` and `device.driver`, arithmetic and
//!   conversions of those. What depends on attribute values is dynamic, as upstream types them.
//!
//! Function overloads and the cost limit are not checked (the `cel` crate has no type checker), so an
//! expression upstream refuses for calling an unknown function or being too expensive is stored here;
//! evaluating it then fails.

use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use kube_cel::cel::parser::Parser;

/// `CELSelectorExpressionMaxLength`: the longest selector expression, in bytes.
pub(crate) const MAX_EXPRESSION_LENGTH: usize = 10 * 1024;

/// The parser's nesting limit (cel-go's default).
const PARSER_RECURSION: u16 = 250;

/// The stacks tried, largest first, for the thread expressions are compiled on. The parser and the
/// checks here recurse once per operator of a chain (`a + a + ...`, `x.a.b.c...`, nested conditionals);
/// 10 KiB of the deepest such chains inside the deepest nesting need about 64 MiB in a debug build, far
/// more than a request handler's stack, so compiling happens on a thread of its own whose stack is
/// reserved, not committed, up front (a smaller one when the system refuses the reservation). Past the
/// parser, nothing recurses deeper than [`PARSER_RECURSION`]: a deeper expression is refused, as cel-go
/// refuses it.
const COMPILE_STACKS: [usize; 2] = [256 * 1024 * 1024, 64 * 1024 * 1024];

/// Identifiers that are types, not variables (`type(x) == int`).
const TYPE_NAMES: &[&str] = &[
    "bool",
    "bytes",
    "double",
    "dyn",
    "int",
    "list",
    "map",
    "null_type",
    "string",
    "type",
    "uint",
];

/// Namespaces of the Kubernetes CEL libraries' qualified functions (`math.greatest(...)`).
const FUNCTION_NAMESPACES: &[&str] = &["base64", "cel", "lists", "math", "optional", "sets", "strings"];

/// The variable selector expressions get.
const DEVICE: &str = "device";

/// Compiles selector expressions, each to `Ok` or upstream's detail for a `field.Invalid` on the
/// expression (`compilation failed: ...` or `must evaluate to bool ...`), on one thread with a large
/// stack (see [`COMPILE_STACKS`]); an expression that appears more than once compiles once.
pub(crate) fn compile_all(expressions: Vec<(String, bool)>) -> Vec<Result<(), String>> {
    if expressions.is_empty() {
        return Vec::new();
    }
    let mut distinct: Vec<(String, bool)> = Vec::new();
    let mut index = Vec::with_capacity(expressions.len());
    for e in expressions {
        match distinct.iter().position(|d| *d == e) {
            Some(i) => index.push(i),
            None => {
                index.push(distinct.len());
                distinct.push(e);
            }
        }
    }
    let n = distinct.len();
    let failed = |why: String| vec![Err(format!("compilation failed: {why}")); n];
    let mut results = failed("no compiler thread".into());
    for stack in COMPILE_STACKS {
        let work = distinct.clone();
        let spawned = std::thread::Builder::new()
            .name("cel-compile".into())
            .stack_size(stack)
            .spawn(move || work.iter().map(|(e, boolean)| compile(e, *boolean)).collect::<Vec<_>>());
        match spawned {
            Ok(handle) => {
                results = handle
                    .join()
                    .unwrap_or_else(|_| failed("the compiler stopped unexpectedly".into()));
                break;
            }
            Err(e) => {
                tracing::warn!(stack, error = %e, "no thread to compile CEL expressions on");
                results = failed(format!("no compiler thread: {e}"));
            }
        }
    }
    index.into_iter().map(|i| results[i].clone()).collect()
}

/// Compiles one expression on the current thread (see [`compile_all`] for why callers do not); `boolean`:
/// a selector, whose result must be a boolean (a derived attribute's may be any value).
fn compile(expression: &str, boolean: bool) -> Result<(), String> {
    if let Some((line, col)) = too_deep(expression) {
        return Err(format!(
            "compilation failed: {}",
            render(
                expression,
                line,
                col,
                &format!("expression recursion limit exceeded: {PARSER_RECURSION}")
            )
        ));
    }
    let parsed = std::panic::catch_unwind(|| Parser::new().max_recursion_depth(PARSER_RECURSION).parse(expression));
    let ast = match parsed {
        Ok(Ok(ast)) => ast,
        Ok(Err(errors)) => {
            let rendered: Vec<String> = errors
                .errors
                .iter()
                .map(|e| {
                    let (line, col) = (
                        usize::try_from(e.pos.0).unwrap_or(1).max(1),
                        usize::try_from(e.pos.1).unwrap_or(1).max(1),
                    );
                    render(expression, line, col, &e.msg)
                })
                .collect();
            return Err(format!("compilation failed: {}", rendered.join("\n")));
        }
        Err(_) => {
            return Err(format!(
                "compilation failed: {}",
                render(expression, 1, 1, "expression recursion limit exceeded")
            ));
        }
    };
    if height(&ast) > usize::from(PARSER_RECURSION) {
        return Err(format!(
            "compilation failed: {}",
            render(
                expression,
                1,
                1,
                &format!("expression recursion limit exceeded: {PARSER_RECURSION}")
            )
        ));
    }
    let mut scope = Vec::new();
    if let Some(name) = undeclared(&ast, &mut scope) {
        let (line, col) = locate_identifier(expression, &name).unwrap_or((1, 1));
        return Err(format!(
            "compilation failed: {}",
            render(
                expression,
                line,
                col,
                &format!("undeclared reference to '{name}' (in container '')")
            )
        ));
    }
    match infer(&ast) {
        _ if !boolean => Ok(()),
        Ty::Bool | Ty::Dyn => Ok(()),
        other => Err(format!(
            "must evaluate to bool or the unknown type, not {}",
            other.name()
        )),
    }
}

/// cel-go's rendering of one error: location, message, the source line and a caret under the column.
fn render(source: &str, line: usize, col: usize, message: &str) -> String {
    let mut out = format!("ERROR: <input>:{line}:{col}: {message}");
    if let Some(text) = source.lines().nth(line.saturating_sub(1)) {
        out.push_str(&format!("\n | {text}\n | {}^", ".".repeat(col.saturating_sub(1))));
    }
    out
}

/// Where brackets or unary operators first nest deeper than the parser's limit, outside string literals.
/// cel-go refuses that nesting too; the parser here would first recurse through all of it.
fn too_deep(source: &str) -> Option<(usize, usize)> {
    let max = usize::from(PARSER_RECURSION);
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

/// The 1-based line and column of the first use of identifier `name` as a variable (not after a `.`),
/// outside string literals.
fn locate_identifier(source: &str, name: &str) -> Option<(usize, usize)> {
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
fn height(root: &IdedExpr) -> usize {
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

/// The first identifier used as a variable that is not in scope.
fn undeclared(e: &IdedExpr, scope: &mut Vec<String>) -> Option<String> {
    match &e.expr {
        Expr::Ident(name) => {
            let known = name == DEVICE
                || name.starts_with('@')
                || TYPE_NAMES.contains(&name.as_str())
                || scope.iter().any(|s| s == name);
            (!known).then(|| name.clone())
        }
        Expr::Select(s) => undeclared(&s.operand, scope),
        Expr::Call(call) => {
            // `cel.bind(name, init, body)`: `name` is a variable in `body`.
            if call.func_name == "bind"
                && call.args.len() == 3
                && matches!(call.target.as_deref().map(|t| &t.expr), Some(Expr::Ident(t)) if t == "cel")
                && let Expr::Ident(var) = &call.args[0].expr
            {
                if let Some(u) = undeclared(&call.args[1], scope) {
                    return Some(u);
                }
                scope.push(var.clone());
                let r = undeclared(&call.args[2], scope);
                scope.pop();
                return r;
            }
            if let Some(target) = &call.target {
                let namespace = matches!(&target.expr, Expr::Ident(t) if FUNCTION_NAMESPACES.contains(&t.as_str()));
                if !namespace && let Some(u) = undeclared(target, scope) {
                    return Some(u);
                }
            }
            call.args.iter().find_map(|a| undeclared(a, scope))
        }
        Expr::Comprehension(c) => {
            if let Some(u) = undeclared(&c.iter_range, scope) {
                return Some(u);
            }
            if let Some(u) = undeclared(&c.accu_init, scope) {
                return Some(u);
            }
            let pushed = 2 + usize::from(c.iter_var2.is_some());
            scope.push(c.iter_var.clone());
            scope.push(c.accu_var.clone());
            if let Some(v) = &c.iter_var2 {
                scope.push(v.clone());
            }
            let r = undeclared(&c.loop_cond, scope)
                .or_else(|| undeclared(&c.loop_step, scope))
                .or_else(|| undeclared(&c.result, scope));
            scope.truncate(scope.len().saturating_sub(pushed));
            r
        }
        Expr::List(l) => l.elements.iter().find_map(|x| undeclared(x, scope)),
        Expr::Map(m) => m.entries.iter().find_map(|entry| match &entry.expr {
            EntryExpr::MapEntry(me) => undeclared(&me.key, scope).or_else(|| undeclared(&me.value, scope)),
            EntryExpr::StructField(f) => undeclared(&f.value, scope),
        }),
        Expr::Struct(s) => s.entries.iter().find_map(|entry| match &entry.expr {
            EntryExpr::MapEntry(me) => undeclared(&me.key, scope).or_else(|| undeclared(&me.value, scope)),
            EntryExpr::StructField(f) => undeclared(&f.value, scope),
        }),
        Expr::Literal(_) | Expr::Unspecified => None,
    }
}

/// What is known statically about an expression's type.
#[derive(Debug, Clone, PartialEq)]
enum Ty {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    List(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    Device,
    Type,
    /// Unknown until evaluation (attribute values, function results).
    Dyn,
}

impl Ty {
    /// cel-go's name of the type.
    fn name(&self) -> String {
        match self {
            Ty::Bool => "bool".into(),
            Ty::Int => "int".into(),
            Ty::Uint => "uint".into(),
            Ty::Double => "double".into(),
            Ty::String => "string".into(),
            Ty::Bytes => "bytes".into(),
            Ty::Null => "null_type".into(),
            Ty::List(e) => format!("list({})", e.name()),
            Ty::Map(k, v) => format!("map({}, {})", k.name(), v.name()),
            Ty::Device => "kubernetes.DRADevice".into(),
            Ty::Type => "type".into(),
            Ty::Dyn => "dyn".into(),
        }
    }
}

/// The common type of elements (cel-go's homogeneous aggregate literals; mixed is `dyn`).
fn common(items: impl Iterator<Item = Ty>) -> Ty {
    let mut out: Option<Ty> = None;
    for t in items {
        out = match out {
            None => Some(t),
            Some(prev) if prev == t => Some(prev),
            Some(_) => return Ty::Dyn,
        };
    }
    out.unwrap_or(Ty::Dyn)
}

fn infer(e: &IdedExpr) -> Ty {
    match &e.expr {
        Expr::Literal(l) => match l {
            LiteralValue::Boolean(_) => Ty::Bool,
            LiteralValue::Int(_) => Ty::Int,
            LiteralValue::UInt(_) => Ty::Uint,
            LiteralValue::Double(_) => Ty::Double,
            LiteralValue::String(_) => Ty::String,
            LiteralValue::Bytes(_) => Ty::Bytes,
            LiteralValue::Null => Ty::Null,
        },
        Expr::List(l) => Ty::List(Box::new(common(l.elements.iter().map(infer)))),
        Expr::Map(m) => {
            let (keys, values): (Vec<Ty>, Vec<Ty>) = m
                .entries
                .iter()
                .map(|entry| match &entry.expr {
                    EntryExpr::MapEntry(me) => (infer(&me.key), infer(&me.value)),
                    EntryExpr::StructField(f) => (Ty::String, infer(&f.value)),
                })
                .unzip();
            Ty::Map(Box::new(common(keys.into_iter())), Box::new(common(values.into_iter())))
        }
        Expr::Ident(name) if name == DEVICE => Ty::Device,
        Expr::Ident(name) if TYPE_NAMES.contains(&name.as_str()) => Ty::Type,
        Expr::Select(s) if s.test => Ty::Bool,
        Expr::Select(s) if s.field == "driver" && matches!(&s.operand.expr, Expr::Ident(n) if n == DEVICE) => {
            Ty::String
        }
        Expr::Call(call) => infer_call(&call.func_name, call.target.is_some(), &call.args),
        _ => Ty::Dyn,
    }
}

fn infer_call(func: &str, method: bool, args: &[IdedExpr]) -> Ty {
    use kube_cel::cel::common::ast::operators as op;
    if method {
        return match func {
            "startsWith" | "endsWith" | "contains" | "matches" | "exists" | "all" | "exists_one" => Ty::Bool,
            _ => Ty::Dyn,
        };
    }
    match func {
        f if [
            op::EQUALS,
            op::NOT_EQUALS,
            op::LESS,
            op::LESS_EQUALS,
            op::GREATER,
            op::GREATER_EQUALS,
            op::LOGICAL_AND,
            op::LOGICAL_OR,
            op::LOGICAL_NOT,
            op::IN,
            op::NOT_STRICTLY_FALSE,
            "matches",
        ]
        .contains(&f) =>
        {
            Ty::Bool
        }
        f if [op::ADD, op::SUBSTRACT, op::MULTIPLY, op::DIVIDE, op::MODULO].contains(&f) => {
            let types: Vec<Ty> = args.iter().map(infer).collect();
            match types.as_slice() {
                [a, b] if a == b && *a != Ty::Dyn => a.clone(),
                _ => Ty::Dyn,
            }
        }
        f if f == op::NEGATE => match args.first().map(infer) {
            Some(t @ (Ty::Int | Ty::Double)) => t,
            _ => Ty::Dyn,
        },
        f if f == op::CONDITIONAL => match args {
            [_, a, b] => common([infer(a), infer(b)].into_iter()),
            _ => Ty::Dyn,
        },
        "size" | "int" => Ty::Int,
        "uint" => Ty::Uint,
        "double" => Ty::Double,
        "string" => Ty::String,
        "bytes" => Ty::Bytes,
        "bool" => Ty::Bool,
        "type" => Ty::Type,
        _ => Ty::Dyn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_selectors_compile() {
        for e in [
            r#"device.driver == "gpu.kwas.dev""#,
            r#"device.attributes["gpu.kwas.dev"].model == "KW100""#,
            r#"device.attributes["gpu.kwas.dev"].index < 4 && device.capacity["gpu.kwas.dev"].memory.compareTo(quantity("40Gi")) >= 0"#,
            r#"cel.bind(gpu, device.attributes["gpu.kwas.dev"], gpu.model == "KW100" && gpu.index >= 0)"#,
            r#"["a", "b"].exists(x, x == device.driver)"#,
            r#"has(device.attributes["gpu.kwas.dev"].model)"#,
            r#"device.attributes["gpu.kwas.dev"].model"#,
            r#"type(device.driver) == string"#,
            r#"math.greatest(1, 2) > 1"#,
            "true",
        ] {
            assert_eq!(compile(e, true), Ok(()), "{e}");
        }
    }

    #[test]
    fn syntax_errors_are_rendered_like_cel_go() {
        let err = compile("device.driver ==", true).unwrap_err();
        assert!(err.starts_with("compilation failed: ERROR: <input>:1:"), "{err}");
        assert!(err.contains("\n | device.driver ==\n | "), "{err}");
        assert!(err.ends_with('^'), "{err}");
    }

    #[test]
    fn undeclared_variables_and_non_boolean_results_are_refused() {
        let err = compile(r#"gpu.model == "x""#, true).unwrap_err();
        assert_eq!(
            err,
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'gpu' (in container '')\n | gpu.model == \"x\"\n | ^"
        );
        let err = compile(r#"device.driver == "a" && nodes > 1"#, true).unwrap_err();
        assert!(err.contains("<input>:1:25: undeclared reference to 'nodes'"), "{err}");
        assert_eq!(
            compile("1 + 2", true).unwrap_err(),
            "must evaluate to bool or the unknown type, not int"
        );
        assert_eq!(
            compile("device.driver", true).unwrap_err(),
            "must evaluate to bool or the unknown type, not string"
        );
        assert_eq!(
            compile("[1, 2]", true).unwrap_err(),
            "must evaluate to bool or the unknown type, not list(int)"
        );
        // cel-go's recursion limit: chains deeper than 250 are refused, except `&&` and `||` chains,
        // which the parser balances.
        let sum = vec!["device.attributes[\"gpu.kwas.dev\"].index"; 300].join(" + ") + " > 0";
        assert!(
            compile(&sum, true)
                .unwrap_err()
                .contains("expression recursion limit exceeded: 250")
        );
        let all = vec!["device.attributes[\"gpu.kwas.dev\"].index > 0"; 300].join(" && ");
        assert_eq!(compile(&all, true), Ok(()));
        assert_eq!(
            compile("device", true).unwrap_err(),
            "must evaluate to bool or the unknown type, not kubernetes.DRADevice"
        );
    }

    #[test]
    fn hostile_expressions_fail_or_compile_without_exhausting_a_stack() {
        // The deepest chains that fit in the length limit, compiled together on the compiler's thread
        // while this test runs on a small stack like a request handler's.
        let handle = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let exprs = vec![
                    format!("{}1{}", "(".repeat(5000), ")".repeat(5000)),
                    format!("{}true", "!".repeat(MAX_EXPRESSION_LENGTH)),
                    vec!["1"; 5000].join("+"),
                    format!("device{}", ".a".repeat(5000)),
                    format!("device{}", "[0]".repeat(3300)),
                    format!("device{}", ".f()".repeat(2500)),
                    format!("{}true", "true ? true : ".repeat(700)),
                    vec!["1"; 3400].join("=="),
                    format!("{}1{}", "size(".repeat(2000), ")".repeat(2000)),
                    // Nesting just within the limit around the deepest chains that still fit.
                    format!("{}device{}{}", "(".repeat(250), ".a".repeat(4500), ")".repeat(250)),
                    format!("{}device{}{}", "size(".repeat(250), "[0]".repeat(2500), ")".repeat(250)),
                    format!(
                        "{}{}true{}",
                        "[".repeat(250),
                        "true ? true : ".repeat(450),
                        "]".repeat(250)
                    ),
                    format!("{}true", "!".repeat(250)),
                    String::new(),
                    "\u{0}".into(),
                    "'unterminated".into(),
                    "\"\\".into(),
                    "🙂 == 🙂".into(),
                    "}".into(),
                    "a.b(".into(),
                    "?:".into(),
                ];
                let n = exprs.len();
                let results = compile_all(exprs.into_iter().map(|e| (e, true)).collect());
                assert_eq!(results.len(), n);
                assert!(
                    results[0].as_ref().is_err_and(|e| e.starts_with("compilation failed")),
                    "{:?}",
                    results[0]
                );
                assert!(
                    results[2].as_ref().is_err_and(|e| e.contains("recursion limit")),
                    "{:?}",
                    results[2]
                );
                assert!(results[9].is_err(), "an empty expression does not parse");
            })
            .unwrap();
        handle.join().unwrap();
    }
}

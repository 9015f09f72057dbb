//! Compile-time analysis: resolves every reference (variables, macro variables, functions with their
//! call style and arity), infers the result type as far as it is known, and estimates the worst-case
//! cost the way cel-go v0.29.2's `checker/cost.go` does with Kubernetes' `library.CostEstimator`: every
//! node costs what cel-go charges for it, sizes come from the declared variables (a node's declared
//! `MaxElements`), literals, or call results, and a comprehension costs its range's size times one
//! iteration. Costs saturate at `u64::MAX`.
//!
//! Deviations, chosen: types are inferred, not checked (this crate has no type checker), so a call on
//! values of unknown type is priced as the costliest of its overloads, and only results known to be
//! of the wrong type are refused; a call of an unknown function, or with the wrong style or argument
//! count, is refused as cel-go refuses it.

use kube_cel::cel::common::ast::operators as op;
use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};

use crate::functions::{self, Cost, Lookup, Spec};
use crate::parse::{locate_identifier, render};
use crate::types::{Decl, DeclKind, Ty};
use crate::{CompileError, Env};

/// cel-go's `ListCreateBaseCost`.
const LIST_CREATE: u64 = 10;
/// cel-go's `MapCreateBaseCost`.
const MAP_CREATE: u64 = 30;

/// Identifiers that name types (`int(x)` converts; `type(x) == int` compares).
pub(crate) const TYPE_NAMES: &[&str] = &[
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

/// What the analysis found.
#[derive(Debug, Clone)]
pub(crate) struct Analysis {
    /// The result's type as far as it is known.
    pub ty: Ty,
    /// The estimated worst-case cost.
    pub max_cost: u64,
}

/// `ceil(x * f)`, saturating.
pub(crate) fn mulf(x: u64, f: f64) -> u64 {
    if x == 0 || f <= 0.0 {
        return 0;
    }
    let r = (x as f64) * f;
    if r >= u64::MAX as f64 {
        u64::MAX
    } else {
        r.ceil() as u64
    }
}

/// Analyzes `ast` (parsed from `source`) in `env`.
pub(crate) fn analyze(source: &str, ast: &IdedExpr, env: &Env) -> Result<Analysis, CompileError> {
    let mut a = Analyzer {
        source,
        env,
        locals: Vec::new(),
    };
    let info = a.node(ast)?;
    Ok(Analysis {
        ty: info.ty,
        max_cost: info.cost,
    })
}

#[derive(Debug, Clone)]
struct Local<'e> {
    name: String,
    ty: Ty,
    decl: Option<&'e Decl>,
    size: Option<u64>,
}

#[derive(Debug, Clone)]
struct Info<'e> {
    ty: Ty,
    decl: Option<&'e Decl>,
    /// A size known from a literal or computed for a call's result.
    size: Option<u64>,
    cost: u64,
}

impl Info<'_> {
    fn of(ty: Ty, cost: u64) -> Self {
        Info {
            ty,
            decl: None,
            size: None,
            cost,
        }
    }

    /// cel-go's `computeSize`, maximum: computed or literal size, the declared size, 1 for scalars,
    /// else unknown (`u64::MAX`).
    fn size(&self) -> u64 {
        if let Some(s) = self.size {
            return s;
        }
        if let Some(d) = self.decl {
            return d.max_elements;
        }
        if self.ty.scalar() {
            return 1;
        }
        u64::MAX
    }
}

struct Analyzer<'s, 'e> {
    source: &'s str,
    env: &'e Env,
    locals: Vec<Local<'e>>,
}

impl<'e> Analyzer<'_, 'e> {
    fn error(&self, name: &str, message: &str) -> CompileError {
        let (line, col) = locate_identifier(self.source, name).unwrap_or((1, 1));
        CompileError::invalid(format!(
            "compilation failed: {}",
            render(self.source, line, col, message)
        ))
    }

    fn undeclared(&self, name: &str) -> CompileError {
        self.error(name, &format!("undeclared reference to '{name}' (in container '')"))
    }

    fn local(&self, name: &str) -> Option<&Local<'e>> {
        self.locals.iter().rev().find(|l| l.name == name)
    }

    fn node(&mut self, e: &IdedExpr) -> Result<Info<'e>, CompileError> {
        stacker::maybe_grow(64 * 1024, 4 * 1024 * 1024, || self.node_inner(e))
    }

    fn node_inner(&mut self, e: &IdedExpr) -> Result<Info<'e>, CompileError> {
        match &e.expr {
            Expr::Literal(l) => Ok(literal(l)),
            Expr::Ident(name) => self.ident(name),
            Expr::Select(s) => {
                let operand = self.node(&s.operand)?;
                if s.test {
                    // Kubernetes: presence tests cost nothing beyond their operand.
                    return Ok(Info::of(Ty::Bool, operand.cost));
                }
                let select_cost = u64::from(matches!(operand.ty, Ty::Map(..) | Ty::Object(_)));
                let cost = operand.cost.saturating_add(select_cost);
                match operand.decl.map(|d| (&d.kind, d.field(&s.field))) {
                    Some((DeclKind::Object { name, .. }, None)) => {
                        Err(self.error(&s.field, &format!("undefined field '{}' (in type '{name}')", s.field)))
                    }
                    Some((_, Some(field))) => Ok(Info {
                        ty: field.ty(),
                        decl: Some(field),
                        size: None,
                        cost,
                    }),
                    _ => {
                        let ty = match &operand.ty {
                            Ty::Map(_, v) => (**v).clone(),
                            _ => Ty::Dyn,
                        };
                        Ok(Info::of(ty, cost))
                    }
                }
            }
            Expr::Call(call) => self.call(call),
            Expr::List(l) => {
                let mut cost = LIST_CREATE;
                let mut tys = Vec::with_capacity(l.elements.len());
                for (i, x) in l.elements.iter().enumerate() {
                    let info = self.node(x)?;
                    cost = cost.saturating_add(info.cost);
                    let ty = match (l.optional_indices.contains(&i), info.ty) {
                        (true, Ty::Optional(t)) => *t,
                        (_, t) => t,
                    };
                    tys.push(ty);
                }
                Ok(Info {
                    ty: Ty::List(Box::new(common(tys))),
                    decl: None,
                    size: Some(l.elements.len() as u64),
                    cost,
                })
            }
            Expr::Map(m) => {
                let mut cost = MAP_CREATE;
                let (mut keys, mut values) = (Vec::new(), Vec::new());
                for entry in &m.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(me) => {
                            let k = self.node(&me.key)?;
                            let v = self.node(&me.value)?;
                            cost = cost.saturating_add(k.cost).saturating_add(v.cost);
                            keys.push(k.ty);
                            values.push(v.ty);
                        }
                        EntryExpr::StructField(f) => {
                            return Err(self.undeclared(&f.field));
                        }
                    }
                }
                Ok(Info {
                    ty: Ty::Map(Box::new(common(keys)), Box::new(common(values))),
                    decl: None,
                    size: Some(m.entries.len() as u64),
                    cost,
                })
            }
            Expr::Struct(s) => Err(self.undeclared(&s.type_name)),
            Expr::Comprehension(c) => {
                let range = self.node(&c.iter_range)?;
                let init = self.node(&c.accu_init)?;
                let (item_ty, item_decl) = match (&range.ty, range.decl) {
                    (_, Some(d)) if d.element(true).is_some() => {
                        let keys = matches!(d.kind, DeclKind::Map(..));
                        let el = d.element(keys);
                        (el.map(Decl::ty).unwrap_or(Ty::Dyn), el)
                    }
                    (t, _) => (t.element(), None),
                };
                self.locals.push(Local {
                    name: c.accu_var.clone(),
                    ty: init.ty.clone(),
                    decl: None,
                    size: None,
                });
                self.locals.push(Local {
                    name: c.iter_var.clone(),
                    ty: item_ty,
                    decl: item_decl,
                    size: None,
                });
                let pushed = if let Some(v2) = &c.iter_var2 {
                    self.locals.push(Local {
                        name: v2.clone(),
                        ty: Ty::Dyn,
                        decl: None,
                        size: None,
                    });
                    3
                } else {
                    2
                };
                let cond = self.node(&c.loop_cond);
                let step = cond.and_then(|cond| self.node(&c.loop_step).map(|step| (cond, step)));
                self.locals.truncate(self.locals.len().saturating_sub(pushed - 1));
                let (cond, step) = step?;
                let result = self.node(&c.result);
                self.locals.pop();
                let result = result?;
                let count = range.size();
                let per_iteration = cond.cost.saturating_add(step.cost);
                let cost = range
                    .cost
                    .saturating_add(init.cost)
                    .saturating_add(result.cost)
                    .saturating_add(count.saturating_mul(per_iteration));
                let size = match &c.accu_init.expr {
                    Expr::List(_) | Expr::Map(_) => Some(count),
                    _ => result.size,
                };
                Ok(Info {
                    ty: result.ty,
                    decl: None,
                    size,
                    cost,
                })
            }
            Expr::Unspecified => Err(CompileError::invalid("compilation failed: empty expression")),
        }
    }

    fn ident(&mut self, name: &str) -> Result<Info<'e>, CompileError> {
        if let Some(l) = self.local(name) {
            return Ok(Info {
                ty: l.ty.clone(),
                decl: l.decl,
                size: l.size,
                cost: 1,
            });
        }
        if let Some((_, d)) = self.env.vars.iter().find(|(n, _)| n == name) {
            return Ok(Info {
                ty: d.ty(),
                decl: Some(d),
                size: None,
                cost: 1,
            });
        }
        if TYPE_NAMES.contains(&name) {
            return Ok(Info::of(Ty::Type, 1));
        }
        Err(self.undeclared(name))
    }

    fn call(&mut self, call: &kube_cel::cel::common::ast::CallExpr) -> Result<Info<'e>, CompileError> {
        let name = call.func_name.as_str();
        if call.target.is_none() && is_operator(name) {
            return self.operator(name, &call.args);
        }
        // `ns.f(args)`: a qualified global function, unless `ns` is a variable.
        let qualified = match call.target.as_deref().map(|t| &t.expr) {
            Some(Expr::Ident(ns))
                if functions::NAMESPACES.contains(&ns.as_str())
                    && self.local(ns).is_none()
                    && !self.env.vars.iter().any(|(n, _)| n == ns) =>
            {
                Some(format!("{ns}.{name}"))
            }
            _ => None,
        };
        let (target, spec) = match &qualified {
            Some(q) => (None, self.resolve(q, false, call.args.len())?),
            None => {
                let target = match &call.target {
                    Some(t) => Some(self.node(t)?),
                    None => None,
                };
                let spec = self.resolve(name, target.is_some(), call.args.len())?;
                (target, spec)
            }
        };
        let mut args = Vec::with_capacity(call.args.len());
        for a in &call.args {
            args.push(self.node(a)?);
        }
        let arg_sum = args.iter().fold(0u64, |s, a| s.saturating_add(a.cost));
        let target_cost = target.as_ref().map_or(0, |t| t.cost);
        let first = target.as_ref().or(args.first());
        let (fn_cost, size) = static_cost(spec, first, target.is_some(), &args, &call.args);
        let arg_tys: Vec<Ty> = args.iter().map(|a| a.ty.clone()).collect();
        let ty = functions::result_ty(spec, first.map(|f| &f.ty), &arg_tys);
        Ok(Info {
            ty,
            decl: None,
            size,
            cost: target_cost.saturating_add(arg_sum).saturating_add(fn_cost),
        })
    }

    fn resolve(&self, name: &str, member: bool, args: usize) -> Result<&'static Spec, CompileError> {
        functions::lookup(name, member, args).map_err(|why| match why {
            Lookup::Undeclared => self.undeclared(name.rsplit('.').next().unwrap_or(name)),
            Lookup::NoOverload => self.error(
                name.rsplit('.').next().unwrap_or(name),
                &format!("found no matching overload for '{name}' applied to {args} argument(s)"),
            ),
        })
    }

    fn operator(&mut self, name: &str, args: &[IdedExpr]) -> Result<Info<'e>, CompileError> {
        let mut infos = Vec::with_capacity(args.len());
        for a in args {
            infos.push(self.node(a)?);
        }
        let arg_sum = infos.iter().fold(0u64, |s, a| s.saturating_add(a.cost));
        let sizes: Vec<u64> = infos.iter().map(Info::size).collect();
        let tys: Vec<Ty> = infos.iter().map(|i| i.ty.clone()).collect();
        let two = |i: usize| sizes.get(i).copied().unwrap_or(u64::MAX);
        let info = match name {
            n if n == op::LOGICAL_AND || n == op::LOGICAL_OR => Info::of(Ty::Bool, arg_sum),
            n if n == op::CONDITIONAL => {
                let (c, t, f) = match infos.as_slice() {
                    [c, t, f] => (c, t, f),
                    _ => return Err(CompileError::invalid("compilation failed: malformed conditional")),
                };
                Info {
                    ty: if t.ty == f.ty { t.ty.clone() } else { Ty::Dyn },
                    decl: None,
                    size: Some(t.size().max(f.size())),
                    cost: c.cost.saturating_add(t.cost.max(f.cost)),
                }
            }
            n if n == op::EQUALS || n == op::NOT_EQUALS => {
                Info::of(Ty::Bool, arg_sum.saturating_add(mulf(two(0).min(two(1)), 0.1)))
            }
            n if [op::LESS, op::LESS_EQUALS, op::GREATER, op::GREATER_EQUALS].contains(&n) => {
                let sized = tys.iter().all(|t| matches!(t, Ty::String | Ty::Bytes | Ty::Dyn));
                let c = if sized { mulf(two(0).min(two(1)), 0.1).max(1) } else { 1 };
                Info::of(Ty::Bool, arg_sum.saturating_add(c))
            }
            n if n == op::ADD => {
                let (a, b) = (
                    tys.first().cloned().unwrap_or(Ty::Dyn),
                    tys.get(1).cloned().unwrap_or(Ty::Dyn),
                );
                let text = |t: &Ty| matches!(t, Ty::String | Ty::Bytes | Ty::Dyn);
                let c = if text(&a) && text(&b) {
                    mulf(two(0).saturating_add(two(1)), 0.1).max(1)
                } else {
                    1
                };
                let ty = if a == b && a != Ty::Dyn { a } else { Ty::Dyn };
                Info {
                    size: ty.sized().then(|| two(0).saturating_add(two(1))),
                    ty,
                    decl: None,
                    cost: arg_sum.saturating_add(c),
                }
            }
            n if [op::SUBSTRACT, op::MULTIPLY, op::DIVIDE, op::MODULO].contains(&n) => {
                let ty = match tys.as_slice() {
                    [a, b] if a == b && *a != Ty::Dyn => a.clone(),
                    _ => Ty::Dyn,
                };
                Info::of(ty, arg_sum.saturating_add(1))
            }
            n if n == op::LOGICAL_NOT || n == op::NOT_STRICTLY_FALSE => Info::of(Ty::Bool, arg_sum.saturating_add(1)),
            n if n == op::NEGATE => Info::of(tys.first().cloned().unwrap_or(Ty::Dyn), arg_sum.saturating_add(1)),
            n if n == op::IN => {
                let c = match tys.get(1) {
                    Some(Ty::Map(..)) => 1,
                    _ => two(1).max(1),
                };
                Info::of(Ty::Bool, arg_sum.saturating_add(c))
            }
            n if n == op::INDEX || n == op::OPT_INDEX => {
                let container = infos.first();
                let decl = container.and_then(|c| c.decl).and_then(|d| d.element(false));
                let ty = match (decl, container.map(|c| &c.ty)) {
                    (Some(d), _) => d.ty(),
                    (None, Some(Ty::List(e))) => (**e).clone(),
                    (None, Some(Ty::Map(_, v))) => (**v).clone(),
                    _ => Ty::Dyn,
                };
                let ty = if n == op::OPT_INDEX {
                    Ty::Optional(Box::new(ty))
                } else {
                    ty
                };
                Info {
                    ty,
                    decl: if n == op::INDEX { decl } else { None },
                    size: None,
                    cost: arg_sum.saturating_add(1),
                }
            }
            n if n == op::OPT_SELECT => {
                // `x.?f`: the field name is a string literal argument.
                let field = match args.get(1).map(|a| &a.expr) {
                    Some(Expr::Literal(LiteralValue::String(s))) => Some(s.inner().to_string()),
                    _ => None,
                };
                let decl = infos
                    .first()
                    .and_then(|c| c.decl)
                    .zip(field.as_deref())
                    .and_then(|(d, f)| d.field(f));
                Info::of(
                    Ty::Optional(Box::new(decl.map(Decl::ty).unwrap_or(Ty::Dyn))),
                    infos.first().map_or(0, |i| i.cost).saturating_add(1),
                )
            }
            other => return Err(self.undeclared(other)),
        };
        Ok(info)
    }
}

fn is_operator(name: &str) -> bool {
    [
        op::CONDITIONAL,
        op::LOGICAL_AND,
        op::LOGICAL_OR,
        op::LOGICAL_NOT,
        op::SUBSTRACT,
        op::ADD,
        op::MULTIPLY,
        op::DIVIDE,
        op::MODULO,
        op::EQUALS,
        op::NOT_EQUALS,
        op::GREATER_EQUALS,
        op::LESS_EQUALS,
        op::GREATER,
        op::LESS,
        op::NEGATE,
        op::INDEX,
        op::OPT_INDEX,
        op::OPT_SELECT,
        op::NOT_STRICTLY_FALSE,
        op::IN,
    ]
    .contains(&name)
}

fn literal<'e>(l: &LiteralValue) -> Info<'e> {
    let (ty, size) = match l {
        LiteralValue::Boolean(_) => (Ty::Bool, 1),
        LiteralValue::Int(_) => (Ty::Int, 1),
        LiteralValue::UInt(_) => (Ty::Uint, 1),
        LiteralValue::Double(_) => (Ty::Double, 1),
        LiteralValue::String(s) => (Ty::String, s.inner().chars().count() as u64),
        LiteralValue::Bytes(b) => (Ty::Bytes, b.inner().len() as u64),
        LiteralValue::Null => (Ty::Null, 1),
    };
    Info {
        ty,
        decl: None,
        size: Some(size),
        cost: 0,
    }
}

/// The common type of elements (cel-go's homogeneous aggregate literals; mixed is `dyn`).
fn common(items: Vec<Ty>) -> Ty {
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

/// The integer literal an argument is, if it is one.
fn int_literal(e: Option<&IdedExpr>) -> Option<i64> {
    match e.map(|e| &e.expr) {
        Some(Expr::Literal(LiteralValue::Int(i))) => Some(*i.inner()),
        Some(Expr::Literal(LiteralValue::UInt(u))) => i64::try_from(*u.inner()).ok(),
        _ => None,
    }
}

/// The static cost of one call (without its target's and arguments' costs) and its result's size.
fn static_cost(
    spec: &Spec,
    first: Option<&Info<'_>>,
    member: bool,
    args: &[Info<'_>],
    arg_exprs: &[IdedExpr],
) -> (u64, Option<u64>) {
    let sz = first.map_or(u64::MAX, Info::size);
    // The first argument that is not the receiver.
    let arg = |i: usize| {
        let i = if member || first.is_none() { i } else { i + 1 };
        args.get(i).map_or(u64::MAX, Info::size)
    };
    let elem_text = matches!(first.map(|f| &f.ty), Some(Ty::List(e)) if matches!(**e, Ty::String | Ty::Bytes));
    let elem_size = || {
        first
            .and_then(|f| f.decl)
            .and_then(|d| d.element(false))
            .map_or(u64::MAX, |d| d.max_elements)
    };
    match spec.cost {
        Cost::One | Cost::Size => (1, None),
        Cost::Traverse => (mulf(sz, 0.1), Some(sz)),
        Cost::Replace => {
            let repl = arg(1);
            (mulf(sz, 0.2), Some(sz.saturating_mul(repl.max(1)).saturating_add(repl)))
        }
        Cost::Split => (mulf(sz, 0.2), Some(sz)),
        Cost::Join => {
            let elem = if elem_text { elem_size() } else { u64::MAX };
            let sep = if args.is_empty() { 0 } else { arg(0) };
            let total = sz
                .saturating_mul(elem)
                .saturating_add(sep.saturating_mul(sz.saturating_sub(1)));
            (mulf(total, 0.1), Some(total))
        }
        Cost::Regex => (
            mulf(sz.saturating_add(1), 0.1).saturating_mul(mulf(arg(0), 0.25)),
            Some(sz),
        ),
        Cost::Contains => (mulf(sz, 0.1).saturating_mul(mulf(arg(0), 0.1)), None),
        Cost::Prefix => (mulf(arg(0), 0.1), None),
        Cost::ListTraverse => match first.map(|f| &f.ty) {
            Some(Ty::String) => (mulf(sz, 0.1), None),
            _ if !member && first.is_some() && args.len() > 1 => (args.len() as u64, None),
            _ => {
                let per = if elem_text {
                    1u64.saturating_add(mulf(elem_size(), 0.1))
                } else {
                    1
                };
                (sz.saturating_mul(per), None)
            }
        },
        Cost::Range => match int_literal(arg_exprs.first()) {
            Some(n) => {
                let n = u64::try_from(n).unwrap_or(0);
                (n.saturating_add(11), Some(n))
            }
            None => (u64::MAX, None),
        },
        Cost::Slice => match (int_literal(arg_exprs.first()), int_literal(arg_exprs.get(1))) {
            (Some(a), Some(b)) => {
                let n = u64::try_from(b.saturating_sub(a)).unwrap_or(0);
                (n.saturating_add(11), Some(n))
            }
            _ => (sz.saturating_add(11), Some(sz)),
        },
        Cost::Flatten => {
            let depth = if arg_exprs.is_empty() {
                1
            } else {
                int_literal(arg_exprs.first())
                    .and_then(|d| u64::try_from(d).ok())
                    .unwrap_or(u64::MAX)
            };
            (depth.saturating_mul(sz).saturating_add(11), None)
        }
        Cost::Reverse => match first.map(|f| &f.ty) {
            Some(Ty::String) => (mulf(sz, 0.1), Some(sz)),
            _ => (sz.saturating_add(11), Some(sz)),
        },
        Cost::Quadratic => {
            let f = if elem_text { 2.1 } else { 2.0 };
            (mulf(sz.saturating_mul(sz), f).saturating_add(11), Some(sz))
        }
        Cost::Sets(f) => {
            let a = args.first().map_or(u64::MAX, Info::size);
            let b = args.get(1).map_or(u64::MAX, Info::size);
            (a.saturating_mul(b).saturating_mul(u64::from(f)).saturating_add(1), None)
        }
        Cost::Validate => (mulf(arg(0), 0.1).saturating_mul(32), None),
        Cost::IsCanonical => (mulf(sz, 0.2), None),
        Cost::Cidr => {
            let parse = if matches!(args.first().map(|a| &a.ty), Some(Ty::String)) {
                mulf(arg(0), 0.1)
            } else {
                0
            };
            let base = if spec.name == "containsCIDR" { 7 } else { 4 };
            (parse.saturating_add(base), None)
        }
        Cost::Quote => (mulf(sz, 0.1), Some(sz.saturating_mul(2).saturating_add(2))),
        Cost::Format => (mulf(sz, 0.1), None),
    }
}

//! The evaluator: walks the parsed expression with a cost tracker, as cel-go's interpreter does with
//! `cel.CostLimit`: every node is charged what cel-go's runtime tracker charges for it, and the
//! evaluation stops with `operation cancelled: actual cost limit exceeded` as soon as the total passes
//! the limit, before the work that would pass it is done (a call's cost is charged before the call).
//!
//! Control flow (logical operators with CEL's error absorption, conditionals, comprehensions, field
//! selection, indexing, optionals, literals) is evaluated here; named functions are the `cel` crate's
//! and kube-cel's, called with their arguments already evaluated. Where this evaluator does work that
//! cel-go's value model avoids (copying a list on concatenation, converting a big argument for a
//! library call, counting a string's characters for `size`), that work is charged too, one unit per
//! [`WORK_BYTES`] bytes or per ten elements: runtime costs here are never below cel-go's and can be
//! above them for expressions over large values. A comprehension's accumulator is appended to in
//! place, so `map` and `filter` are linear.
//!
//! Nothing here panics on any input: library calls run under `catch_unwind` and turn a panic into an
//! error, recursion grows the stack on demand, and arithmetic is checked.

use std::sync::Arc;

use kube_cel::cel::common::ast::operators as op;
use kube_cel::cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
use kube_cel::cel::objects::{Key, Map, Opaque, OptionalValue};
use kube_cel::cel::{Context, Value};

use crate::check::{TYPE_NAMES, mulf};
use crate::functions::{self, Cost, NAMESPACES, Spec};

/// Bytes of hidden work (copying, counting) charged as one cost unit.
pub const WORK_BYTES: u64 = 16;

/// What setting up a library call costs beyond the call itself (a scope, its arguments converted in
/// and the result out), in cost units: a few times one node's evaluation.
const LIBRARY_CALL_OVERHEAD: u64 = 4;

/// Bytes of arguments a library call copies for free (most calls take a few short values).
const FREE_COPY_BYTES: u64 = 256;

/// cel-go ext lists' `defaultMaxRangeSize`.
pub const MAX_RANGE: i64 = 1_000_000;

/// cel-go's `CheckFrequency`: comprehension iterations between interrupt checks.
const CHECK_FREQUENCY: u64 = 100;

/// Why an evaluation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalError {
    /// The cost passed the limit: `operation cancelled: actual cost limit exceeded`.
    CostLimitExceeded,
    /// The caller's interrupt fired (a deadline): `operation interrupted`.
    Interrupted,
    /// Any other runtime error, in cel-go's words where they are known.
    Runtime(String),
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvalError::CostLimitExceeded => f.write_str("operation cancelled: actual cost limit exceeded"),
            EvalError::Interrupted => f.write_str("operation interrupted"),
            EvalError::Runtime(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for EvalError {}

impl EvalError {
    /// Whether the evaluation was stopped (cost limit or interrupt) rather than failed: such errors are
    /// never absorbed by `||`, `&&` or a comprehension's loop condition.
    pub fn is_stop(&self) -> bool {
        matches!(self, EvalError::CostLimitExceeded | EvalError::Interrupted)
    }

    fn no_overload() -> Self {
        EvalError::Runtime("no such overload".into())
    }
}

type R = Result<Value, EvalError>;

/// A CEL type as a value (`type(x) == int`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TypeValue(pub String);

impl Opaque for TypeValue {
    fn runtime_type_name(&self) -> &str {
        "type"
    }
}

thread_local! {
    /// The standard functions and Kubernetes' libraries, registered once per thread.
    static BASE: Context<'static> = {
        use kube_cel::KubeCelExt;
        Context::default().with_all()
    };
}

/// One evaluation's state.
pub(crate) struct Machine<'p, 'v> {
    vars: &'v [(&'v str, Value)],
    locals: Vec<(&'p str, Value)>,
    pub cost: u64,
    limit: u64,
    interrupt: Option<&'v dyn Fn() -> bool>,
    iterations: u64,
}

impl<'p, 'v> Machine<'p, 'v> {
    pub(crate) fn new(vars: &'v [(&'v str, Value)], limit: u64, interrupt: Option<&'v dyn Fn() -> bool>) -> Self {
        Machine {
            vars,
            locals: Vec::new(),
            cost: 0,
            limit,
            interrupt,
            iterations: 0,
        }
    }

    fn charge(&mut self, n: u64) -> Result<(), EvalError> {
        self.cost = self.cost.saturating_add(n);
        if self.cost > self.limit {
            Err(EvalError::CostLimitExceeded)
        } else {
            Ok(())
        }
    }

    /// What may still be spent.
    fn remaining(&self) -> u64 {
        self.limit.saturating_sub(self.cost)
    }

    pub(crate) fn eval(&mut self, e: &'p IdedExpr) -> R {
        stacker::maybe_grow(64 * 1024, 2 * 1024 * 1024, || self.eval_inner(e))
    }

    fn eval_inner(&mut self, e: &'p IdedExpr) -> R {
        match &e.expr {
            Expr::Literal(l) => Ok(literal(l)),
            Expr::Ident(name) => {
                self.charge(1)?;
                self.ident(name)
            }
            Expr::Select(s) => {
                let v = self.eval(&s.operand)?;
                if s.test {
                    return has_field(&v, &s.field).map(Value::Bool);
                }
                self.charge(1)?;
                select(&v, &s.field)
            }
            Expr::Call(call) => self.call(call),
            Expr::List(l) => {
                let constant = l.elements.iter().all(|x| matches!(x.expr, Expr::Literal(_)));
                if !constant {
                    self.charge(10)?;
                }
                let mut out = Vec::with_capacity(l.elements.len());
                for (i, x) in l.elements.iter().enumerate() {
                    let v = self.eval(x)?;
                    if l.optional_indices.contains(&i) {
                        match optional_inner(&v) {
                            Some(Some(inner)) => out.push(inner),
                            Some(None) => {}
                            None => out.push(v),
                        }
                    } else {
                        out.push(v);
                    }
                }
                Ok(Value::List(Arc::new(out)))
            }
            Expr::Map(m) => {
                self.charge(30)?;
                let mut out = std::collections::HashMap::with_capacity(m.entries.len());
                for entry in &m.entries {
                    let EntryExpr::MapEntry(me) = &entry.expr else {
                        return Err(EvalError::Runtime("struct literals are not supported".into()));
                    };
                    let k = to_key(self.eval(&me.key)?)?;
                    let v = self.eval(&me.value)?;
                    if me.optional {
                        if let Some(Some(inner)) = optional_inner(&v) {
                            out.insert(k, inner);
                        }
                    } else {
                        out.insert(k, v);
                    }
                }
                Ok(Value::Map(Map { map: Arc::new(out) }))
            }
            Expr::Comprehension(c) => self.comprehension(c),
            Expr::Struct(_) => Err(EvalError::Runtime("struct literals are not supported".into())),
            Expr::Unspecified => Err(EvalError::Runtime("empty expression".into())),
        }
    }

    fn ident(&self, name: &str) -> R {
        if let Some((_, v)) = self.locals.iter().rev().find(|(n, _)| *n == name) {
            return Ok(v.clone());
        }
        if let Some((_, v)) = self.vars.iter().find(|(n, _)| *n == name) {
            return Ok(v.clone());
        }
        if TYPE_NAMES.contains(&name) {
            return Ok(Value::Opaque(Arc::new(TypeValue(name.to_string()))));
        }
        Err(EvalError::Runtime(format!("no such attribute: {name}")))
    }

    fn comprehension(&mut self, c: &'p kube_cel::cel::common::ast::ComprehensionExpr) -> R {
        let range = self.eval(&c.iter_range)?;
        let items: Arc<Vec<Value>> = match range {
            Value::List(l) => l,
            Value::Map(m) => Arc::new(m.map.keys().map(Value::from).collect()),
            _ => return Err(EvalError::Runtime("expression does not support iteration".into())),
        };
        let init = self.eval(&c.accu_init)?;
        self.locals.push((c.accu_var.as_str(), init));
        let accu_slot = self.locals.len() - 1;
        let outcome = self.iterate(c, &items, accu_slot);
        let result = outcome.and_then(|()| self.eval(&c.result));
        self.locals.truncate(accu_slot);
        result
    }

    fn iterate(
        &mut self,
        c: &'p kube_cel::cel::common::ast::ComprehensionExpr,
        items: &[Value],
        accu_slot: usize,
    ) -> Result<(), EvalError> {
        for (index, item) in items.iter().enumerate() {
            self.iterations = self.iterations.saturating_add(1);
            if self.iterations.is_multiple_of(CHECK_FREQUENCY)
                && let Some(interrupt) = self.interrupt
                && interrupt()
            {
                return Err(EvalError::Interrupted);
            }
            match self.eval(&c.loop_cond) {
                Ok(Value::Bool(true)) => {}
                Ok(Value::Bool(false)) => break,
                Ok(_) => return Err(EvalError::no_overload()),
                Err(e) => return Err(e),
            }
            let pushed = match &c.iter_var2 {
                Some(v2) => {
                    self.locals.push((c.iter_var.as_str(), Value::Int(index as i64)));
                    self.locals.push((v2.as_str(), item.clone()));
                    2
                }
                None => {
                    self.locals.push((c.iter_var.as_str(), item.clone()));
                    1
                }
            };
            let step = self.eval(&c.loop_step);
            self.locals.truncate(self.locals.len() - pushed);
            let step = step?;
            if let Some(slot) = self.locals.get_mut(accu_slot) {
                slot.1 = step;
            }
        }
        Ok(())
    }

    fn call(&mut self, call: &'p CallExpr) -> R {
        let name = call.func_name.as_str();
        if call.target.is_none() {
            match name {
                n if n == op::LOGICAL_AND || n == op::LOGICAL_OR => return self.logical(n == op::LOGICAL_AND, call),
                n if n == op::CONDITIONAL => {
                    let [c, t, f] = call.args.as_slice() else {
                        return Err(EvalError::no_overload());
                    };
                    return match self.eval(c)? {
                        Value::Bool(true) => self.eval(t),
                        Value::Bool(false) => self.eval(f),
                        _ => Err(EvalError::no_overload()),
                    };
                }
                n if n == op::NOT_STRICTLY_FALSE => {
                    self.charge(1)?;
                    let arg = call.args.first().ok_or_else(EvalError::no_overload)?;
                    return match self.eval(arg) {
                        Ok(Value::Bool(b)) => Ok(Value::Bool(b)),
                        Err(e) if e.is_stop() => Err(e),
                        _ => Ok(Value::Bool(true)),
                    };
                }
                n if n == op::ADD => return self.add(call),
                n if n == op::OPT_SELECT => {
                    self.charge(1)?;
                    let (Some(operand), Some(field)) = (call.args.first(), call.args.get(1)) else {
                        return Err(EvalError::no_overload());
                    };
                    let Expr::Literal(LiteralValue::String(field)) = &field.expr else {
                        return Err(EvalError::no_overload());
                    };
                    let v = self.eval(operand)?;
                    return optional_select(&v, field.inner());
                }
                _ if is_operator(name) => {
                    let mut args = Vec::with_capacity(call.args.len());
                    for a in &call.args {
                        args.push(self.eval(a)?);
                    }
                    return self.operator(name, args);
                }
                _ => {}
            }
        }
        // `ns.f(args)`: a qualified global function, unless `ns` is a variable.
        let qualified = match call.target.as_deref().map(|t| &t.expr) {
            Some(Expr::Ident(ns))
                if NAMESPACES.contains(&ns.as_str())
                    && !self.locals.iter().any(|(n, _)| n == ns)
                    && !self.vars.iter().any(|(n, _)| n == ns) =>
            {
                Some(format!("{ns}.{name}"))
            }
            _ => None,
        };
        let (fname, this) = match &qualified {
            Some(q) => (q.as_str(), None),
            None => match &call.target {
                Some(t) => (name, Some(self.eval(t)?)),
                None => (name, None),
            },
        };
        let mut args = Vec::with_capacity(call.args.len());
        for a in &call.args {
            args.push(self.eval(a)?);
        }
        let spec = functions::lookup(fname, this.is_some(), args.len())
            .map_err(|_| EvalError::Runtime(format!("no such overload: {fname}")))?;
        self.function(spec, fname, this, args)
    }

    fn logical(&mut self, and: bool, call: &'p CallExpr) -> R {
        let [a, b] = call.args.as_slice() else {
            return Err(EvalError::no_overload());
        };
        // CEL's commutative logic: a decisive operand wins over an error in the other one.
        let decisive = !and;
        let left = self.eval(a);
        match &left {
            Ok(Value::Bool(v)) if *v == decisive => return Ok(Value::Bool(decisive)),
            Err(e) if e.is_stop() => return left,
            _ => {}
        }
        let right = self.eval(b);
        match (&left, &right) {
            (_, Ok(Value::Bool(v))) if *v == decisive => Ok(Value::Bool(decisive)),
            (_, Err(e)) if e.is_stop() => right,
            (Ok(Value::Bool(_)), Ok(Value::Bool(_))) => Ok(Value::Bool(!decisive)),
            (Err(_), _) => left,
            (_, Err(_)) => right,
            _ => Err(EvalError::no_overload()),
        }
    }

    /// `_+_`; a comprehension's accumulator (`@result + [x]`) is appended to in place.
    fn add(&mut self, call: &'p CallExpr) -> R {
        let [a, b] = call.args.as_slice() else {
            return Err(EvalError::no_overload());
        };
        let rhs = self.eval(b)?;
        let lhs = match &a.expr {
            Expr::Ident(name) if name.starts_with('@') || name.starts_with("__") => {
                self.charge(1)?;
                match self.locals.iter_mut().rev().find(|(n, _)| n == name) {
                    Some(slot) => std::mem::replace(&mut slot.1, Value::Null),
                    None => self.ident(name)?,
                }
            }
            _ => self.eval(a)?,
        };
        let cost = match (&lhs, &rhs) {
            (Value::String(l), Value::String(r)) => mulf((l.len() as u64).saturating_add(r.len() as u64), 0.1),
            (Value::Bytes(l), Value::Bytes(r)) => mulf((l.len() as u64).saturating_add(r.len() as u64), 0.1),
            (Value::List(l), Value::List(r)) => {
                let copied = if Arc::strong_count(l) == 1 {
                    r.len()
                } else {
                    l.len().saturating_add(r.len())
                };
                1u64.saturating_add(copied as u64 / 10)
            }
            _ => 1,
        };
        self.charge(cost.max(1))?;
        (lhs + rhs).map_err(|e| EvalError::Runtime(e.to_string()))
    }

    fn operator(&mut self, name: &str, mut args: Vec<Value>) -> R {
        match (name, args.len()) {
            (n, 1) if n == op::LOGICAL_NOT => {
                self.charge(1)?;
                match args.pop() {
                    Some(Value::Bool(b)) => Ok(Value::Bool(!b)),
                    _ => Err(EvalError::no_overload()),
                }
            }
            (n, 1) if n == op::NEGATE => {
                self.charge(1)?;
                match args.pop() {
                    Some(Value::Int(i)) => i
                        .checked_neg()
                        .map(Value::Int)
                        .ok_or_else(|| EvalError::Runtime("int overflow".into())),
                    Some(Value::Float(f)) => Ok(Value::Float(-f)),
                    _ => Err(EvalError::no_overload()),
                }
            }
            (n, 2) if n == op::EQUALS || n == op::NOT_EQUALS => {
                let (a, b) = (&args[0], &args[1]);
                let mut units = 0u64;
                let cap = self.remaining().saturating_mul(10);
                let eq = equal(a, b, &mut units, cap);
                let base = mulf(value_size(a).min(value_size(b)), 0.1).max(1);
                self.charge(base.saturating_add(units / 10))?;
                Ok(Value::Bool((n == op::EQUALS) == eq))
            }
            (n, 2) if [op::LESS, op::LESS_EQUALS, op::GREATER, op::GREATER_EQUALS].contains(&n) => {
                let (a, b) = (&args[0], &args[1]);
                let c = match (a, b) {
                    (Value::String(_) | Value::Bytes(_), _) => mulf(value_size(a).min(value_size(b)), 0.1).max(1),
                    _ => 1,
                };
                self.charge(c)?;
                let ord = a.partial_cmp(b).ok_or_else(EvalError::no_overload)?;
                use std::cmp::Ordering::*;
                let r = match n {
                    x if x == op::LESS => ord == Less,
                    x if x == op::LESS_EQUALS => ord != Greater,
                    x if x == op::GREATER => ord == Greater,
                    _ => ord != Less,
                };
                Ok(Value::Bool(r))
            }
            (n, 2) if [op::SUBSTRACT, op::MULTIPLY, op::DIVIDE, op::MODULO].contains(&n) => {
                self.charge(1)?;
                let b = args.pop().unwrap_or(Value::Null);
                let a = args.pop().unwrap_or(Value::Null);
                match (&a, &b) {
                    (Value::Int(_) | Value::UInt(_), Value::Int(0) | Value::UInt(0))
                        if n == op::DIVIDE || n == op::MODULO =>
                    {
                        return Err(EvalError::Runtime(
                            if n == op::DIVIDE {
                                "division by zero"
                            } else {
                                "modulus by zero"
                            }
                            .into(),
                        ));
                    }
                    _ => {}
                }
                let r = match n {
                    x if x == op::SUBSTRACT => a - b,
                    x if x == op::MULTIPLY => a * b,
                    x if x == op::DIVIDE => a / b,
                    _ => a % b,
                };
                r.map_err(|e| EvalError::Runtime(e.to_string()))
            }
            (n, 2) if n == op::IN => {
                let (needle, hay) = (&args[0], &args[1]);
                match hay {
                    Value::List(l) => {
                        self.charge((l.len() as u64).max(1))?;
                        let cap = self.remaining().saturating_mul(10);
                        let mut units = 0u64;
                        let found = l.iter().any(|x| equal(needle, x, &mut units, cap));
                        self.charge(units / 10)?;
                        Ok(Value::Bool(found))
                    }
                    Value::Map(m) => {
                        self.charge(1)?;
                        Ok(Value::Bool(
                            to_key(needle.clone()).is_ok_and(|k| m.map.contains_key(&k)),
                        ))
                    }
                    _ => Err(EvalError::no_overload()),
                }
            }
            (n, 2) if n == op::INDEX => {
                self.charge(1)?;
                index(&args[0], &args[1])
            }
            (n, 2) if n == op::OPT_INDEX => {
                self.charge(1)?;
                optional_index(&args[0], &args[1])
            }
            _ => Err(EvalError::no_overload()),
        }
    }

    /// A named function: charged by its cost class before it runs, then called.
    fn function(&mut self, spec: &Spec, name: &str, this: Option<Value>, args: Vec<Value>) -> R {
        let first = this.as_ref().or(args.first());
        self.charge(runtime_cost(spec, first, this.is_some(), &args)?)?;
        // Native functions: cheap, or with bounds the libraries lack.
        match name {
            "size" => {
                let v = first.ok_or_else(EvalError::no_overload)?;
                let n = match v {
                    Value::String(s) => {
                        self.charge(s.len() as u64 / WORK_BYTES)?;
                        s.chars().count()
                    }
                    Value::Bytes(b) => b.len(),
                    Value::List(l) => l.len(),
                    Value::Map(m) => m.map.len(),
                    _ => return Err(EvalError::no_overload()),
                };
                return Ok(Value::Int(i64::try_from(n).unwrap_or(i64::MAX)));
            }
            "dyn" => return args.into_iter().next().ok_or_else(EvalError::no_overload),
            "type" => {
                let v = args.first().ok_or_else(EvalError::no_overload)?;
                return Ok(Value::Opaque(Arc::new(TypeValue(type_name(v)))));
            }
            "bool" => {
                return match args.first() {
                    Some(Value::Bool(b)) => Ok(Value::Bool(*b)),
                    Some(Value::String(s)) => match s.as_str() {
                        "1" | "t" | "true" | "TRUE" | "True" => Ok(Value::Bool(true)),
                        "0" | "f" | "false" | "FALSE" | "False" => Ok(Value::Bool(false)),
                        other => Err(EvalError::Runtime(format!(
                            "type conversion error from 'string' to 'bool': {other}"
                        ))),
                    },
                    _ => Err(EvalError::no_overload()),
                };
            }
            "lists.range" => {
                let n = match args.first() {
                    Some(Value::Int(n)) => *n,
                    _ => return Err(EvalError::no_overload()),
                };
                if n < 0 {
                    return Err(EvalError::Runtime(format!(
                        "lists.range: size must be non-negative, got {n}"
                    )));
                }
                if n > MAX_RANGE {
                    return Err(EvalError::Runtime(format!(
                        "lists.range: size {n} exceeds maximum allowed ({MAX_RANGE})"
                    )));
                }
                return Ok(Value::List(Arc::new((0..n).map(Value::Int).collect())));
            }
            // The commonest string functions natively: a library call costs more to set up than they do.
            "startsWith" | "endsWith" | "contains" | "lowerAscii" | "upperAscii" | "trim"
                if matches!(this, Some(Value::String(_))) =>
            {
                let Some(Value::String(text)) = &this else {
                    return Err(EvalError::no_overload());
                };
                let arg = || match args.first() {
                    Some(Value::String(a)) => Ok(a.as_str()),
                    _ => Err(EvalError::no_overload()),
                };
                return Ok(match name {
                    "startsWith" => Value::Bool(text.starts_with(arg()?)),
                    "endsWith" => Value::Bool(text.ends_with(arg()?)),
                    "contains" => Value::Bool(text.contains(arg()?)),
                    "lowerAscii" => Value::String(Arc::new(text.to_ascii_lowercase())),
                    "upperAscii" => Value::String(Arc::new(text.to_ascii_uppercase())),
                    _ => Value::String(Arc::new(text.trim().to_string())),
                });
            }
            "indexOf" | "lastIndexOf" if matches!(this, Some(Value::String(_))) => {
                let (Some(Value::String(text)), Some(Value::String(sub))) = (&this, args.first()) else {
                    return Err(EvalError::no_overload());
                };
                return string_index(text, sub, args.get(1), name == "lastIndexOf");
            }
            "matches" | "find" | "findAll" => {
                let (Some(Value::String(text)), Some(Value::String(pattern))) =
                    (first, arg_of(this.is_some(), &args, 0))
                else {
                    return Err(EvalError::no_overload());
                };
                let (re, compiled) = compiled_regex(pattern);
                if compiled {
                    // A pattern not seen before is compiled (then cached): charged by its length.
                    self.charge(100u64.saturating_add((pattern.len() as u64).saturating_mul(10)))?;
                }
                let re = re.map_err(|e| EvalError::Runtime(format!("{name}: invalid regex: {e}")))?;
                return Ok(match name {
                    "matches" => Value::Bool(re.is_match(text)),
                    "find" => Value::String(Arc::new(
                        re.find(text).map(|m| m.as_str().to_string()).unwrap_or_default(),
                    )),
                    _ => {
                        let limit = match arg_of(this.is_some(), &args, 1) {
                            Some(Value::Int(n)) if *n >= 0 => usize::try_from(*n).unwrap_or(usize::MAX),
                            _ => usize::MAX,
                        };
                        Value::List(Arc::new(
                            re.find_iter(text)
                                .take(limit)
                                .map(|m| Value::String(Arc::new(m.as_str().to_string())))
                                .collect(),
                        ))
                    }
                });
            }
            "optional.of" => return Ok(optional(args.into_iter().next())),
            "optional.none" => return Ok(optional(None)),
            "optional.ofNonZeroValue" => {
                let v = args.into_iter().next();
                return Ok(optional(v.filter(|v| !v.is_zero())));
            }
            "hasValue" => {
                return match this.as_ref().and_then(optional_inner) {
                    Some(inner) => Ok(Value::Bool(inner.is_some())),
                    None => Err(EvalError::no_overload()),
                };
            }
            "value" => {
                return match this.as_ref().and_then(optional_inner) {
                    Some(Some(v)) => Ok(v),
                    Some(None) => Err(EvalError::Runtime("optional.none() dereference".into())),
                    None => Err(EvalError::no_overload()),
                };
            }
            "or" => {
                return match this.as_ref().and_then(optional_inner) {
                    Some(Some(_)) => this.ok_or_else(EvalError::no_overload),
                    Some(None) => args.into_iter().next().ok_or_else(EvalError::no_overload),
                    None => Err(EvalError::no_overload()),
                };
            }
            "orValue" => {
                return match this.as_ref().and_then(optional_inner) {
                    Some(Some(v)) => Ok(v),
                    Some(None) => args.into_iter().next().ok_or_else(EvalError::no_overload),
                    None => Err(EvalError::no_overload()),
                };
            }
            _ => {}
        }
        // A library function: converting its arguments copies them, which is charged too.
        let cap = self.remaining().saturating_mul(WORK_BYTES);
        let mut weight = 0u64;
        for v in this.iter().chain(args.iter()) {
            weight = weight.saturating_add(deep_bytes(v, cap));
        }
        self.charge((weight.saturating_sub(FREE_COPY_BYTES) / WORK_BYTES).saturating_add(LIBRARY_CALL_OVERHEAD))?;
        delegate(name, this, args)
    }
}

/// `indexOf` / `lastIndexOf` on strings, in characters as cel-go counts them (an offset, when given,
/// is where the search starts: forwards, or backwards for `lastIndexOf`).
fn string_index(text: &str, sub: &str, offset: Option<&Value>, last: bool) -> R {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let len = chars.len();
    let offset = match offset {
        None => None,
        Some(Value::Int(o)) => match usize::try_from(*o).ok().filter(|&o| o <= len) {
            Some(o) => Some(o),
            None => return Err(EvalError::Runtime(format!("index out of range: {o}"))),
        },
        Some(_) => return Err(EvalError::no_overload()),
    };
    let byte_at = |c: usize| chars.get(c).map_or(text.len(), |(b, _)| *b);
    let char_of = |b: usize| chars.partition_point(|(x, _)| *x < b);
    let found = if last {
        let end = offset.map_or(text.len(), |o| (byte_at(o) + sub.len()).min(text.len()));
        text.get(..end).and_then(|t| t.rfind(sub))
    } else {
        let start = offset.map_or(0, byte_at);
        text.get(start..).and_then(|t| t.find(sub)).map(|b| b + start)
    };
    Ok(Value::Int(
        found.map_or(-1, |b| i64::try_from(char_of(b)).unwrap_or(-1)),
    ))
}

/// Argument `i` of a call (not counting the receiver; the first argument is the receiver of a global
/// call of a member-style function).
fn arg_of(member: bool, args: &[Value], i: usize) -> Option<&Value> {
    args.get(if member { i } else { i + 1 })
}

/// Compiled regular expressions kept per thread, past this many the cache starts over.
const REGEX_CACHE: usize = 256;

thread_local! {
    static REGEXES: std::cell::RefCell<std::collections::HashMap<String, Result<regex::Regex, String>>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// The compiled `pattern` (RE2 syntax, as cel-go's), and whether it was compiled now. The `cel` crate
/// compiles a pattern on every call; a cache makes a regex in a loop cost what its matching costs.
fn compiled_regex(pattern: &str) -> (Result<regex::Regex, String>, bool) {
    REGEXES.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(r) = cache.get(pattern) {
            return (r.clone(), false);
        }
        let r = regex::RegexBuilder::new(pattern)
            .size_limit(1 << 20)
            .dfa_size_limit(1 << 20)
            .build()
            .map_err(|e| e.to_string());
        if cache.len() >= REGEX_CACHE {
            cache.clear();
        }
        cache.insert(pattern.to_string(), r.clone());
        (r, true)
    })
}

/// Calls a registered function with evaluated arguments, bound as variables of a scope of their own.
fn delegate(name: &str, this: Option<Value>, args: Vec<Value>) -> R {
    const ARGS: [&str; 8] = ["@a0", "@a1", "@a2", "@a3", "@a4", "@a5", "@a6", "@a7"];
    if args.len() > ARGS.len() {
        return Err(EvalError::no_overload());
    }
    if this.iter().chain(args.iter()).any(|v| matches!(v, Value::Function(..))) {
        return Err(EvalError::no_overload());
    }
    let call = IdedExpr {
        id: 0,
        expr: Expr::Call(CallExpr {
            func_name: name.to_string(),
            target: this.as_ref().map(|_| {
                Box::new(IdedExpr {
                    id: 0,
                    expr: Expr::Ident("@t".into()),
                })
            }),
            args: (0..args.len())
                .map(|i| IdedExpr {
                    id: 0,
                    expr: Expr::Ident(ARGS[i].into()),
                })
                .collect(),
        }),
    };
    let outcome = BASE.with(|base| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut scope = base.new_inner_scope();
            if let Some(t) = this {
                scope.add_variable_from_value("@t", t);
            }
            for (i, a) in args.into_iter().enumerate() {
                scope.add_variable_from_value(ARGS[i], a);
            }
            Value::resolve(&call, &scope)
        }))
    });
    match outcome {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(EvalError::Runtime(cel_go_words(&e.to_string()))),
        Err(_) => Err(EvalError::Runtime(format!("{name}: internal error"))),
    }
}

/// cel-go's wording of the errors the `cel` crate words differently.
fn cel_go_words(message: &str) -> String {
    if let Some(key) = message.strip_prefix("No such key: ") {
        return format!("no such key: {key}");
    }
    if message == "No such overload" {
        return "no such overload".into();
    }
    message.to_string()
}

/// What a call costs before it runs (cel-go's runtime `CallCost`, and the size of what amplifying
/// functions produce, computed from their arguments first). Errors for arguments no call may take.
fn runtime_cost(spec: &Spec, first: Option<&Value>, member: bool, args: &[Value]) -> Result<u64, EvalError> {
    let len = |v: Option<&Value>| v.map_or(0, value_size);
    let arg = |i: usize| {
        let i = if member || first.is_none() { i } else { i + 1 };
        args.get(i)
    };
    let sz = len(first);
    Ok(match spec.cost {
        Cost::One | Cost::Size => 1,
        Cost::Traverse => mulf(sz, 0.1).max(1),
        Cost::Split | Cost::IsCanonical => mulf(sz, 0.2).max(1),
        Cost::Replace => {
            // The result's size, counted before anything is allocated.
            let (s, old, new) = match (first, arg(0), arg(1)) {
                (Some(Value::String(s)), Some(Value::String(o)), Some(Value::String(n))) => (s, o, n),
                _ => return Ok(mulf(sz, 0.2).max(1)),
            };
            let limit = match arg(2) {
                Some(Value::Int(n)) if *n >= 0 => usize::try_from(*n).unwrap_or(usize::MAX),
                _ => usize::MAX,
            };
            let count = if old.is_empty() {
                s.chars().count().saturating_add(1)
            } else {
                s.matches(old.as_str()).count()
            }
            .min(limit);
            let result = (s.len() as u64).saturating_add((count as u64).saturating_mul(new.len() as u64));
            mulf(sz, 0.2).max(1).saturating_add(mulf(result, 0.1))
        }
        Cost::Join => {
            let Some(Value::List(l)) = first else {
                return Ok(1);
            };
            let sep = len(arg(0));
            let total = l
                .iter()
                .fold(0u64, |t, v| t.saturating_add(value_size(v)))
                .saturating_add(sep.saturating_mul((l.len() as u64).saturating_sub(1)));
            mulf(total, 0.2).max(1)
        }
        Cost::Regex => mulf(sz.saturating_add(1), 0.1).saturating_mul(mulf(len(arg(0)), 0.25).max(1)),
        Cost::Contains => match first {
            Some(Value::String(_)) => mulf(sz, 0.1).max(1).saturating_mul(mulf(len(arg(0)), 0.1).max(1)),
            _ => sz.max(1),
        },
        Cost::Prefix => mulf(len(arg(0)), 0.1).max(1),
        Cost::ListTraverse => match first {
            Some(Value::String(s)) => (s.len() as u64 / 10).max(1),
            Some(Value::List(l)) if member || args.len() == 1 => l
                .iter()
                .fold(0u64, |t, v| {
                    t.saturating_add(match v {
                        Value::String(s) => s.len() as u64 / 10,
                        Value::Bytes(b) => b.len() as u64 / 10,
                        _ => 1,
                    })
                })
                .max(1),
            _ => (args.len() as u64).max(1),
        },
        Cost::Range => match first {
            Some(Value::Int(n)) => u64::try_from(*n)
                .unwrap_or(0)
                .min(MAX_RANGE as u64 + 1)
                .saturating_add(11),
            _ => 11,
        },
        Cost::Slice => match (arg(0), arg(1)) {
            (Some(Value::Int(a)), Some(Value::Int(b))) => u64::try_from(b.saturating_sub(*a))
                .unwrap_or(0)
                .min(sz)
                .saturating_add(11),
            _ => 11,
        },
        Cost::Flatten => {
            let depth = match arg(0) {
                Some(Value::Int(d)) => u64::try_from(*d).unwrap_or(0),
                _ => 1,
            };
            let nested = first.map_or(0, |v| deep_elements(v, depth.min(64)));
            depth.saturating_mul(sz).max(nested).saturating_add(11)
        }
        Cost::Reverse => match first {
            Some(Value::String(_)) => mulf(sz, 0.1).max(1),
            _ => sz.saturating_add(11),
        },
        Cost::Quadratic => {
            let text =
                matches!(first, Some(Value::List(l)) if matches!(l.first(), Some(Value::String(_) | Value::Bytes(_))));
            mulf(sz.saturating_mul(sz), if text { 2.1 } else { 2.0 }).saturating_add(11)
        }
        Cost::Sets(f) => len(args.first())
            .saturating_mul(len(args.get(1)))
            .saturating_mul(u64::from(f))
            .saturating_add(1),
        Cost::Validate => mulf(len(arg(0)).saturating_add(1), 0.1).saturating_mul(32),
        Cost::Cidr => {
            let parse = match args.first() {
                Some(Value::String(s)) => mulf(s.len() as u64, 0.1),
                _ => 0,
            };
            parse.saturating_add(if spec.name == "containsCIDR" { 7 } else { 4 })
        }
        Cost::Quote => mulf(sz, 0.1).max(1),
        Cost::Format => {
            let formatted = args.first().map_or(0, |a| deep_bytes(a, u64::MAX));
            mulf(sz, 0.1).max(1).saturating_add(formatted / WORK_BYTES)
        }
    })
}

fn is_operator(name: &str) -> bool {
    [
        op::LOGICAL_NOT,
        op::SUBSTRACT,
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
        op::IN,
    ]
    .contains(&name)
}

fn literal(l: &LiteralValue) -> Value {
    match l {
        LiteralValue::Boolean(b) => Value::Bool(*b.inner()),
        LiteralValue::Int(i) => Value::Int(*i.inner()),
        LiteralValue::UInt(u) => Value::UInt(*u.inner()),
        LiteralValue::Double(d) => Value::Float(*d.inner()),
        LiteralValue::String(s) => Value::String(Arc::new(s.inner().to_string())),
        LiteralValue::Bytes(b) => Value::Bytes(Arc::new(b.inner().to_vec())),
        LiteralValue::Null => Value::Null,
    }
}

/// cel-go's `actualSize`: characters of a string (bytes here: never fewer), bytes, elements of a list
/// or map, the inner value of a present optional, else 1.
pub(crate) fn value_size(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.len() as u64,
        Value::Bytes(b) => b.len() as u64,
        Value::List(l) => l.len() as u64,
        Value::Map(m) => m.map.len() as u64,
        Value::Opaque(_) => match optional_inner(v) {
            Some(Some(inner)) => value_size(&inner),
            _ => 1,
        },
        _ => 1,
    }
}

/// Bytes a deep copy of `v` moves (8 per value plus the bytes of strings), counting stops past `cap`.
fn deep_bytes(v: &Value, cap: u64) -> u64 {
    let mut total = 0u64;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        total = total.saturating_add(8);
        match v {
            Value::String(s) => total = total.saturating_add(s.len() as u64),
            Value::Bytes(b) => total = total.saturating_add(b.len() as u64),
            Value::List(l) => stack.extend(l.iter()),
            Value::Map(m) => {
                for (k, x) in m.map.iter() {
                    if let Key::String(s) = k {
                        total = total.saturating_add(s.len() as u64);
                    }
                    stack.push(x);
                }
            }
            _ => {}
        }
        if total > cap {
            return total;
        }
    }
    total
}

/// Elements a flatten to `depth` visits.
fn deep_elements(v: &Value, depth: u64) -> u64 {
    match v {
        Value::List(l) if depth > 0 => l
            .iter()
            .fold(l.len() as u64, |t, x| t.saturating_add(deep_elements(x, depth - 1))),
        _ => 0,
    }
}

/// CEL equality (numbers compare across types), counting the container elements visited into `units`
/// and giving up (unequal) past `cap`.
fn equal(a: &Value, b: &Value, units: &mut u64, cap: u64) -> bool {
    *units = units.saturating_add(1);
    if *units > cap {
        return false;
    }
    match (a, b) {
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| equal(p, q, units, cap))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.map.len() == y.map.len()
                && x.map
                    .iter()
                    .all(|(k, v)| y.map.get(k).is_some_and(|w| equal(v, w, units, cap)))
        }
        _ => a == b,
    }
}

fn to_key(v: Value) -> Result<Key, EvalError> {
    match v {
        Value::Int(i) => Ok(Key::Int(i)),
        Value::UInt(u) => Ok(Key::Uint(u)),
        Value::Bool(b) => Ok(Key::Bool(b)),
        Value::String(s) => Ok(Key::String(s)),
        other => Err(EvalError::Runtime(format!(
            "unsupported key type: {}",
            type_name(&other)
        ))),
    }
}

fn key_text(k: &Key) -> String {
    match k {
        Key::Int(i) => i.to_string(),
        Key::Uint(u) => u.to_string(),
        Key::Bool(b) => b.to_string(),
        Key::String(s) => s.to_string(),
    }
}

fn select(v: &Value, field: &str) -> R {
    match v {
        Value::Map(m) => m
            .map
            .get(&Key::String(Arc::new(field.to_string())))
            .cloned()
            .ok_or_else(|| EvalError::Runtime(format!("no such key: {field}"))),
        other => Err(EvalError::Runtime(format!(
            "type '{}' does not support field selection",
            type_name(other)
        ))),
    }
}

fn has_field(v: &Value, field: &str) -> Result<bool, EvalError> {
    match v {
        Value::Map(m) => Ok(m.map.contains_key(&Key::String(Arc::new(field.to_string())))),
        other => Err(EvalError::Runtime(format!(
            "invalid type for field selection: {}",
            type_name(other)
        ))),
    }
}

fn list_position(l: &[Value], i: &Value) -> Result<Option<usize>, EvalError> {
    let n: i64 = match i {
        Value::Int(n) => *n,
        Value::UInt(u) => i64::try_from(*u).unwrap_or(i64::MAX),
        Value::Float(f) if f.fract() == 0.0 && f.is_finite() => *f as i64,
        _ => return Err(EvalError::no_overload()),
    };
    Ok(usize::try_from(n).ok().filter(|&p| p < l.len()))
}

fn index(container: &Value, i: &Value) -> R {
    match container {
        Value::List(l) => match list_position(l, i)? {
            Some(p) => Ok(l[p].clone()),
            None => Err(EvalError::Runtime(format!(
                "index out of bounds: {}",
                match i {
                    Value::Int(n) => n.to_string(),
                    other => format!("{other:?}"),
                }
            ))),
        },
        Value::Map(m) => {
            let k = to_key(i.clone())?;
            m.map
                .get(&k)
                .cloned()
                .ok_or_else(|| EvalError::Runtime(format!("no such key: {}", key_text(&k))))
        }
        _ => Err(EvalError::no_overload()),
    }
}

fn optional_index(container: &Value, i: &Value) -> R {
    let container = match optional_inner(container) {
        Some(Some(inner)) => inner,
        Some(None) => return Ok(optional(None)),
        None => container.clone(),
    };
    match &container {
        Value::List(l) => Ok(optional(list_position(l, i)?.map(|p| l[p].clone()))),
        Value::Map(m) => Ok(optional(to_key(i.clone()).ok().and_then(|k| m.map.get(&k).cloned()))),
        _ => Err(EvalError::no_overload()),
    }
}

fn optional_select(v: &Value, field: &str) -> R {
    let v = match optional_inner(v) {
        Some(Some(inner)) => inner,
        Some(None) => return Ok(optional(None)),
        None => v.clone(),
    };
    match &v {
        Value::Map(m) => Ok(optional(m.map.get(&Key::String(Arc::new(field.to_string()))).cloned())),
        other => Err(EvalError::Runtime(format!(
            "type '{}' does not support field selection",
            type_name(other)
        ))),
    }
}

fn optional(v: Option<Value>) -> Value {
    Value::Opaque(Arc::new(match v {
        Some(v) => OptionalValue::of(v),
        None => OptionalValue::none(),
    }))
}

/// `Some(inner)` when `v` is an optional (`inner` is its value, if any), `None` when it is not one.
fn optional_inner(v: &Value) -> Option<Option<Value>> {
    match v {
        Value::Opaque(o) => o.downcast_ref::<OptionalValue>().map(|o| o.value().cloned()),
        _ => None,
    }
}

/// cel-go's name of a value's type.
pub fn type_name(v: &Value) -> String {
    match v {
        Value::List(_) => "list".into(),
        Value::Map(_) => "map".into(),
        Value::Function(..) => "function".into(),
        Value::Int(_) => "int".into(),
        Value::UInt(_) => "uint".into(),
        Value::Float(_) => "double".into(),
        Value::String(_) => "string".into(),
        Value::Bytes(_) => "bytes".into(),
        Value::Bool(_) => "bool".into(),
        Value::Duration(_) => "google.protobuf.Duration".into(),
        Value::Timestamp(_) => "google.protobuf.Timestamp".into(),
        Value::Opaque(o) => match o.downcast_ref::<TypeValue>() {
            Some(_) => "type".into(),
            None if o.downcast_ref::<OptionalValue>().is_some() => "optional_type".into(),
            None => o.runtime_type_name().to_string(),
        },
        Value::Null => "null_type".into(),
    }
}

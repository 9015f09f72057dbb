//! # kwas-cel
//!
//! CEL as kube-apiserver runs it, for every place kwas evaluates an expression a user wrote: DRA device
//! selectors (the scheduler's allocator and devcluster's `resource.k8s.io` validation) and CRD
//! `x-kubernetes-validations` rules (devcluster). One layer, so every caller gets the same limits:
//!
//! - **Compile** ([`Program::compile`]): parse with cel-go's limits (nesting 250), resolve every
//!   variable and function (a name the Kubernetes environment lacks is refused, as the type checker
//!   refuses it), and **estimate the worst-case cost** the way cel-go v0.29.2's estimator does with
//!   Kubernetes' cost extensions, from the declared sizes of the variables ([`types::Decl`]).
//!   Callers refuse expressions over their budget at write time with kube-apiserver's messages
//!   ([`dra`], [`crd`]).
//! - **Evaluate** ([`Program::evaluate`]) with a **cost limit**: the runtime tracker charges every node
//!   what cel-go charges and stops with `operation cancelled: actual cost limit exceeded` before the
//!   work that would pass the limit is done; an optional interrupt (a deadline) stops long
//!   comprehensions with `operation interrupted`. See [`eval`] for what is charged.
//! - **Cache** ([`Cache`]): compiled programs per distinct source, least recently used evicted.
//!
//! Choices (where upstream leaves one or where this crate differs, see each module):
//! - The evaluator is this crate's, over the `cel` crate's parser and AST, calling the `cel` crate's and
//!   kube-cel's function implementations with evaluated arguments. The `cel` crate's own interpreter
//!   cannot count cost, allocates whatever a call asks for (`lists.range(1000000000000)` aborts the
//!   process on allocation failure) and panics on some inputs; none of that is reachable here.
//! - Static estimates follow cel-go's formulas (the upstream test vectors are ported as tests);
//!   runtime costs are never below cel-go's and also count work this evaluator does that cel-go's value
//!   model avoids (see [`eval`]), so an expression over very large values can be stopped here where
//!   kube-apiserver would finish it.
//! - Types are inferred, not fully checked: a result known to be of the wrong type is refused; one
//!   whose type is only known at run time (`dyn`) is accepted and checked when evaluated.

#![warn(missing_docs)]

mod cache;
mod check;
pub mod crd;
pub mod dra;
pub mod eval;
mod functions;
pub mod parse;
pub mod types;
pub mod value;

use std::sync::Arc;

use kube_cel::cel::common::ast::IdedExpr;

pub use cache::Cache;
pub use eval::EvalError;
pub use kube_cel::cel::Value;
pub use types::{Decl, DeclKind, Ty};

/// Why an expression does not compile: upstream's detail for a `field.Invalid` on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    detail: String,
}

impl CompileError {
    pub(crate) fn invalid(detail: impl Into<String>) -> Self {
        CompileError { detail: detail.into() }
    }

    /// The detail, in kube-apiserver's words (`compilation failed: ERROR: <input>:1:5: ...`).
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.detail)
    }
}

impl std::error::Error for CompileError {}

/// The variables an expression may use, with their declared types and sizes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Env {
    pub(crate) vars: Vec<(String, Decl)>,
}

impl Env {
    /// An environment with no variables.
    pub fn new() -> Self {
        Env::default()
    }

    /// Adds (or replaces) variable `name`.
    pub fn with_var(mut self, name: impl Into<String>, decl: Decl) -> Self {
        let name = name.into();
        self.vars.retain(|(n, _)| *n != name);
        self.vars.push((name, decl));
        self
    }
}

/// A compiled expression: parsed, resolved and cost-estimated.
#[derive(Debug, Clone)]
pub struct Program {
    source: Arc<str>,
    ast: Arc<IdedExpr>,
    ty: Ty,
    max_cost: u64,
}

/// The outcome of one evaluation.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// The value, or why there is none.
    pub result: Result<Value, EvalError>,
    /// The cost charged (past the limit when the limit stopped it).
    pub cost: u64,
}

impl Program {
    /// Compiles `source` in `env`: parse, resolve, estimate.
    pub fn compile(source: &str, env: &Env) -> Result<Program, CompileError> {
        let ast = parse::parse(source)?;
        let analysis = check::analyze(source, &ast, env)?;
        Ok(Program {
            source: source.into(),
            ast: Arc::new(ast),
            ty: analysis.ty,
            max_cost: analysis.max_cost,
        })
    }

    /// The source text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The result's static type as far as it is known.
    pub fn result_type(&self) -> &Ty {
        &self.ty
    }

    /// The estimated worst-case cost (cel-go's `CostEstimate.Max`; `u64::MAX` when unbounded).
    pub fn max_cost(&self) -> u64 {
        self.max_cost
    }

    /// Whether the expression reads variable `name` (`oldSelf` makes a CRD rule a transition rule).
    pub fn references(&self, name: &str) -> bool {
        let mut stack = vec![&*self.ast];
        while let Some(e) = stack.pop() {
            use kube_cel::cel::common::ast::{EntryExpr, Expr};
            match &e.expr {
                Expr::Ident(n) if n == name => return true,
                Expr::Call(c) => {
                    stack.extend(c.target.as_deref());
                    stack.extend(c.args.iter());
                }
                Expr::Select(s) => stack.push(&s.operand),
                Expr::Comprehension(c) => {
                    stack.extend([&c.iter_range, &c.accu_init, &c.loop_cond, &c.loop_step, &c.result]);
                }
                Expr::List(l) => stack.extend(l.elements.iter()),
                Expr::Map(m) => {
                    for entry in &m.entries {
                        if let EntryExpr::MapEntry(me) = &entry.expr {
                            stack.push(&me.key);
                            stack.push(&me.value);
                        }
                    }
                }
                _ => {}
            }
        }
        false
    }

    /// Evaluates with `vars` bound, stopping past `limit` cost units.
    pub fn evaluate(&self, vars: &[(&str, Value)], limit: u64) -> Evaluation {
        self.evaluate_with(vars, limit, None)
    }

    /// [`Program::evaluate`] with an interrupt checked every 100 comprehension iterations (a deadline:
    /// when it returns true the evaluation stops with `operation interrupted`).
    pub fn evaluate_with(
        &self,
        vars: &[(&str, Value)],
        limit: u64,
        interrupt: Option<&dyn Fn() -> bool>,
    ) -> Evaluation {
        let mut m = eval::Machine::new(vars, limit, interrupt);
        let result = m.eval(&self.ast);
        Evaluation { result, cost: m.cost }
    }
}

#[cfg(test)]
mod tests;

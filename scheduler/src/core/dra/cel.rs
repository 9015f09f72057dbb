//! CEL device selectors (`spec.selectors[].cel.expression` of DeviceClasses and requests), compiled and
//! evaluated by [`kwas_cel::dra`]: upstream DRA's environment (the variable `device` with `driver`,
//! `attributes` domain -> name -> value, `capacity` domain -> name -> quantity and
//! `allowMultipleAllocations`), each evaluation stopped past `CELSelectorExpressionMaxCost` (1,000,000)
//! with upstream's `operation cancelled: actual cost limit exceeded`.
//!
//! Choices:
//! - A selector is compiled once per distinct expression and shared ([`Selector`], reference counted)
//!   by the classes and requests that use it; it is freed with the last of them, and the table that
//!   finds it by text drops dead entries as it grows. Stored selectors are not refused for their
//!   estimated cost (kube-apiserver checked that when they were written; upstream's allocator compiles
//!   them with cost estimation off); the runtime limit bounds them.
//! - Results are cached per (selector, device) until the devices change, and a selector is evaluated
//!   only for the devices the allocator looks at (those reachable from the node being tried), never for
//!   every device of the cluster. The cache is cleared past a bound on its size.
//! - Every evaluation is charged to the pod's allocation [`Budget`](super::Budget); an evaluation
//!   stopped by the budget (rather than by its own limit) is not a result and is not cached.
//! - A runtime error (say a missing attribute) makes the device not match and the first such error is
//!   reported in the pod's message; upstream fails the allocation attempt with it instead.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};

use kwas_cel::dra::{self, CEL_SELECTOR_EXPRESSION_MAX_COST, CEL_SELECTOR_EXPRESSION_MAX_LENGTH};
use kwas_cel::{EvalError, Program, Value};

pub(crate) use kwas_cel::dra::Attribute as Attr;

/// Results cached before the cache is cleared.
const MAX_RESULTS: usize = 1 << 20;
/// Parsed quantities kept.
const MAX_QUANTITIES: usize = 4096;

/// A compiled selector, shared by every class and request that uses the same expression.
#[derive(Debug)]
pub(crate) struct Selector {
    id: u64,
    program: Result<Program, String>,
}

impl PartialEq for Selector {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for Selector {}

/// A reference to a compiled selector.
pub(crate) type Sel = Arc<Selector>;

/// What CEL sees of one device.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeviceView<'a> {
    pub driver: &'a str,
    /// Fully qualified attribute name (`domain/name`) -> value.
    pub attributes: &'a BTreeMap<String, Attr>,
    /// Fully qualified capacity name -> quantity text.
    pub capacity: &'a BTreeMap<String, String>,
    pub allow_multiple_allocations: bool,
}

/// One device against one selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Match {
    Yes,
    No,
    /// A runtime error (the device does not match).
    Error(String),
    /// The pod's or the cycle's budget ran out first.
    OutOfBudget,
}

/// Compiled selectors and their results per device.
#[derive(Debug, Default)]
pub(crate) struct Exprs {
    interned: HashMap<String, Weak<Selector>>,
    prune_at: usize,
    next_id: u64,
    /// (selector, device) -> result.
    results: HashMap<(u64, u32), Result<bool, String>>,
    /// Device -> its CEL value.
    values: HashMap<u32, Value>,
    quantities: HashMap<String, Value>,
}

/// Why an expression is refused before it is compiled.
pub(crate) fn precheck(expr: &str) -> Result<(), String> {
    if expr.len() > CEL_SELECTOR_EXPRESSION_MAX_LENGTH {
        return Err(format!(
            "Too long: may not be more than {CEL_SELECTOR_EXPRESSION_MAX_LENGTH} bytes"
        ));
    }
    Ok(())
}

impl Exprs {
    /// The compiled selector of `expr`, compiling it the first time (or after its last user went).
    pub(crate) fn intern(&mut self, expr: &str) -> Sel {
        if let Some(sel) = self.interned.get(expr).and_then(Weak::upgrade) {
            return sel;
        }
        let program = precheck(expr).and_then(|()| dra::compile(expr).map_err(|e| e.detail().to_string()));
        self.next_id += 1;
        let sel = Arc::new(Selector {
            id: self.next_id,
            program,
        });
        self.interned.insert(expr.to_string(), Arc::downgrade(&sel));
        if self.interned.len() > self.prune_at {
            self.interned.retain(|_, w| w.strong_count() > 0);
            let live: std::collections::HashSet<u64> =
                self.interned.values().filter_map(Weak::upgrade).map(|s| s.id).collect();
            self.results.retain(|(id, _), _| live.contains(id));
            self.prune_at = self.interned.len().saturating_mul(2).max(64);
        }
        sel
    }

    /// How many selectors are compiled and alive.
    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        self.interned.values().filter(|w| w.strong_count() > 0).count()
    }

    /// Forgets every cached result (the devices changed).
    pub(crate) fn devices_changed(&mut self) {
        self.results.clear();
        self.values.clear();
    }

    /// Whether device `device` (seen as `view`) matches `sel`, charging the evaluation to `budget`.
    pub(crate) fn matches(
        &mut self,
        sel: &Selector,
        device: u32,
        view: &DeviceView<'_>,
        budget: &mut super::Budget,
    ) -> Match {
        let program = match &sel.program {
            Ok(p) => p,
            Err(e) => return Match::Error(e.clone()),
        };
        if let Some(r) = self.results.get(&(sel.id, device)) {
            return to_match(r.clone());
        }
        let left = budget.left();
        if left == 0 {
            return Match::OutOfBudget;
        }
        let value = match self.values.get(&device) {
            Some(v) => v.clone(),
            None => {
                let v = self.device_value(view);
                self.values.insert(device, v.clone());
                v
            }
        };
        let limit = CEL_SELECTOR_EXPRESSION_MAX_COST.min(left);
        let vars = [("device", value)];
        let out = program.evaluate(&vars, limit);
        // The work done is at most the limit (a call that would pass it is refused before it runs).
        budget.charge(out.cost.min(limit).max(1));
        let result = match out.result {
            Err(EvalError::CostLimitExceeded) if limit < CEL_SELECTOR_EXPRESSION_MAX_COST => {
                return Match::OutOfBudget;
            }
            Ok(Value::Bool(b)) => Ok(b),
            Ok(other) => Err(format!(
                "CEL result of type {} could not be converted to bool",
                kwas_cel::eval::type_name(&other)
            )),
            Err(e) => Err(e.to_string()),
        };
        if self.results.len() >= MAX_RESULTS {
            self.results.clear();
        }
        self.results.insert((sel.id, device), result.clone());
        to_match(result)
    }

    fn quantity(&mut self, text: &str) -> Value {
        if let Some(v) = self.quantities.get(text) {
            return v.clone();
        }
        let v = kwas_cel::value::quantity(text).unwrap_or(Value::Null);
        if self.quantities.len() >= MAX_QUANTITIES {
            self.quantities.clear();
        }
        self.quantities.insert(text.to_string(), v.clone());
        v
    }

    fn device_value(&mut self, view: &DeviceView<'_>) -> Value {
        let capacity: Vec<(&str, Value)> = view
            .capacity
            .iter()
            .map(|(k, q)| (k.as_str(), self.quantity(q)))
            .collect();
        dra::device(
            view.driver,
            view.attributes.iter().map(|(k, v)| (k.as_str(), v)),
            capacity,
            view.allow_multiple_allocations,
        )
    }
}

fn to_match(r: Result<bool, String>) -> Match {
    match r {
        Ok(true) => Match::Yes,
        Ok(false) => Match::No,
        Err(e) => Match::Error(e),
    }
}

/// The fully qualified form of an attribute or capacity name of a device of `driver`.
pub(crate) fn qualify(name: &str, driver: &str) -> String {
    if name.contains('/') {
        name.to_string()
    } else {
        format!("{driver}/{name}")
    }
}

impl Selector {
    /// Why it does not compile, if it does not.
    pub(crate) fn error(&self) -> Option<&str> {
        self.program.as_ref().err().map(String::as_str)
    }
}

//! CEL device selectors (`spec.selectors[].cel.expression` of DeviceClasses and requests), evaluated
//! with the `kube-cel` crate (the `cel` interpreter plus Kubernetes' libraries: quantities, semver,
//! strings, lists, regex), in upstream DRA's environment: the variable `device` with `driver`,
//! `attributes` (domain -> name -> value), `capacity` (domain -> name -> quantity) and
//! `allowMultipleAllocations`.
//!
//! Choices: an expression is compiled once and evaluated for every device at once, its results cached
//! until the device set changes. The parser and the interpreter recurse deeply (the generated parser
//! takes megabytes of stack per nesting level in unoptimized builds), so both run on a stack of their
//! own ([`stacker::grow`]: 256 MiB reserved, committed as used), and expressions longer than upstream's
//! 10 KiB, nested deeper than 250 or with more than 1,000 operators are refused before parsing (the
//! parser itself stops at 96 levels with an error). A runtime error (say a missing attribute) makes the
//! device not match, and the first such error is reported in the pod's message; upstream fails the
//! allocation attempt with it instead.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kube_cel::KubeCelExt;
use kube_cel::cel::objects::{Key, Map};
use kube_cel::cel::{Context, Program, Value};

/// Upstream's `CELSelectorExpressionMaxLength`.
pub(crate) const MAX_EXPRESSION_LEN: usize = 10 * 1024;
const MAX_NESTING: usize = 250;
const MAX_OPERATORS: usize = 1_000;
/// Stack reserved for parsing and evaluating.
const CEL_STACK: usize = 256 * 1024 * 1024;

/// Index of a compiled expression.
pub(crate) type ExprId = u32;

/// A device attribute value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Attr {
    Bool(bool),
    Int(i64),
    String(String),
    Version(String),
}

/// What CEL sees of one device.
#[derive(Debug, Clone, Default)]
pub(crate) struct DeviceView<'a> {
    pub driver: &'a str,
    /// Fully qualified attribute name (`domain/name`) -> value.
    pub attributes: Option<&'a BTreeMap<String, Attr>>,
    /// Fully qualified capacity name -> quantity text.
    pub capacity: Option<&'a BTreeMap<String, String>>,
    pub allow_multiple_allocations: bool,
}

/// Compiled expressions and their results per device.
pub(crate) struct Exprs {
    base: Context<'static>,
    programs: Vec<Result<Program, String>>,
    index: HashMap<String, ExprId>,
    /// (expression, device) -> result.
    results: HashMap<(ExprId, u32), Result<bool, String>>,
    /// Device -> its CEL value (built on first use).
    values: HashMap<u32, Value>,
    /// Expressions evaluated for every device since the devices last changed.
    complete: std::collections::HashSet<ExprId>,
    quantities: HashMap<String, Value>,
}

impl std::fmt::Debug for Exprs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exprs")
            .field("expressions", &self.programs.len())
            .field("cached_results", &self.results.len())
            .finish()
    }
}

impl Default for Exprs {
    fn default() -> Self {
        Self {
            base: Context::default().with_all(),
            programs: Vec::new(),
            index: HashMap::new(),
            results: HashMap::new(),
            values: HashMap::new(),
            complete: std::collections::HashSet::new(),
            quantities: HashMap::new(),
        }
    }
}

/// Why an expression is refused before parsing, if it is.
pub(crate) fn precheck(expr: &str) -> Result<(), String> {
    if expr.len() > MAX_EXPRESSION_LEN {
        return Err(format!(
            "expression is {} bytes long, more than the maximum of {MAX_EXPRESSION_LEN}",
            expr.len()
        ));
    }
    let (mut depth, mut max_depth, mut operators) = (0usize, 0usize, 0usize);
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut prev = ' ';
    for c in expr.chars() {
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
            '(' | '[' | '{' => {
                depth += 1;
                max_depth = max_depth.max(depth);
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            '.' | '+' | '-' | '*' | '/' | '%' | '?' | '!' | '<' | '>' => operators += 1,
            '&' | '|' | '=' if prev != c => operators += 1,
            _ => {}
        }
        prev = c;
    }
    if max_depth > MAX_NESTING {
        return Err(format!(
            "expression nests {max_depth} deep, more than the maximum of {MAX_NESTING}"
        ));
    }
    if operators > MAX_OPERATORS {
        return Err(format!(
            "expression has {operators} operators, more than the maximum of {MAX_OPERATORS}"
        ));
    }
    Ok(())
}

/// Compiles `expr` as a device selector: the precheck, then the parser (on its own stack).
pub(crate) fn compile(expr: &str) -> Result<Program, String> {
    precheck(expr)?;
    stacker::grow(CEL_STACK, || {
        Program::compile(expr).map_err(|e| format!("compilation failed: {e}"))
    })
}

impl Exprs {
    /// The id of `expr`, compiling it the first time.
    pub(crate) fn intern(&mut self, expr: &str) -> ExprId {
        if let Some(&id) = self.index.get(expr) {
            return id;
        }
        let id = self.programs.len() as ExprId;
        self.programs.push(compile(expr));
        self.index.insert(expr.to_string(), id);
        id
    }

    /// The compile error of `id`, if any.
    pub(crate) fn error(&self, id: ExprId) -> Option<&str> {
        match self.programs.get(id as usize) {
            Some(Err(e)) => Some(e),
            _ => None,
        }
    }

    /// Forgets every cached result (the devices changed).
    pub(crate) fn devices_changed(&mut self) {
        self.results.clear();
        self.values.clear();
        self.complete.clear();
    }

    /// Evaluates expression `id` for every device of `devices` not evaluated yet, on one stack of its own.
    pub(crate) fn ensure(&mut self, id: ExprId, devices: &[super::Device]) {
        if !self.complete.insert(id) {
            return;
        }
        stacker::grow(CEL_STACK, || {
            for (d, dev) in devices.iter().enumerate() {
                let key = (id, d as u32);
                if self.results.contains_key(&key) {
                    continue;
                }
                let view = DeviceView {
                    driver: &dev.key.0,
                    attributes: Some(&dev.attributes),
                    capacity: Some(&dev.capacity),
                    allow_multiple_allocations: false,
                };
                let r = self.evaluate(id, d as u32, &view);
                self.results.insert(key, r);
            }
        });
    }

    /// Whether device `device` (seen as `view`) matches expression `id` (evaluated on its own stack
    /// unless [`Exprs::ensure`] evaluated it already).
    pub(crate) fn matches(&mut self, id: ExprId, device: u32, view: &DeviceView<'_>) -> Result<bool, String> {
        if let Some(r) = self.results.get(&(id, device)) {
            return r.clone();
        }
        let result = stacker::grow(CEL_STACK, || self.evaluate(id, device, view));
        self.results.insert((id, device), result.clone());
        result
    }

    fn evaluate(&mut self, id: ExprId, device: u32, view: &DeviceView<'_>) -> Result<bool, String> {
        let value = match self.values.get(&device) {
            Some(v) => v.clone(),
            None => {
                let v = self.device_value(view);
                self.values.insert(device, v.clone());
                v
            }
        };
        let program = match self.programs.get(id as usize) {
            Some(Ok(p)) => p,
            Some(Err(e)) => return Err(e.clone()),
            None => return Err("unknown expression".into()),
        };
        let mut ctx = self.base.new_inner_scope();
        ctx.add_variable_from_value("device", value);
        match program.execute(&ctx) {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(other) => Err(format!("expression must evaluate to bool, got {:?}", other.type_of())),
            Err(e) => Err(format!("CEL runtime error: {e}")),
        }
    }

    fn quantity(&mut self, text: &str) -> Value {
        if let Some(v) = self.quantities.get(text) {
            return v.clone();
        }
        let v = Program::compile(&format!("quantity('{}')", text.replace('\'', "")))
            .ok()
            .and_then(|p| p.execute(&self.base).ok())
            .unwrap_or(Value::Null);
        self.quantities.insert(text.to_string(), v.clone());
        v
    }

    fn device_value(&mut self, view: &DeviceView<'_>) -> Value {
        let mut attributes: BTreeMap<String, HashMap<Key, Value>> = BTreeMap::new();
        for (qualified, a) in view.attributes.into_iter().flatten() {
            let (domain, name) = split(qualified, view.driver);
            let v = match a {
                Attr::Bool(b) => Value::Bool(*b),
                Attr::Int(i) => Value::Int(*i),
                Attr::String(s) => Value::String(Arc::new(s.clone())),
                Attr::Version(s) => Program::compile(&format!("semver('{}')", s.replace('\'', "")))
                    .ok()
                    .and_then(|p| p.execute(&self.base).ok())
                    .unwrap_or(Value::Null),
            };
            attributes
                .entry(domain.to_string())
                .or_default()
                .insert(Key::String(Arc::new(name.to_string())), v);
        }
        let mut capacity: BTreeMap<String, HashMap<Key, Value>> = BTreeMap::new();
        for (qualified, q) in view.capacity.into_iter().flatten() {
            let (domain, name) = split(qualified, view.driver);
            let v = self.quantity(q);
            capacity
                .entry(domain.to_string())
                .or_default()
                .insert(Key::String(Arc::new(name.to_string())), v);
        }
        let nested = |m: BTreeMap<String, HashMap<Key, Value>>| {
            Value::Map(Map {
                map: Arc::new(
                    m.into_iter()
                        .map(|(k, v)| (Key::String(Arc::new(k)), Value::Map(Map { map: Arc::new(v) })))
                        .collect(),
                ),
            })
        };
        let mut device: HashMap<Key, Value> = HashMap::new();
        device.insert(
            Key::String(Arc::new("driver".into())),
            Value::String(Arc::new(view.driver.to_string())),
        );
        device.insert(Key::String(Arc::new("attributes".into())), nested(attributes));
        device.insert(Key::String(Arc::new("capacity".into())), nested(capacity));
        device.insert(
            Key::String(Arc::new("allowMultipleAllocations".into())),
            Value::Bool(view.allow_multiple_allocations),
        );
        Value::Map(Map { map: Arc::new(device) })
    }
}

/// `domain/name` -> (domain, name); an unqualified name belongs to the driver's domain.
pub(crate) fn split<'a>(qualified: &'a str, driver: &'a str) -> (&'a str, &'a str) {
    match qualified.split_once('/') {
        Some((d, n)) => (d, n),
        None => (driver, qualified),
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

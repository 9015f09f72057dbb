//! DRA device selectors (`selectors[].cel.expression` of DeviceClasses, ResourceClaims and their
//! templates), as `k8s.io/dynamic-resource-allocation/cel` compiles them and kube-apiserver validates
//! them: the variable `device` (`driver`, `attributes` domain -> name -> value, `capacity` domain ->
//! name -> quantity, `allowMultipleAllocations`), a boolean (or dynamic) result, the sizes upstream's
//! estimator declares (driver 63 characters; 32 attribute domains of 32 names each; attribute values
//! 64), [`CEL_SELECTOR_EXPRESSION_MAX_LENGTH`] and [`CEL_SELECTOR_EXPRESSION_MAX_COST`] as both the
//! write-time estimate limit and the runtime limit of one evaluation.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kube_cel::cel::Value;
use kube_cel::cel::objects::{Key, Map};

use crate::types::{Decl, Ty};
use crate::{CompileError, Env, Program};

/// `resource.k8s.io/v1` `CELSelectorExpressionMaxCost`.
pub const CEL_SELECTOR_EXPRESSION_MAX_COST: u64 = 1_000_000;
/// `resource.k8s.io/v1` `CELSelectorExpressionMaxLength`, in bytes.
pub const CEL_SELECTOR_EXPRESSION_MAX_LENGTH: usize = 10 * 1024;

/// `DriverNameMaxLength`.
const DRIVER_NAME_MAX: u64 = 63;
/// `ResourceSliceMaxAttributesAndCapacitiesPerDevice`.
const ATTRIBUTES_MAX: u64 = 32;
/// `DeviceMaxDomainLength`, `DeviceMaxIDLength`.
const DOMAIN_MAX: u64 = 63;
const ID_MAX: u64 = 32;
/// `max(DeviceAttributeMaxValueLength, ResourceSliceMaxAttributeValuesPerDevice)`.
const ATTRIBUTE_VALUE_MAX: u64 = 64;

/// The name of the device type.
pub const DEVICE_TYPE: &str = "kubernetes.DRADevice";

/// The environment selectors compile in: the `device` variable with upstream's declared sizes.
pub fn env() -> Env {
    let by_domain = |value: Decl| {
        Decl::map(
            Decl::scalar(Ty::String, DOMAIN_MAX),
            Decl::map(Decl::scalar(Ty::String, ID_MAX), value, ATTRIBUTES_MAX),
            ATTRIBUTES_MAX,
        )
    };
    let mut fields = BTreeMap::new();
    fields.insert("driver".to_string(), Decl::scalar(Ty::String, DRIVER_NAME_MAX));
    fields.insert(
        "attributes".to_string(),
        by_domain(Decl::scalar(Ty::Dyn, ATTRIBUTE_VALUE_MAX)),
    );
    fields.insert(
        "capacity".to_string(),
        by_domain(Decl::scalar(Ty::Opaque("kubernetes.Quantity"), 0)),
    );
    fields.insert("allowMultipleAllocations".to_string(), Decl::scalar(Ty::Bool, 1));
    Env::new().with_var("device", Decl::object(DEVICE_TYPE, fields))
}

/// Why a selector is refused at write time, with kube-apiserver's field error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectorError {
    /// `Too long: may not be more than 10240 bytes` (not compiled).
    TooLong,
    /// `Invalid value: "<expression>": <detail>`.
    Invalid(String),
    /// `Forbidden: too complex, exceeds cost limit`.
    TooComplex,
}

/// Compiles a selector: the result must be a boolean or dynamic (`must evaluate to bool or the unknown
/// type, not int`). The length and cost limits are the caller's to apply ([`validate`] applies both).
pub fn compile(expression: &str) -> Result<Program, CompileError> {
    let program = Program::compile(expression, &env())?;
    match program.result_type() {
        Ty::Bool | Ty::Dyn => Ok(program),
        other => Err(CompileError::invalid(format!(
            "must evaluate to bool or the unknown type, not {}",
            other.name()
        ))),
    }
}

/// kube-apiserver's validation of a new selector: length, compilation, estimated cost.
pub fn validate(expression: &str) -> Result<Program, SelectorError> {
    if expression.len() > CEL_SELECTOR_EXPRESSION_MAX_LENGTH {
        return Err(SelectorError::TooLong);
    }
    let program = compile(expression).map_err(|e| SelectorError::Invalid(e.detail().to_string()))?;
    if program.max_cost() > CEL_SELECTOR_EXPRESSION_MAX_COST {
        return Err(SelectorError::TooComplex);
    }
    Ok(program)
}

/// One device attribute's value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Attribute {
    /// `bool`.
    Bool(bool),
    /// `int`.
    Int(i64),
    /// `string`.
    String(String),
    /// `version` (a semantic version; `semver` in CEL).
    Version(String),
}

/// `domain/name` -> (domain, name); an unqualified name belongs to the driver's domain.
pub fn split<'a>(qualified: &'a str, driver: &'a str) -> (&'a str, &'a str) {
    match qualified.split_once('/') {
        Some((d, n)) => (d, n),
        None => (driver, qualified),
    }
}

/// The `device` value of a device of `driver` with `attributes` (qualified name -> value) and
/// `capacity` (qualified name -> quantity text). Versions and quantities that do not parse are `null`.
pub fn device<'a>(
    driver: &str,
    attributes: impl IntoIterator<Item = (&'a str, &'a Attribute)>,
    capacity: impl IntoIterator<Item = (&'a str, Value)>,
    allow_multiple_allocations: bool,
) -> Value {
    let key = |s: &str| Key::String(Arc::new(s.to_string()));
    let mut attrs: BTreeMap<String, HashMap<Key, Value>> = BTreeMap::new();
    for (qualified, a) in attributes {
        let (domain, name) = split(qualified, driver);
        let v = match a {
            Attribute::Bool(b) => Value::Bool(*b),
            Attribute::Int(i) => Value::Int(*i),
            Attribute::String(s) => Value::String(Arc::new(s.clone())),
            Attribute::Version(s) => crate::value::semver(s).unwrap_or(Value::Null),
        };
        attrs.entry(domain.to_string()).or_default().insert(key(name), v);
    }
    let mut caps: BTreeMap<String, HashMap<Key, Value>> = BTreeMap::new();
    for (qualified, q) in capacity {
        let (domain, name) = split(qualified, driver);
        caps.entry(domain.to_string()).or_default().insert(key(name), q);
    }
    let nested = |m: BTreeMap<String, HashMap<Key, Value>>| {
        Value::Map(Map {
            map: Arc::new(
                m.into_iter()
                    .map(|(k, v)| (key(&k), Value::Map(Map { map: Arc::new(v) })))
                    .collect(),
            ),
        })
    };
    let mut d: HashMap<Key, Value> = HashMap::new();
    d.insert(key("driver"), Value::String(Arc::new(driver.to_string())));
    d.insert(key("attributes"), nested(attrs));
    d.insert(key("capacity"), nested(caps));
    d.insert(key("allowMultipleAllocations"), Value::Bool(allow_multiple_allocations));
    Value::Map(Map { map: Arc::new(d) })
}

/// Whether `device` matches `program`, evaluated with the per-evaluation limit and an optional
/// interrupt; the cost charged either way. A non-boolean result is upstream's error.
pub fn matches(program: &Program, device: &Value, interrupt: Option<&dyn Fn() -> bool>) -> (Result<bool, String>, u64) {
    let vars = [("device", device.clone())];
    let out = program.evaluate_with(&vars, CEL_SELECTOR_EXPRESSION_MAX_COST, interrupt);
    let result = match out.result {
        Ok(Value::Bool(b)) => Ok(b),
        Ok(other) => Err(format!(
            "CEL result of type {} could not be converted to bool",
            crate::eval::type_name(&other)
        )),
        Err(e) => Err(e.to_string()),
    };
    (result, out.cost)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu() -> Value {
        let attrs = [
            ("gpu.kwas.dev/model".to_string(), Attribute::String("KW100".into())),
            ("gpu.kwas.dev/index".to_string(), Attribute::Int(3)),
            (
                "gpu.kwas.dev/driverVersion".to_string(),
                Attribute::Version("1.2.3".into()),
            ),
        ];
        let q = crate::value::quantity("80Gi").unwrap();
        device(
            "gpu.kwas.dev",
            attrs.iter().map(|(k, v)| (k.as_str(), v)),
            [("gpu.kwas.dev/memory", q)],
            false,
        )
    }

    /// Upstream `cel/compile_test.go` (`TestCompile`): the estimates of its selectors.
    #[test]
    fn test_compile_estimates_match_upstream() {
        for (expr, cost) in [
            (r#"device.driver == "dra.example.com""#, 4),
            (r#"device.driver == """#, 2),
            (r#"device.attributes["dra.example.com"].name"#, 4),
            (r#""dra.example.com" in device.attributes"#, 3),
            ("device.allowMultipleAllocations == true", 3),
        ] {
            let p = compile(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
            assert_eq!(p.max_cost(), cost, "{expr}");
        }
    }

    #[test]
    fn selectors_match_devices_and_report_runtime_errors_like_upstream() {
        let d = gpu();
        for (expr, want) in [
            (r#"device.driver == "gpu.kwas.dev""#, Ok(true)),
            (r#"device.attributes["gpu.kwas.dev"].model == "KW100""#, Ok(true)),
            (r#"device.attributes["gpu.kwas.dev"].index < 2"#, Ok(false)),
            (
                r#"device.capacity["gpu.kwas.dev"].memory.compareTo(quantity("40Gi")) >= 0"#,
                Ok(true),
            ),
            (
                r#"device.attributes["gpu.kwas.dev"].driverVersion.isGreaterThan(semver("1.0.0"))"#,
                Ok(true),
            ),
            (r#"has(device.attributes["gpu.kwas.dev"].model)"#, Ok(true)),
            (
                r#"device.attributes["gpu.kwas.dev"].?nope.orValue("x") == "x""#,
                Ok(true),
            ),
            (
                r#"device.attributes["gpu.kwas.dev"].nope == 1"#,
                Err("no such key: nope".to_string()),
            ),
            (
                r#"device.attributes["gpu.kwas.dev"].model"#,
                Err("CEL result of type string could not be converted to bool".to_string()),
            ),
        ] {
            let p = compile(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
            assert_eq!(matches(&p, &d, None).0, want, "{expr}");
        }
    }

    #[test]
    fn write_time_validation_refuses_long_invalid_and_costly_selectors() {
        assert_eq!(validate(&"a".repeat(10 * 1024 + 1)).err(), Some(SelectorError::TooLong));
        assert!(
            matches!(validate("1 + 2"), Err(SelectorError::Invalid(d)) if d == "must evaluate to bool or the unknown type, not int")
        );
        assert!(
            matches!(validate("gpu.model == 1"), Err(SelectorError::Invalid(d)) if d.contains("undeclared reference to 'gpu'"))
        );
        assert_eq!(
            validate("lists.range(1000000000000).size() > 0").err(),
            Some(SelectorError::TooComplex)
        );
        assert_eq!(
            validate("lists.range(100000).all(i, lists.range(100000).all(j, i != j || true))").err(),
            Some(SelectorError::TooComplex)
        );
        let n = "lists.range(10).all(i, device.driver.size() > 0)";
        assert!(validate(n).is_ok(), "small comprehensions are fine");
    }

    #[test]
    fn an_expensive_selector_stops_at_the_runtime_limit_without_allocating_it() {
        let d = gpu();
        // Compiled without the estimate check (as the scheduler must for objects a real cluster stored).
        let p = compile("lists.range(1000000000000).size() > 0").unwrap();
        let (r, cost) = matches(&p, &d, None);
        assert_eq!(r, Err("operation cancelled: actual cost limit exceeded".to_string()));
        assert!(cost > CEL_SELECTOR_EXPRESSION_MAX_COST);
        let p = compile("lists.range(1000).all(i, lists.range(1000).all(j, i + j >= 0))").unwrap();
        let t = std::time::Instant::now();
        let (r, _) = matches(&p, &d, None);
        assert_eq!(r, Err("operation cancelled: actual cost limit exceeded".to_string()));
        assert!(t.elapsed() < std::time::Duration::from_secs(5), "{:?}", t.elapsed());
    }
}

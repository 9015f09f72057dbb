//! Compiling DRA CEL selector expressions (`selectors[].cel.expression`) and derived attributes the
//! way kube-apiserver's validation does, with [`kwas_cel::dra`] (the layer kwas' scheduler evaluates
//! the same expressions with): at most [`MAX_EXPRESSION_LENGTH`] bytes (`Too long`, checked by the
//! caller), compiled in upstream's environment (the variable `device`; cel-go's parser limits and error
//! rendering; every variable and function resolved), a selector's result a boolean or dynamic
//! (`must evaluate to bool or the unknown type, not int`), and its estimated cost at most
//! `CELSelectorExpressionMaxCost` (1,000,000), else `Forbidden: too complex, exceeds cost limit`.
//!
//! The parser grows its own stack, so compiling is safe on a request handler's thread.

use kwas_cel::dra::{self, CEL_SELECTOR_EXPRESSION_MAX_COST};

/// `CELSelectorExpressionMaxLength`: the longest selector expression, in bytes.
pub(crate) const MAX_EXPRESSION_LENGTH: usize = dra::CEL_SELECTOR_EXPRESSION_MAX_LENGTH;

/// Why an expression is refused.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Refusal {
    /// `Invalid value: "<expression>": <detail>`.
    Invalid(String),
    /// `Forbidden: too complex, exceeds cost limit`.
    TooComplex,
}

/// Compiled expressions of one object: (expression, must be boolean) -> the verdict.
pub(crate) type Compiled = std::collections::HashMap<(String, bool), Result<(), Refusal>>;

/// The expressions of a `resource.k8s.io` object (selectors' `cel.expression`, derived attributes'
/// `expression`) compiled, for the validation that runs under the cluster lock to look up. At most as
/// many as the object holds; the parser grows its own stack.
pub(crate) fn precompile(obj: &serde_json::Value) -> Compiled {
    use serde_json::Value;
    let mut found: Vec<(String, bool)> = Vec::new();
    let mut stack = vec![(obj, false)];
    while let Some((v, derived)) = stack.pop() {
        match v {
            Value::Object(m) => {
                // Expressions over the length limit are refused as `Too long` without being compiled.
                if let Some(e) = m.get("cel").and_then(|c| c.get("expression")).and_then(Value::as_str)
                    && e.len() <= MAX_EXPRESSION_LENGTH
                {
                    found.push((e.to_string(), true));
                }
                if derived
                    && let Some(e) = m.get("expression").and_then(Value::as_str)
                    && e.len() <= MAX_EXPRESSION_LENGTH
                {
                    found.push((e.to_string(), false));
                }
                for (k, x) in m {
                    stack.push((x, k == "derivedAttributes"));
                }
            }
            Value::Array(items) => stack.extend(items.iter().map(|x| (x, derived))),
            _ => {}
        }
    }
    found.sort();
    found.dedup();
    let results = compile_all(found.clone());
    found.into_iter().zip(results).collect()
}

/// Compiles expressions (`boolean`: a selector, whose result must be a boolean; else a derived
/// attribute's, any value); an expression that appears more than once compiles once.
pub(crate) fn compile_all(expressions: Vec<(String, bool)>) -> Vec<Result<(), Refusal>> {
    let mut seen: Vec<((String, bool), Result<(), Refusal>)> = Vec::new();
    expressions
        .into_iter()
        .map(|e| {
            if let Some((_, r)) = seen.iter().find(|(k, _)| *k == e) {
                return r.clone();
            }
            let r = compile(&e.0, e.1);
            seen.push((e, r.clone()));
            r
        })
        .collect()
}

/// Compiled selectors (and compile errors) by expression: claims made from one template repeat the
/// same selectors, so each distinct one compiles once; least recently used ones are evicted. Compiling
/// happens outside the cache's lock.
static SELECTORS: std::sync::LazyLock<parking_lot::Mutex<kwas_cel::Cache>> =
    std::sync::LazyLock::new(|| parking_lot::Mutex::new(kwas_cel::Cache::new(dra::env(), 1024, 4 << 20)));

fn compile(expression: &str, boolean: bool) -> Result<(), Refusal> {
    if expression.len() > MAX_EXPRESSION_LENGTH {
        return Err(Refusal::Invalid(format!(
            "may not be more than {MAX_EXPRESSION_LENGTH} bytes"
        )));
    }
    let compiled = if boolean {
        let cached = SELECTORS.lock().lookup(expression);
        match cached {
            Some(c) => c,
            None => {
                let c = std::sync::Arc::new(dra::compile(expression));
                SELECTORS.lock().insert(expression, c.clone());
                c
            }
        }
    } else {
        std::sync::Arc::new(kwas_cel::Program::compile(expression, &dra::env()))
    };
    let program = compiled
        .as_ref()
        .as_ref()
        .map_err(|e| Refusal::Invalid(e.detail().to_string()))?;
    if program.max_cost() > CEL_SELECTOR_EXPRESSION_MAX_COST {
        return Err(Refusal::TooComplex);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(e: &str) -> Result<(), Refusal> {
        compile_all(vec![(e.to_string(), true)]).remove(0)
    }

    #[test]
    fn valid_selectors_compile() {
        for e in [
            r#"device.driver == "gpu.kwas.dev""#,
            r#"device.attributes["gpu.kwas.dev"].model == "KW100""#,
            r#"device.attributes["gpu.kwas.dev"].index < 4 && device.capacity["gpu.kwas.dev"].memory.compareTo(quantity("40Gi")) >= 0"#,
            r#"["a", "b"].exists(x, x == device.driver)"#,
            r#"has(device.attributes["gpu.kwas.dev"].model)"#,
            r#"device.attributes["gpu.kwas.dev"].model"#,
            r#"math.greatest(1, 2) > 1"#,
            "true",
        ] {
            assert_eq!(one(e), Ok(()), "{e}");
        }
    }

    #[test]
    fn undeclared_names_non_boolean_results_and_costly_selectors_are_refused() {
        assert_eq!(
            one(r#"gpu.model == "x""#),
            Err(Refusal::Invalid(
                "compilation failed: ERROR: <input>:1:1: undeclared reference to 'gpu' (in container '')\n | gpu.model == \"x\"\n | ^"
                    .into()
            ))
        );
        assert_eq!(
            one("1 + 2"),
            Err(Refusal::Invalid(
                "must evaluate to bool or the unknown type, not int".into()
            ))
        );
        assert_eq!(
            one("device.driver"),
            Err(Refusal::Invalid(
                "must evaluate to bool or the unknown type, not string".into()
            ))
        );
        assert_eq!(one("lists.range(1000000000000).size() > 0"), Err(Refusal::TooComplex));
        assert_eq!(
            one("lists.range(100000).all(i, lists.range(100000).all(j, i + j >= 0))"),
            Err(Refusal::TooComplex)
        );
        // Derived attributes may have any type.
        assert_eq!(compile_all(vec![("device.driver".into(), false)]), vec![Ok(())]);
    }

    #[test]
    fn an_objects_expressions_are_found_and_compiled_before_the_lock() {
        let claim = serde_json::json!({"spec": {"devices": {"requests": [
            {"name": "a", "exactly": {"deviceClassName": "c", "selectors": [
                {"cel": {"expression": "device.driver == 'x'"}}, {"cel": {"expression": "1 + 1"}}]}},
            {"name": "b", "firstAvailable": [{"name": "s", "deviceClassName": "c", "selectors": [
                {"cel": {"expression": "lists.range(1000000000000).size() > 0"}}]}]}],
            "derivedAttributes": [{"name": "d", "expression": "device.driver"}]},
            "other": {"cel": {"expression": "x".repeat(1 << 20)}}}});
        let compiled = precompile(&claim);
        assert_eq!(
            compiled.len(),
            4,
            "a megabyte-long expression is never compiled: {compiled:?}"
        );
        assert_eq!(compiled[&("device.driver == 'x'".to_string(), true)], Ok(()));
        assert!(matches!(
            compiled[&("1 + 1".to_string(), true)],
            Err(Refusal::Invalid(_))
        ));
        assert_eq!(
            compiled[&("lists.range(1000000000000).size() > 0".to_string(), true)],
            Err(Refusal::TooComplex)
        );
        assert_eq!(compiled[&("device.driver".to_string(), false)], Ok(()));
    }

    #[test]
    fn hostile_expressions_fail_or_compile_without_exhausting_a_small_stack() {
        let handle = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let exprs = vec![
                    format!("{}1{}", "(".repeat(5000), ")".repeat(5000)),
                    format!("{}true", "!".repeat(MAX_EXPRESSION_LENGTH)),
                    vec!["1"; 5000].join("+"),
                    format!("device{}", ".a".repeat(5000)),
                    format!("{}true", "true ? true : ".repeat(700)),
                    String::new(),
                    "\u{0}".into(),
                    "'unterminated".into(),
                ];
                let n = exprs.len();
                let results = compile_all(exprs.into_iter().map(|e| (e, true)).collect());
                assert_eq!(results.len(), n);
                assert!(results.iter().all(Result::is_err), "{results:?}");
            })
            .unwrap();
        handle.join().unwrap();
    }
}

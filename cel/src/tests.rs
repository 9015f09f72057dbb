//! The evaluator's semantics, its runtime costs against upstream's vectors, and its behaviour on hostile
//! expressions.

use std::time::{Duration, Instant};

use kube_cel::cel::Value;

use crate::types::{Decl, Ty};
use crate::{Env, EvalError, Program};

fn eval(expr: &str) -> Result<Value, EvalError> {
    let p = Program::compile(expr, &Env::new()).unwrap_or_else(|e| panic!("{expr}: {e}"));
    p.evaluate(&[], 1_000_000).result
}

fn cost(expr: &str, vars: &[(&str, Value)], env: &Env) -> u64 {
    let p = Program::compile(expr, env).unwrap_or_else(|e| panic!("{expr}: {e}"));
    let out = p.evaluate(vars, u64::MAX);
    assert!(out.result.is_ok(), "{expr}: {:?}", out.result);
    out.cost
}

#[test]
fn expressions_evaluate_with_cel_semantics() {
    for (expr, want) in [
        ("1 + 2 * 3 == 7", true),
        ("'ab' + 'cd' == 'abcd'", true),
        ("[1, 2] + [3] == [1, 2, 3]", true),
        ("size('héllo') == 5", true),
        ("'héllo'.size() == 5", true),
        ("[1, 2, 3].all(x, x > 0)", true),
        ("[1, 2, 3].exists(x, x == 2)", true),
        ("[1, 2, 3].exists_one(x, x > 1)", false),
        ("[1, 2, 3].map(x, x * 2) == [2, 4, 6]", true),
        ("[1, 2, 3].filter(x, x != 2) == [1, 3]", true),
        ("{'a': 1}.all(k, k == 'a')", true),
        ("has({'a': 1}.a) && !has({'a': 1}.b)", true),
        ("'a' in ['a', 'b'] && 'a' in {'a': 1}", true),
        ("1 == 1.0 && 1u == 1", true),
        ("(true || 1/0 == 1) && (1/0 == 1 || true)", true),
        ("!(false && 1/0 == 1) && !(1/0 == 1 && false)", true),
        ("[1, 2][1] == 2 && {'k': 'v'}['k'] == 'v'", true),
        ("true ? 1 == 1 : 1/0 == 1", true),
        ("lists.range(3) == [0, 1, 2]", true),
        ("math.greatest(1, 5, 3) == 5", true),
        ("'a,b'.split(',') == ['a', 'b']", true),
        ("'abc'.replace('b', 'x') == 'axc'", true),
        ("quantity('1Gi').compareTo(quantity('512Mi')) > 0", true),
        ("{'a': 1}.?a.orValue(0) == 1 && {'a': 1}.?b.orValue(0) == 0", true),
        ("optional.of(1).hasValue() && !optional.none().hasValue()", true),
        ("type(1) == int && type('a') == string", true),
        ("dyn(1) == 1", true),
        ("'abc'.matches('^a') && 'x'.startsWith('x') && 'x'.endsWith('x')", true),
        ("[[1], [2, 3]].flatten() == [1, 2, 3]", true),
        ("[3, 1, 2].sort() == [1, 2, 3]", true),
        ("sets.contains([1, 2, 3], [1])", true),
        (
            "'héllo'.indexOf('l') == 2 && 'héllo'.lastIndexOf('l') == 3 && 'abc'.indexOf('z') == -1",
            true,
        ),
        (
            "'abcabc'.indexOf('b', 2) == 4 && 'abcabc'.lastIndexOf('b', 3) == 1",
            true,
        ),
        (
            "' x '.trim() == 'x' && 'Ab'.lowerAscii() == 'ab' && 'ab'.upperAscii() == 'AB'",
            true,
        ),
    ] {
        assert_eq!(eval(expr), Ok(Value::Bool(want)), "{expr}");
    }
}

#[test]
fn runtime_errors_are_worded_like_cel_go() {
    assert_eq!(eval("1 / 0 == 1"), Err(EvalError::Runtime("division by zero".into())));
    assert_eq!(
        eval("{'a': 1}.b == 1"),
        Err(EvalError::Runtime("no such key: b".into()))
    );
    assert_eq!(
        eval("{'a': 1}['b'] == 1"),
        Err(EvalError::Runtime("no such key: b".into()))
    );
    assert!(matches!(eval("[1][5] == 1"), Err(EvalError::Runtime(m)) if m.contains("index out of bounds")));
    assert!(matches!(
        eval("-(-9223372036854775807 - 1) == 1"),
        Err(EvalError::Runtime(_))
    ));
    assert!(matches!(
        eval("9223372036854775807 + 1 == 1"),
        Err(EvalError::Runtime(_))
    ));
    let p = Program::compile("lists.range(1000001).size() > 0", &Env::new()).unwrap();
    assert_eq!(
        p.evaluate(&[], u64::MAX).result,
        Err(EvalError::Runtime(
            "lists.range: size 1000001 exceeds maximum allowed (1000000)".into()
        ))
    );
}

#[test]
fn unknown_names_are_refused_at_compile_time_with_cel_gos_message() {
    let err = Program::compile("nope(1)", &Env::new()).unwrap_err();
    assert_eq!(
        err.detail(),
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'nope' (in container '')\n | nope(1)\n | ^"
    );
    let err = Program::compile("x > 1", &Env::new()).unwrap_err();
    assert!(err.detail().contains("undeclared reference to 'x'"), "{err}");
    let err = Program::compile("'a'.contains()", &Env::new()).unwrap_err();
    assert!(
        err.detail().contains("found no matching overload for 'contains'"),
        "{err}"
    );
    // Macro variables and declared variables resolve.
    let env = Env::new().with_var("v", Decl::scalar(Ty::Int, 0));
    assert!(Program::compile("[1].all(x, x > v)", &env).is_ok());
}

/// Upstream `celcoststability_test.go` (`TestCelCostStability`): runtime costs of a few expressions.
#[test]
fn test_cel_cost_stability_runtime_costs_match_upstream() {
    let mut fields = std::collections::BTreeMap::new();
    fields.insert("array".to_string(), Decl::list(Decl::scalar(Ty::Int, 0), 100));
    fields.insert("val1".to_string(), Decl::scalar(Ty::String, 100));
    let env = Env::new().with_var("self", Decl::object("Object", fields));
    let obj = crate::value::from_json(
        &serde_json::json!({"array": [1, 2, 3, 4, 5, 6, 7, 8], "val1": "hello world ooo"}),
        None,
    );
    let vars = [("self", obj)];
    // `self.array.all(e, e > 0)` over 8 elements: 43.
    assert_eq!(cost("self.array.all(e, e > 0)", &vars, &env), 43);
    // `2 in self.array` over 8 elements: 10.
    assert_eq!(cost("2 in self.array", &vars, &env), 10);
    // `self.val1.indexOf('o') == 1`: 4 (the traversal floors 15 bytes x 0.1 to 1).
    assert_eq!(cost("self.val1.indexOf('o') == 1", &vars, &env), 4);
}

#[test]
fn an_allocation_larger_than_the_budget_is_refused_before_it_is_made() {
    // The `cel` crate's interpreter aborts the process on this one.
    let p = Program::compile("lists.range(1000000000000).size() > 0", &Env::new()).unwrap();
    assert_eq!(p.max_cost(), 1_000_000_000_013);
    let out = p.evaluate(&[], 1_000_000);
    assert_eq!(out.result, Err(EvalError::CostLimitExceeded));
    assert_eq!(
        out.result.unwrap_err().to_string(),
        "operation cancelled: actual cost limit exceeded"
    );
}

#[test]
fn hostile_expressions_stop_at_the_limit_quickly() {
    for expr in [
        "lists.range(100000).all(i, lists.range(100000).all(j, i + j >= 0))",
        "lists.range(1000000).map(i, string(i)).join(',').size() > 0",
        "lists.range(1000).map(i, lists.range(1000)).flatten().size() > 0",
        "lists.range(3000).sort().size() > 0",
        "lists.range(400000).exists_one(i, i < 0)",
        "'a'.replace('', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa').replace('a', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa').replace('a', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa').replace('a', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa').size() > 0",
        "lists.range(1000).map(x, lists.range(1000).map(y, 'xxxxxxxxxxxxxxxxxxxxxxxx')).map(l, l.join('')).join('').size() > 0",
        "lists.range(1000).all(i, lists.range(1000) == lists.range(1000))",
        "sets.equivalent(lists.range(100000), lists.range(100000))",
    ] {
        let p = Program::compile(expr, &Env::new()).unwrap_or_else(|e| panic!("{expr}: {e}"));
        let t = Instant::now();
        let out = p.evaluate(&[], 1_000_000);
        assert_eq!(out.result, Err(EvalError::CostLimitExceeded), "{expr}");
        assert!(t.elapsed() < Duration::from_secs(3), "{expr}: {:?}", t.elapsed());
    }
}

#[test]
fn an_interrupt_stops_a_long_comprehension() {
    let p = Program::compile("lists.range(100000).all(i, i >= 0)", &Env::new()).unwrap();
    let calls = std::cell::Cell::new(0u32);
    let interrupt = || {
        calls.set(calls.get() + 1);
        calls.get() > 3
    };
    let out = p.evaluate_with(&[], u64::MAX, Some(&interrupt));
    assert_eq!(out.result, Err(EvalError::Interrupted));
    assert_eq!(out.result.unwrap_err().to_string(), "operation interrupted");
}

#[test]
fn a_stop_is_never_absorbed_by_logical_operators() {
    let p = Program::compile("lists.range(100000).all(i, i >= 0) || true", &Env::new()).unwrap();
    assert_eq!(p.evaluate(&[], 1000).result, Err(EvalError::CostLimitExceeded));
    let p = Program::compile("true && lists.range(100000).exists(i, i < 0)", &Env::new()).unwrap();
    assert_eq!(p.evaluate(&[], 1000).result, Err(EvalError::CostLimitExceeded));
}

#[test]
fn map_and_filter_build_their_results_in_linear_time() {
    let p = Program::compile("lists.range(200000).map(i, i).size() == 200000", &Env::new()).unwrap();
    let t = Instant::now();
    let out = p.evaluate(&[], u64::MAX);
    assert_eq!(out.result, Ok(Value::Bool(true)));
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

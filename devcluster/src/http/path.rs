//! REST paths: `/api/v1/...`, `/apis/<group>/<version>/...`, discovery and OpenAPI paths.

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Target {
    Version,
    Health,
    Api,
    Apis,
    Group(String),
    GroupVersion(String, String),
    OpenApiV2,
    OpenApiV3Index,
    OpenApiV3(String),
    Resource {
        group: String,
        version: String,
        namespace: Option<String>,
        plural: String,
        name: Option<String>,
        sub: Option<String>,
    },
    Unknown,
}

pub(super) fn parse_path(path: &str) -> Target {
    let segs: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    let (group, version, rest) = match segs.as_slice() {
        ["version"] => return Target::Version,
        ["healthz" | "livez" | "readyz", ..] => return Target::Health,
        ["openapi", "v2"] => return Target::OpenApiV2,
        ["openapi", "v3"] => return Target::OpenApiV3Index,
        ["openapi", "v3", rest @ ..] => return Target::OpenApiV3(rest.join("/")),
        ["api"] => return Target::Api,
        ["apis"] => return Target::Apis,
        ["apis", g] => return Target::Group((*g).to_string()),
        ["api", v] => return Target::GroupVersion(String::new(), (*v).to_string()),
        ["apis", g, v] => return Target::GroupVersion((*g).to_string(), (*v).to_string()),
        ["api", v, rest @ ..] => (String::new(), (*v).to_string(), rest),
        ["apis", g, v, rest @ ..] => ((*g).to_string(), (*v).to_string(), rest),
        _ => return Target::Unknown,
    };
    let s = |x: &&str| Some((*x).to_string());
    let core = group.is_empty();
    match rest {
        ["namespaces", ns, plural, tail @ ..] if !(core && matches!(*plural, "status" | "finalize")) => {
            let (name, sub) = match tail {
                [] => (None, None),
                [n] => (s(n), None),
                [n, sub] => (s(n), s(sub)),
                _ => return Target::Unknown,
            };
            Target::Resource {
                group,
                version,
                namespace: s(ns),
                plural: (*plural).to_string(),
                name,
                sub,
            }
        }
        [plural] => Target::Resource {
            group,
            version,
            namespace: None,
            plural: (*plural).to_string(),
            name: None,
            sub: None,
        },
        [plural, name] => Target::Resource {
            group,
            version,
            namespace: None,
            plural: (*plural).to_string(),
            name: s(name),
            sub: None,
        },
        [plural, name, sub] => Target::Resource {
            group,
            version,
            namespace: None,
            plural: (*plural).to_string(),
            name: s(name),
            sub: s(sub),
        },
        _ => Target::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_like_the_apiserver() {
        let r = |g: &str, v: &str, ns: Option<&str>, p: &str, n: Option<&str>, s: Option<&str>| Target::Resource {
            group: g.into(),
            version: v.into(),
            namespace: ns.map(Into::into),
            plural: p.into(),
            name: n.map(Into::into),
            sub: s.map(Into::into),
        };
        assert_eq!(
            parse_path("/api/v1/namespaces"),
            r("", "v1", None, "namespaces", None, None)
        );
        assert_eq!(
            parse_path("/api/v1/namespaces/x"),
            r("", "v1", None, "namespaces", Some("x"), None)
        );
        assert_eq!(
            parse_path("/api/v1/namespaces/x/status"),
            r("", "v1", None, "namespaces", Some("x"), Some("status"))
        );
        assert_eq!(
            parse_path("/api/v1/namespaces/x/finalize"),
            r("", "v1", None, "namespaces", Some("x"), Some("finalize"))
        );
        assert_eq!(
            parse_path("/api/v1/namespaces/x/pods"),
            r("", "v1", Some("x"), "pods", None, None)
        );
        assert_eq!(
            parse_path("/api/v1/namespaces/x/pods/p/binding"),
            r("", "v1", Some("x"), "pods", Some("p"), Some("binding"))
        );
        assert_eq!(
            parse_path("/apis/scheduling.k8s.io/v1alpha3/namespaces/d/podgroups/g/status"),
            r(
                "scheduling.k8s.io",
                "v1alpha3",
                Some("d"),
                "podgroups",
                Some("g"),
                Some("status")
            )
        );
        assert_eq!(
            parse_path("/apis/batch/v1/jobs"),
            r("batch", "v1", None, "jobs", None, None)
        );
        assert_eq!(
            parse_path("/apis/batch/v1"),
            Target::GroupVersion("batch".into(), "v1".into())
        );
        assert_eq!(parse_path("/apis"), Target::Apis);
        assert_eq!(parse_path("/nope"), Target::Unknown);
    }
}

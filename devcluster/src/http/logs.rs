//! `GET pods/<name>/log`: the simulated kubelet's log of a container (see `crate::logs`), as text, with
//! kube-apiserver's options (`container`, `previous`, `tailLines`, `sinceSeconds`, `timestamps`,
//! `limitBytes`, `follow`) and its errors for pods that have no such container, no node or no run yet.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::Value;

use super::request::Request;
use crate::cluster::Shared;
use crate::error::ApiError;
use crate::logs::{LogOptions, render};
use crate::meta;
use crate::resource::ResourceInfo;

fn number<T: std::str::FromStr>(req: &Request, key: &str) -> Result<Option<T>, ApiError> {
    match req.q(key) {
        None | Some("") => Ok(None),
        Some(v) => v
            .parse()
            .map(Some)
            .map_err(|_| ApiError::bad_request(format!("{key}: Invalid value: {v:?}: must be a non-negative integer"))),
    }
}

/// Serves one log request.
pub(super) fn serve(
    shared: &Arc<Shared>,
    req: &Request,
    res: &ResourceInfo,
    ns: &str,
    name: &str,
) -> Result<Response, ApiError> {
    let pod = shared.with(|s| s.get(res, ns, name))?;
    let containers: Vec<String> = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    let container = match req.q("container").filter(|c| !c.is_empty()) {
        Some(c) if containers.iter().any(|x| x == c) => c.to_string(),
        Some(c) => {
            return Err(ApiError::bad_request(format!(
                "container {c} is not valid for pod {name}"
            )));
        }
        None if containers.len() == 1 => containers[0].clone(),
        None => {
            return Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                containers.join(" ")
            )));
        }
    };
    if pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        return Err(ApiError::bad_request(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    let previous = matches!(req.q("previous"), Some("true" | "1"));
    let opts = LogOptions {
        tail_lines: number(req, "tailLines")?,
        since_seconds: number(req, "sinceSeconds")?,
        timestamps: matches!(req.q("timestamps"), Some("true" | "1")),
        limit_bytes: number(req, "limitBytes")?,
    };
    let uid = meta::uid(&pod).to_string();
    let (text, seen, ended) = {
        let logs = shared.logs.lock();
        match logs.run(&uid, &container, previous) {
            Some(run) => (
                render(run, &opts, 0, jiff::Timestamp::now()),
                run.lines.len(),
                run.ended,
            ),
            None if previous => {
                return Err(ApiError::bad_request(format!(
                    "previous terminated container \"{container}\" in pod \"{name}\" not found"
                )));
            }
            None => {
                return Err(ApiError::bad_request(format!(
                    "container \"{container}\" in pod \"{name}\" is waiting to start: ContainerCreating"
                )));
            }
        }
    };
    let follow = matches!(req.q("follow"), Some("true" | "1")) && !previous && !ended;
    let body = if follow {
        Body::from_stream(follow_stream(shared.clone(), uid, container, text, seen, opts))
    } else {
        Body::from(text)
    };
    let mut r = Response::new(body);
    *r.status_mut() = StatusCode::OK;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(r)
}

/// The lines so far, then new lines as they are written, until the run ends or the pod is gone.
fn follow_stream(
    shared: Arc<Shared>,
    uid: String,
    container: String,
    first: String,
    seen: usize,
    opts: LogOptions,
) -> impl futures::Stream<Item = Result<Bytes, std::convert::Infallible>> {
    let opts = LogOptions {
        tail_lines: None,
        since_seconds: None,
        ..opts
    };
    futures::stream::unfold(
        (Some(first), seen, false, shared.shutdown_signal()),
        move |(first, mut seen, done, mut stop)| {
            let (shared, uid, container, opts) = (shared.clone(), uid.clone(), container.clone(), opts.clone());
            async move {
                if let Some(first) = first {
                    return Some((Ok(Bytes::from(first)), (None, seen, false, stop)));
                }
                if done {
                    return None;
                }
                loop {
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                        _ = crate::cluster::stopped(&mut stop) => return None,
                    }
                    let next = {
                        let logs = shared.logs.lock();
                        logs.run(&uid, &container, false).map(|run| {
                            let text = render(run, &opts, seen, jiff::Timestamp::now());
                            (text, run.lines.len(), run.ended)
                        })
                    };
                    let (text, len, ended) = next?;
                    if len < seen {
                        // A new run started: follow ends with the one it followed.
                        return None;
                    }
                    seen = len;
                    if !text.is_empty() || ended {
                        return Some((Ok(Bytes::from(text)), (None, seen, ended, stop)));
                    }
                }
            }
        },
    )
}

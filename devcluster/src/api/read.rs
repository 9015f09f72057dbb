//! Reads: get, and list with label and field selectors and `limit` / `continue` over a consistent snapshot.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::{ListOptions, ListResult, State, ns_of};
use crate::error::ApiError;
use crate::resource::ResourceInfo;
use crate::selectors::FieldSelector;

/// Cached list snapshots for `continue` tokens.
#[derive(Debug, Default)]
pub(super) struct ContinueCache {
    snapshots: HashMap<u64, (std::time::Instant, u64, Vec<Arc<Value>>)>,
    next_id: u64,
}

const CONTINUE_TTL: std::time::Duration = std::time::Duration::from_secs(300);
const CONTINUE_MAX: usize = 64;

impl State {
    // ----- reads -----

    /// get.
    pub(crate) fn get(&self, res: &ResourceInfo, namespace: &str, name: &str) -> Result<Arc<Value>, ApiError> {
        self.store
            .get(&res.storage, ns_of(res, namespace), name)
            .ok_or_else(|| ApiError::not_found(&res.group, &res.plural, name))
    }

    /// list, with selectors and limit/continue.
    pub(crate) fn list(
        &mut self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<ListResult, ApiError> {
        let (snapshot_rv, candidates, skip) = match &opts.continue_token {
            Some(token) if !token.is_empty() => {
                let (id, offset) = parse_continue(token)?;
                self.expire_continues();
                let Some((_, rv, items)) = self.continues.snapshots.get(&id) else {
                    return Err(ApiError::expired(
                        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                    ));
                };
                (*rv, items.clone(), offset)
            }
            _ => {
                if let (Some(rv), Some("Exact")) = (&opts.resource_version, opts.resource_version_match.as_deref()) {
                    let want: u64 = rv
                        .parse()
                        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}")))?;
                    if want != self.store.current_rv() {
                        return Err(ApiError::expired(format!(
                            "too old resource version: {want} ({})",
                            self.store.current_rv()
                        )));
                    }
                }
                let ns = namespace.map(|n| ns_of(res, n));
                // An equality requirement narrows the candidates through the label index.
                let base = match opts.label_selector.equality() {
                    Some((k, v)) => self.store.list_labeled(&res.storage, ns, k, v),
                    None => self.store.list(&res.storage, ns),
                };
                let all: Vec<Arc<Value>> = base
                    .into_iter()
                    .filter(|o| opts.label_selector.matches(o) && field_matches(res, &opts.field_selector, o))
                    .collect();
                (self.store.current_rv(), all, 0)
            }
        };
        // The offset comes from a client's continue token: anything past the end is an empty page.
        let total = candidates.len();
        let start = skip.min(total);
        let end = if opts.limit > 0 {
            start.saturating_add(opts.limit).min(total)
        } else {
            total
        };
        let items = candidates[start..end].to_vec();
        let (continue_token, remaining) = if end < total {
            let id = match &opts.continue_token {
                Some(t) if !t.is_empty() => parse_continue(t)?.0,
                _ => {
                    self.continues.next_id += 1;
                    let id = self.continues.next_id;
                    if self.continues.snapshots.len() >= CONTINUE_MAX
                        && let Some(oldest) = self
                            .continues
                            .snapshots
                            .iter()
                            .min_by_key(|(_, (t, _, _))| *t)
                            .map(|(k, _)| *k)
                    {
                        self.continues.snapshots.remove(&oldest);
                    }
                    self.continues
                        .snapshots
                        .insert(id, (std::time::Instant::now(), snapshot_rv, candidates));
                    id
                }
            };
            (Some(format!("{id}-{end}")), Some(total - end))
        } else {
            (None, None)
        };
        Ok(ListResult {
            items,
            resource_version: snapshot_rv,
            continue_token,
            remaining,
        })
    }

    fn expire_continues(&mut self) {
        let now = std::time::Instant::now();
        self.continues
            .snapshots
            .retain(|_, (t, _, _)| now.duration_since(*t) < CONTINUE_TTL);
    }
}

fn parse_continue(token: &str) -> Result<(u64, usize), ApiError> {
    let bad = || ApiError::bad_request(format!("continue key is not valid: {token}"));
    let (id, off) = token.split_once('-').ok_or_else(bad)?;
    Ok((id.parse().map_err(|_| bad())?, off.parse().map_err(|_| bad())?))
}

/// Whether the field selector matches, reading fields from the presented form (events.k8s.io events use
/// their own field names).
fn field_matches(res: &ResourceInfo, sel: &FieldSelector, obj: &Value) -> bool {
    if sel.0.is_empty() {
        return true;
    }
    if res.strategy.converts_fields() {
        return sel.matches(&res.present(obj));
    }
    sel.matches(obj)
}

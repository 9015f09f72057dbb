//! A bounded cache of compiled programs (and compile errors) per distinct source text: the least
//! recently used entries are evicted past a count and a total source size, so an unbounded stream of
//! distinct expressions costs bounded memory.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::{CompileError, Env, Program};

/// A compiled program or why it does not compile.
pub type Compiled = Arc<Result<Program, CompileError>>;

/// The cache.
#[derive(Debug)]
pub struct Cache {
    env: Env,
    max_entries: usize,
    max_bytes: usize,
    bytes: usize,
    tick: u64,
    entries: HashMap<Arc<str>, (Compiled, u64)>,
    by_use: BTreeMap<u64, Arc<str>>,
}

impl Cache {
    /// A cache compiling in `env`, holding at most `max_entries` programs whose sources total at most
    /// `max_bytes`.
    pub fn new(env: Env, max_entries: usize, max_bytes: usize) -> Self {
        Cache {
            env,
            max_entries: max_entries.max(1),
            max_bytes,
            bytes: 0,
            tick: 0,
            entries: HashMap::new(),
            by_use: BTreeMap::new(),
        }
    }

    /// The environment programs are compiled in.
    pub fn env(&self) -> &Env {
        &self.env
    }

    /// The compiled program of `source`, compiling it on first use.
    pub fn get(&mut self, source: &str) -> Compiled {
        self.tick = self.tick.wrapping_add(1);
        let tick = self.tick;
        if let Some((program, used)) = self.entries.get_mut(source) {
            let old = std::mem::replace(used, tick);
            if let Some(key) = self.by_use.remove(&old) {
                self.by_use.insert(tick, key);
            }
            return program.clone();
        }
        let program = Arc::new(Program::compile(source, &self.env));
        let key: Arc<str> = source.into();
        self.bytes = self.bytes.saturating_add(key.len());
        self.entries.insert(key.clone(), (program.clone(), tick));
        self.by_use.insert(tick, key);
        self.evict();
        program
    }

    /// The cached program of `source`, if any (marking it used), without compiling.
    pub fn lookup(&mut self, source: &str) -> Option<Compiled> {
        self.tick = self.tick.wrapping_add(1);
        let tick = self.tick;
        let (program, used) = self.entries.get_mut(source)?;
        let old = std::mem::replace(used, tick);
        if let Some(key) = self.by_use.remove(&old) {
            self.by_use.insert(tick, key);
        }
        Some(program.clone())
    }

    /// Caches `program`, compiled elsewhere (say outside a lock shared with other work), for `source`.
    pub fn insert(&mut self, source: &str, program: Compiled) {
        if self.entries.contains_key(source) {
            return;
        }
        self.tick = self.tick.wrapping_add(1);
        let key: Arc<str> = source.into();
        self.bytes = self.bytes.saturating_add(key.len());
        self.entries.insert(key.clone(), (program, self.tick));
        self.by_use.insert(self.tick, key);
        self.evict();
    }

    fn evict(&mut self) {
        while self.entries.len() > self.max_entries || (self.bytes > self.max_bytes && self.entries.len() > 1) {
            let Some((_, oldest)) = self.by_use.pop_first() else {
                break;
            };
            if self.entries.remove(&oldest).is_some() {
                self.bytes = self.bytes.saturating_sub(oldest.len());
            }
        }
    }

    /// How many programs are cached.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_programs_are_evicted_past_the_bounds() {
        let mut c = Cache::new(Env::new(), 3, 1 << 20);
        for e in ["1 == 1", "2 == 2", "3 == 3"] {
            assert!(c.get(e).is_ok());
        }
        // Touch the first, then add a fourth: the second goes.
        c.get("1 == 1");
        c.get("4 == 4");
        assert_eq!(c.len(), 3);
        assert!(c.entries.contains_key("1 == 1"));
        assert!(!c.entries.contains_key("2 == 2"));
        let mut small = Cache::new(Env::new(), 100, 10);
        small.get("1 == 1 && 2 == 2");
        small.get("3 == 3 && 4 == 4");
        assert_eq!(small.len(), 1, "the size bound holds too");
        // Errors are cached like programs.
        assert!(small.get("1 +").is_err());
    }
}

//! The one slab the snapshot keeps nodes, pods and groups in: objects live at stable `u32` ids (reused
//! after removal, so ids stay small and dense for the cycle's per-node arrays) and are found by key through
//! an index.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;

/// Objects of one kind at stable ids, with a key index.
#[derive(Debug)]
pub(crate) struct Arena<K, T> {
    slots: Vec<Option<T>>,
    free: Vec<u32>,
    index: HashMap<K, u32>,
}

impl<K, T> Default for Arena<K, T> {
    fn default() -> Self {
        Arena {
            slots: Vec::new(),
            free: Vec::new(),
            index: HashMap::new(),
        }
    }
}

impl<K: Hash + Eq + Clone, T> Arena<K, T> {
    /// The id of the object with `key`.
    #[inline]
    pub fn id<Q>(&self, key: &Q) -> Option<u32>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.index.get(key).copied()
    }

    /// The object at `id`.
    #[inline]
    pub fn get(&self, id: u32) -> Option<&T> {
        self.slots.get(id as usize).and_then(Option::as_ref)
    }

    /// The object at `id`, mutably.
    #[inline]
    pub fn get_mut(&mut self, id: u32) -> Option<&mut T> {
        self.slots.get_mut(id as usize).and_then(Option::as_mut)
    }

    /// The object with `key`.
    pub fn by_key<Q>(&self, key: &Q) -> Option<&T>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.get(self.id(key)?)
    }

    /// Puts `value` under `key`: at the key's id when it is known, else at a free or new id.
    pub fn insert(&mut self, key: K, value: T) -> u32 {
        let id = match self.index.get(&key) {
            Some(&id) => id,
            None => {
                let id = match self.free.pop() {
                    Some(id) => id,
                    None => {
                        self.slots.push(None);
                        u32::try_from(self.slots.len() - 1).unwrap_or(u32::MAX)
                    }
                };
                self.index.insert(key, id);
                id
            }
        };
        if let Some(slot) = self.slots.get_mut(id as usize) {
            *slot = Some(value);
        }
        id
    }

    /// Removes the object with `key`; its id becomes free.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<(u32, T)>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let id = self.index.remove(key)?;
        let value = self.slots.get_mut(id as usize)?.take()?;
        self.free.push(id);
        Some((id, value))
    }

    /// How many objects there are.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// One past the highest id ever handed out (the size of per-id arrays).
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The keys.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.index.keys()
    }

    /// The ids of the live objects.
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.index.values().copied()
    }

    /// Every live object with its id, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|v| (i as u32, v)))
    }

    /// Every live object, mutably, in id order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.slots.iter_mut().filter_map(Option::as_mut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_reused_and_found_by_key() {
        let mut a: Arena<&str, i32> = Arena::default();
        let x = a.insert("x", 1);
        let y = a.insert("y", 2);
        assert_eq!(a.insert("x", 3), x, "a known key keeps its id");
        assert_eq!(a.get(x), Some(&3));
        assert_eq!(a.remove("x"), Some((x, 3)));
        assert_eq!(a.get(x), None);
        let z = a.insert("z", 4);
        assert_eq!(z, x, "a freed id is reused");
        assert_eq!((a.len(), a.capacity()), (2, 2));
        assert_eq!(a.by_key("y"), Some(&2));
        assert_eq!(a.iter().map(|(i, v)| (i, *v)).collect::<Vec<_>>(), vec![(x, 4), (y, 2)]);
    }
}

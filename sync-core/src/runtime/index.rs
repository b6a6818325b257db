//! A compact reverse index of object names: key → the names filed under it.
//!
//! The controllers keep such indexes per object (CAPI objects by the infrastructure object
//! they reference, by their owner), so at 10 000 pairs their shape is memory: a
//! `HashMap<String, HashSet<String>>` costs ~250 bytes for an entry holding one name (the
//! empty set alone allocates a table). Nearly every key holds one name (a Machine's
//! infrastructure object is referenced by that Machine), so one name is kept inline and
//! only a key holding several allocates a set.

use crate::runtime::hash::{Map, Set};

/// The names under one key: never empty (the index drops an emptied key). The set is
/// boxed so that the common case, one name, takes 16 bytes and not a set's 48.
#[allow(clippy::box_collection)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Names {
    One(Box<str>),
    Many(Box<Set<Box<str>>>),
}

impl Names {
    fn insert(&mut self, name: &str) {
        match self {
            Self::One(one) if &**one == name => {}
            Self::One(one) => {
                let set: Set<Box<str>> = [std::mem::take(one), name.into()].into_iter().collect();
                *self = Self::Many(Box::new(set));
            }
            Self::Many(set) => {
                set.insert(name.into());
            }
        }
    }

    /// Removes `name`; `false` when no name is left.
    fn remove(&mut self, name: &str) -> bool {
        match self {
            Self::One(one) => &**one != name,
            Self::Many(set) => {
                set.remove(name);
                if set.len() <= 1 {
                    let Some(last) = set.drain().next() else {
                        return false;
                    };
                    *self = Self::One(last);
                }
                true
            }
        }
    }

    /// Every name, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &str> {
        let (one, many) = match self {
            Self::One(one) => (Some(&**one), None),
            Self::Many(set) => (None, Some(set.iter().map(|name| &**name))),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }
}

/// Keys to the names filed under them; a key is present while it holds a name.
#[derive(Debug, Default)]
pub(crate) struct NameIndex {
    by_key: Map<Box<str>, Names>,
}

impl NameIndex {
    /// Files `name` under `key`.
    pub(crate) fn add(&mut self, key: &str, name: &str) {
        match self.by_key.get_mut(key) {
            Some(names) => names.insert(name),
            None => {
                self.by_key.insert(key.into(), Names::One(name.into()));
            }
        }
    }

    /// Takes `name` out of `key` (dropping the key once it holds none).
    pub(crate) fn remove(&mut self, key: &str, name: &str) {
        if let Some(names) = self.by_key.get_mut(key)
            && !names.remove(name)
        {
            self.by_key.remove(key);
        }
    }

    /// The names filed under `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&Names> {
        self.by_key.get(key)
    }

    /// Whether no key holds a name.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// Every name filed under any key.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.by_key.values().flat_map(Names::iter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
        let mut names: Vec<&str> = names.collect();
        names.sort_unstable();
        names
    }

    #[test]
    fn a_key_holds_its_names_and_goes_when_the_last_is_removed() {
        let mut index = NameIndex::default();
        index.add("aws-1", "m-1");
        assert_eq!(index.get("aws-1"), Some(&Names::One("m-1".into())));
        index.add("aws-1", "m-1");
        assert_eq!(
            index.get("aws-1"),
            Some(&Names::One("m-1".into())),
            "a name is filed once"
        );
        index.add("aws-1", "m-2");
        index.add("aws-2", "m-3");
        assert_eq!(
            sorted(index.get("aws-1").into_iter().flat_map(Names::iter)),
            ["m-1", "m-2"]
        );
        assert_eq!(sorted(index.names()), ["m-1", "m-2", "m-3"]);

        index.remove("aws-1", "m-1");
        assert_eq!(
            index.get("aws-1"),
            Some(&Names::One("m-2".into())),
            "back to one name kept inline"
        );
        index.remove("aws-1", "m-9");
        assert_eq!(
            index.get("aws-1"),
            Some(&Names::One("m-2".into())),
            "an absent name changes nothing"
        );
        index.remove("aws-1", "m-2");
        assert_eq!(index.get("aws-1"), None);
        index.remove("aws-2", "m-3");
        assert!(index.is_empty());
        index.remove("aws-3", "m-1");
        assert!(index.is_empty(), "removing under an absent key is a no-op");
    }

    #[test]
    fn one_name_costs_no_more_than_a_boxed_str() {
        assert!(std::mem::size_of::<Names>() <= std::mem::size_of::<Box<str>>() + 8);
    }

    #[test]
    fn many_names_under_one_key() {
        let mut index = NameIndex::default();
        for i in 0..100 {
            index.add("set-a", &format!("m-{i:03}"));
        }
        assert_eq!(index.get("set-a").map(|names| names.iter().count()), Some(100));
        for i in 0..100 {
            index.remove("set-a", &format!("m-{i:03}"));
        }
        assert!(index.is_empty());
    }
}

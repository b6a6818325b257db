//! CEL values that read a shared JSON document where it lies.
//!
//! [`super::cel::to_cel`] copies a whole object into CEL's own maps and lists before an
//! expression runs. An admission policy reads a handful of fields of `object`,
//! `oldObject` and its params on every write, so the copy would cost more than the
//! evaluation. A [`json_val`] holds the document (an `Arc`) and a place in it, and is
//! built as CEL's own map or list one level at a time (its values views again), once,
//! shared by the view's clones. cel builds a level before each field it selects on it:
//! it asks the operand whether it is an optional (`unwrap_optional`), through
//! `as_builtin`, which must hand out the built map. An index (`labels[key]`), `in`, `size`
//! and equality between two views read the JSON without building. Levels no expression
//! reaches (`managedFields`, most of a spec) are never built. Values are those of
//! `to_cel(value, None)`: plain JSON, no schema typing.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use cel::ExecutionError;
use cel::common::traits::{Container, Indexer, Iterable, Sizer, Zeroer};
use cel::common::types::{CelInt, CelList, CelMap, CelMapKey, CelString, Type};
use cel::common::value::{Builtin, BuiltinRef, CowVal, StaticVal, Val};
use serde_json::Value;
use yoke::Yoke;

/// A place in a shared document.
pub(crate) type Node = Yoke<&'static Value, Arc<Value>>;

/// The CEL value of `document`.
pub fn json_val(document: Arc<Value>) -> Box<dyn Val> {
    value_at(Yoke::attach_to_cart(document, |v| v))
}

/// The CEL value at `node`: a view for an object or an array, a copy for a scalar.
pub(crate) fn value_at(node: Node) -> Box<dyn Val> {
    match node.get() {
        Value::Object(_) => Box::new(JsonMap::new(node)),
        Value::Array(_) => Box::new(JsonList::new(node)),
        scalar => scalar_val(scalar),
    }
}

/// A scalar as `to_cel` gives it.
fn scalar_val(value: &Value) -> Box<dyn Val> {
    match value {
        Value::String(s) => Box::new(CelString::from(s.clone())),
        other => {
            let converted: Result<Box<dyn Val>, ExecutionError> = super::cel::to_cel(other, None).try_into();
            converted.unwrap_or_else(|_| Box::new(CelString::from(String::new())))
        }
    }
}

/// A JSON object or array of a shared document as a CEL value; `L` is the cel type its
/// level is built as.
pub struct JsonView<L> {
    node: Node,
    /// What the view has made of its level, shared by its clones.
    cells: Arc<Cells<L>>,
}

/// A view's level, made lazily: until cel needs the whole level (a field selected on it,
/// iterating it, a function taking a map or list), an index makes that entry's view only.
struct Cells<L> {
    /// The level as cel's own map or list (its values views again); once built, every
    /// read goes to it.
    built: OnceLock<L>,
    /// The view of each entry indexed before the level was built, by its position in the
    /// JSON (made on the first read, then handed out borrowed, as the level would).
    entries: OnceLock<Box<[Entry]>>,
}

/// One entry's view, once made.
type Entry = OnceLock<Box<dyn Val>>;

impl<L> Default for Cells<L> {
    fn default() -> Self {
        Self {
            built: OnceLock::new(),
            entries: OnceLock::new(),
        }
    }
}

/// A JSON object as a CEL `map(string, dyn)`.
pub type JsonMap = JsonView<CelMap<'static>>;

/// A JSON array as a CEL `list(dyn)`.
pub type JsonList = JsonView<CelList<'static>>;

/// What a view needs of the cel type it builds its level as.
pub trait Level: Val + Container + Indexer + Iterable + Clone + 'static {
    /// The level at `node` (an object for a map, an array for a list), its values views.
    fn build(node: &Node) -> Self;

    /// The number of entries of `json`, the level's JSON.
    fn len(json: &Value) -> usize;

    /// `key in json` when the JSON can tell without building the level.
    fn contains_in(_json: &Value, _key: &dyn Val) -> Option<bool> {
        None
    }

    /// Where `key` is in the JSON, and its place in the document; `Some(Err)`: the error
    /// the built level would give; `None`: a key the JSON cannot answer for (the built
    /// level is asked).
    fn entry(node: &Node, key: &dyn Val) -> Option<Result<(usize, Node), ExecutionError>>;
}

impl Level for CelMap<'static> {
    fn build(node: &Node) -> Self {
        let Some(map) = node.get().as_object() else {
            return CelMap::from(HashMap::new());
        };
        // Sized up front: `collect` would grow the table from empty.
        let mut entries: HashMap<CelMapKey<'static>, Box<dyn Val>> = HashMap::with_capacity(map.len());
        for k in map.keys() {
            let child = value_at(node.map_project_cloned(|v, _| &v[k]));
            entries.insert(CelMapKey::from(k.clone()), child);
        }
        CelMap::from(entries)
    }

    fn len(json: &Value) -> usize {
        json.as_object().map_or(0, serde_json::Map::len)
    }

    fn contains_in(json: &Value, key: &dyn Val) -> Option<bool> {
        let key = key.downcast_ref::<CelString<'_>>()?;
        Some(json.as_object().is_some_and(|map| map.contains_key(key.inner())))
    }

    fn entry(node: &Node, key: &dyn Val) -> Option<Result<(usize, Node), ExecutionError>> {
        let key = key.downcast_ref::<CelString<'_>>()?.inner();
        let map = node.get().as_object()?;
        Some(match map.keys().position(|k| k.as_str() == key) {
            Some(at) => Ok((at, node.map_project_cloned(|v, _| &v[key]))),
            None => Err(ExecutionError::NoSuchKey(Arc::new(key.to_owned()))),
        })
    }
}

impl Level for CelList<'static> {
    fn build(node: &Node) -> Self {
        let items: Vec<Box<dyn Val>> = (0..Self::len(node.get()))
            .map(|i| value_at(node.map_project_cloned(|v, _| &v[i])))
            .collect();
        CelList::from(items)
    }

    fn len(json: &Value) -> usize {
        json.as_array().map_or(0, Vec::len)
    }

    /// An index in range; any other (out of range, another type) is the built level's to
    /// answer, with its error.
    fn entry(node: &Node, key: &dyn Val) -> Option<Result<(usize, Node), ExecutionError>> {
        let at = usize::try_from(*key.downcast_ref::<CelInt>()?.inner()).ok()?;
        (at < Self::len(node.get())).then(|| Ok((at, node.map_project_cloned(|v, _| &v[at]))))
    }
}

impl<L: Level> JsonView<L> {
    fn new(node: Node) -> Self {
        Self {
            node,
            cells: Arc::default(),
        }
    }

    fn built(&self) -> &L {
        self.cells.built.get_or_init(|| L::build(&self.node))
    }

    /// The view of the entry at `at` (`node`: its place), made once.
    fn entry_at(&self, at: usize, node: Node) -> &(dyn Val + 'static) {
        let entries = self
            .cells
            .entries
            .get_or_init(|| (0..L::len(self.node.get())).map(|_| OnceLock::new()).collect());
        entries[at].get_or_init(|| value_at(node)).as_ref()
    }
}

impl<L> fmt::Debug for JsonView<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JsonView({})", self.node.get())
    }
}

impl<L: Level> Val for JsonView<L> {
    fn get_type(&self) -> &Type {
        L::cel_type()
    }

    fn cel_type() -> &'static Type {
        L::cel_type()
    }

    fn as_container(&self) -> Option<&dyn Container> {
        Some(self)
    }

    /// The view itself: an index makes that entry's view, not the level (a field selection
    /// has built it already, see the module doc).
    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn Indexer + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }

    /// The view itself, not its level: an owned view is indexed for one value, and
    /// taking the level out of the shared cell would copy all of them.
    fn into_indexer<'v>(self: Box<Self>) -> Option<Box<dyn Indexer + 'v>>
    where
        Self: 'v,
    {
        Some(self)
    }

    fn as_iterable<'b, 'v>(&'b self) -> Option<&'b (dyn Iterable + 'v)>
    where
        Self: 'v,
    {
        Some(self.built())
    }

    fn as_sizer(&self) -> Option<&dyn Sizer> {
        Some(self)
    }

    fn as_zeroer(&self) -> Option<&dyn Zeroer> {
        Some(self)
    }

    fn equals(&self, other: &dyn Val) -> bool {
        match other.downcast_ref::<JsonView<L>>() {
            Some(other) => same_json(self.node.get(), other.node.get()),
            None => self.built().equals(other),
        }
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v>
    where
        Self: 'v,
    {
        Box::new(JsonView {
            node: self.node.clone(),
            cells: self.cells.clone(),
        })
    }

    fn as_builtin<'b, 'v>(&'b self) -> BuiltinRef<'b, 'v>
    where
        Self: 'v,
    {
        self.built().as_builtin()
    }

    fn into_builtin<'v>(self: Box<Self>) -> Option<Builtin<'v>>
    where
        Self: 'v,
    {
        Box::new(self.built().clone()).into_builtin()
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

impl<L: Level> StaticVal for JsonView<L> {}

impl<L: Level> Container for JsonView<L> {
    fn contains(&self, key: &dyn Val) -> Result<bool, ExecutionError> {
        match L::contains_in(self.node.get(), key) {
            Some(found) => Ok(found),
            None => self.built().contains(key),
        }
    }
}

impl<L: Level> Indexer for JsonView<L> {
    fn get<'b, 'v>(&'b self, key: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        if let Some(built) = self.cells.built.get() {
            return built.get(key);
        }
        match L::entry(&self.node, key) {
            Some(Ok((at, node))) => Ok(CowVal::Borrowed(self.entry_at(at, node))),
            Some(Err(error)) => Err(error),
            None => self.built().get(key),
        }
    }

    fn steal<'v>(self: Box<Self>, key: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(key).map(CowVal::into_owned)
    }
}

impl<L: Level> Sizer for JsonView<L> {
    fn size(&self) -> CelInt {
        (L::len(self.node.get()) as i64).into()
    }
}

impl<L: Level> Zeroer for JsonView<L> {
    fn is_zero_value(&self) -> bool {
        L::len(self.node.get()) == 0
    }
}

/// CEL equality of two JSON values: the same keys or items, each equal; scalars compared
/// as their CEL values (so `1` equals `1.0`, as CEL's heterogeneous equality has it).
pub(crate) fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| same_json(v, w)))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(v, w)| same_json(v, w))
        }
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Number(_), Value::Number(_)) => scalar_val(a).equals(scalar_val(b).as_ref()),
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Null, Value::Null) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cel::Value as CelValue;
    use serde_json::json;

    /// Runs `expression` with `object` bound as a view and as `to_cel`'s copy; both must
    /// give the same result.
    fn both(object: &Value, expression: &str) -> Result<CelValue, String> {
        let program = crate::schema::cel::compile(expression).map_err(|e| e.to_string())?;
        let run = |value: Box<dyn Val>| {
            let mut ctx = crate::schema::cel::context();
            ctx.add_variable_as_val("object", value);
            program
                .execute(&ctx)
                .map_err(|e| crate::schema::cel::error_message(&e))
        };
        let copied: Box<dyn Val> = crate::schema::cel::to_cel(object, None)
            .try_into()
            .map_err(|e: ExecutionError| e.to_string())?;
        let viewed = run(json_val(Arc::new(object.clone())));
        assert_eq!(viewed, run(copied), "{expression}");
        viewed
    }

    fn sample() -> Value {
        json!({
            "metadata": {"name": "m-1", "labels": {"a": "1", "b": "2"}},
            "spec": {"replicas": 3, "ratio": 1.5, "big": u64::MAX, "on": true, "none": null,
                     "list": [1, "two", {"three": 3}], "empty": {}}
        })
    }

    #[test]
    fn a_view_reads_fields_keys_and_sizes_as_the_copy_does() {
        let object = sample();
        for (expression, want) in [
            ("object.metadata.name", CelValue::String(Arc::new("m-1".into()))),
            ("object.spec.replicas", CelValue::Int(3)),
            ("object.spec.big", CelValue::UInt(u64::MAX)),
            ("object.spec.ratio", CelValue::Float(1.5)),
            ("object.spec.on", CelValue::Bool(true)),
            ("object.spec.none", CelValue::Null),
            ("'a' in object.metadata.labels", CelValue::Bool(true)),
            ("'c' in object.metadata.labels", CelValue::Bool(false)),
            ("size(object.metadata.labels)", CelValue::Int(2)),
            ("size(object.spec.list)", CelValue::Int(3)),
            ("object.spec.list[2].three", CelValue::Int(3)),
            ("has(object.spec.replicas)", CelValue::Bool(true)),
            ("has(object.spec.missing)", CelValue::Bool(false)),
            (
                "object.?status.?phase.orValue('none')",
                CelValue::String(Arc::new("none".into())),
            ),
            ("object.spec.?replicas.orValue(0)", CelValue::Int(3)),
            (
                "object.metadata.labels.filter(k, k != 'a')",
                CelValue::List(Arc::new(vec![CelValue::String(Arc::new("b".into()))])),
            ),
            ("object.spec.list.exists(i, i == 'two')", CelValue::Bool(true)),
            ("1 in object.spec.list", CelValue::Bool(true)),
        ] {
            assert_eq!(both(&object, expression), Ok(want), "{expression}");
        }
    }

    #[test]
    fn a_view_equals_a_cel_value_on_either_side_and_another_view() {
        let object = sample();
        for expression in [
            "object.metadata.labels == {'a': '1', 'b': '2'}",
            "{'a': '1', 'b': '2'} == object.metadata.labels",
            "[1, 'two', {'three': 3}] == object.spec.list",
            "object.spec.list == [1, 'two', {'three': 3}]",
            "object.spec == object.spec",
            "object.spec.empty == {}",
            "object.spec.replicas == 3.0",
        ] {
            assert_eq!(
                both(&object, expression),
                Ok(CelValue::Bool(true)),
                "{expression}"
            );
        }
        for expression in [
            "object.metadata.labels == {'a': '1'}",
            "object.spec == object.metadata",
            "object.spec.list == [1, 'two']",
        ] {
            assert_eq!(
                both(&object, expression),
                Ok(CelValue::Bool(false)),
                "{expression}"
            );
        }
    }

    #[test]
    fn a_view_fails_as_the_copy_does() {
        let object = sample();
        for expression in [
            "object.spec.missing",
            "object.spec.list[7]",
            "object.metadata.name.nope",
            "object.spec[1]",
        ] {
            assert!(both(&object, expression).is_err(), "{expression}");
        }
    }

    /// Indexed (`object['metadata']`, as `labels[key]` is), not selected: cel builds a
    /// level before selecting a field on it, not before indexing it.
    #[test]
    fn an_index_makes_that_entry_s_view_once_and_builds_no_level() -> Result<(), ExecutionError> {
        let root = json_val(Arc::new(sample()));
        let view = root
            .downcast_ref::<JsonMap>()
            .ok_or(ExecutionError::function_error("", "not a map"))?;
        let key = CelString::from("metadata");
        let first = view.get(&key)?;
        let second = view.get(&key)?;
        let (CowVal::Borrowed(first), CowVal::Borrowed(second)) = (first, second) else {
            panic!("a field is handed out borrowed");
        };
        assert!(std::ptr::addr_eq(first, second), "the same view twice");
        assert!(view.cells.built.get().is_none(), "the root level was built");
        let made = view
            .cells
            .entries
            .get()
            .map(|e| e.iter().filter(|e| e.get().is_some()).count());
        assert_eq!(made, Some(1), "only metadata's view was made");
        let metadata = first
            .downcast_ref::<JsonMap>()
            .ok_or(ExecutionError::function_error("", "not a map"))?;
        assert!(metadata.cells.built.get().is_none(), "metadata's level was built");
        assert_eq!(
            view.get(&CelString::from("nope")).err(),
            Some(ExecutionError::NoSuchKey(Arc::new("nope".into())))
        );
        Ok(())
    }

    #[test]
    fn a_view_converts_to_the_copy_s_value() {
        let object = sample();
        let copied = crate::schema::cel::to_cel(&object, None);
        assert_eq!(
            CelValue::try_from(json_val(Arc::new(object)).as_ref()),
            Ok(copied)
        );
    }
}

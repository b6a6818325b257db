//! A direct evaluator for the common subset of CEL, reading JSON documents where they lie.
//!
//! cel-rust's interpreter builds a context per expression, a level of cel values before
//! each field it selects, and boxed values for every intermediate result. Admission
//! policies run a few dozen short expressions on every write they match (field reads,
//! optional reads, comparisons, `in`, label-key `filter`s), and that machinery costs more
//! than the write's own work. [`evaluate`] walks the parsed expression itself and
//! answers the forms those expressions use; for anything else (a function it does not
//! know, a number it would have to type, an error, a two-variable comprehension) it
//! returns `None` and the caller runs cel, which stays the reference: an answer given
//! here is the one cel gives, and every error is cel's to word. Map iteration follows the
//! document's key order; CEL leaves it unspecified (cel-rust and cel-go both use hash
//! order), so a `filter` over a map may list its keys in another order than cel.

use std::rc::Rc;
use std::sync::{Arc, LazyLock};

use cel::IdedExpr;
use cel::Value as CelValue;
use cel::common::ast::{CallExpr, ComprehensionExpr, Expr, LiteralValue, SelectExpr, operators};
use cel::common::value::Val;
use serde_json::{Map, Number, Value};
use yoke::Yoke;

use super::json_val::{Node, same_json, value_at};

/// A value during evaluation: a place in a shared JSON document, or one computed here.
#[derive(Clone)]
pub enum Fast {
    /// A JSON value of a document, read in place.
    Json(Node),
    /// A computed string.
    Str(Rc<str>),
    /// A computed bool.
    Bool(bool),
    /// A computed int (a literal, a size).
    Int(i64),
    /// `null`.
    Null,
    /// A computed list.
    List(Rc<Vec<Fast>>),
    /// An optional (`x.?f`, `m[?k]`).
    Opt(Option<Rc<Fast>>),
}

/// What a [`Fast`] is, borrowed.
enum View<'v> {
    Null,
    Bool(bool),
    Int(i64),
    /// A JSON number: an int, a uint or a double as the JSON has it
    /// ([`super::cel::to_cel`]), so only its equality with another document's number
    /// ([`same_json`]) or with an int that it holds is answered here.
    Number(&'v Number),
    Str(&'v str),
    Map(&'v Map<String, Value>),
    Array(&'v [Value]),
    List(&'v [Fast]),
    Opt(Option<&'v Fast>),
}

impl Fast {
    /// The value of a whole document.
    pub fn document(document: Arc<Value>) -> Self {
        Self::Json(Yoke::attach_to_cart(document, |v| v))
    }

    fn view(&self) -> View<'_> {
        match self {
            Self::Json(node) => match node.get() {
                Value::Null => View::Null,
                Value::Bool(b) => View::Bool(*b),
                Value::Number(n) => View::Number(n),
                Value::String(s) => View::Str(s),
                Value::Array(a) => View::Array(a),
                Value::Object(m) => View::Map(m),
            },
            Self::Str(s) => View::Str(s),
            Self::Bool(b) => View::Bool(*b),
            Self::Int(i) => View::Int(*i),
            Self::Null => View::Null,
            Self::List(l) => View::List(l),
            Self::Opt(o) => View::Opt(o.as_deref()),
        }
    }

    /// A bool, computed or read from the document.
    fn as_bool(&self) -> Option<bool> {
        match self.view() {
            View::Bool(b) => Some(b),
            _ => None,
        }
    }

    /// The entry `key` of a map (`None`: not a map, or no such entry).
    pub fn field(&self, key: &str) -> Option<Self> {
        match (self.view(), self) {
            (View::Map(map), Self::Json(node)) => map.contains_key(key).then(|| Self::child(node, key)),
            _ => None,
        }
    }

    fn child(node: &Node, key: &str) -> Self {
        Self::Json(node.map_project_cloned(|v, _| &v[key]))
    }

    /// Item `at` of a list (`None`: not a list, or out of range).
    fn item(&self, at: usize) -> Option<Self> {
        match (self.view(), self) {
            (View::List(l), _) => l.get(at).cloned(),
            (View::Array(a), Self::Json(node)) if at < a.len() => {
                Some(Self::Json(node.map_project_cloned(|v, _| &v[at])))
            }
            _ => None,
        }
    }

    /// The items of a list, or the keys of a map (what a comprehension ranges over).
    fn items(&self) -> Option<Vec<Fast>> {
        match self {
            Self::List(l) => Some(l.as_ref().clone()),
            Self::Json(node) => match node.get() {
                Value::Array(a) => (0..a.len()).map(|i| self.item(i)).collect(),
                Value::Object(m) => Some(m.keys().map(|k| Self::Str(Rc::from(k.as_str()))).collect()),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether [`Self::to_cel`] and [`Self::to_val`] convert it (no optional in it).
    pub fn convertible(&self) -> bool {
        match self {
            Self::Opt(_) => false,
            Self::List(l) => l.iter().all(Self::convertible),
            _ => true,
        }
    }

    /// The value as cel's (`None` for an optional, which is left to cel).
    pub fn to_cel(&self) -> Option<CelValue> {
        Some(match self {
            Self::Json(node) => super::cel::to_cel(node.get(), None),
            Self::Str(s) => CelValue::String(Arc::new(s.to_string())),
            Self::Bool(b) => CelValue::Bool(*b),
            Self::Int(i) => CelValue::Int(*i),
            Self::Null => CelValue::Null,
            Self::List(l) => CelValue::List(Arc::new(l.iter().map(Self::to_cel).collect::<Option<_>>()?)),
            Self::Opt(_) => return None,
        })
    }

    /// The value as a cel value for cel's own evaluation: a document's maps and lists stay
    /// views of it ([`super::json_val`]).
    pub fn to_val(&self) -> Option<Box<dyn Val>> {
        match self {
            Self::Json(node) => Some(value_at(node.clone())),
            other => other.to_cel()?.try_into().ok(),
        }
    }
}

/// The names an expression reads that the evaluator does not bind itself.
pub trait Bindings {
    /// The value of a top-level name; `None`: not known here (cel decides).
    fn ident(&self, name: &str) -> Option<Fast>;

    /// `root.field` as one name (e.g. a lazily evaluated `variables.x`), when `root` is
    /// not a value of its own; `None`: select `field` on `root`'s value.
    fn member(&self, _root: &str, _field: &str) -> Option<Fast> {
        None
    }
}

/// Evaluates `expression`, or `None` when it is not in the subset answered here or its
/// evaluation would be an error.
pub fn evaluate(expression: &IdedExpr, bindings: &dyn Bindings) -> Option<Fast> {
    Evaluation {
        bindings,
        locals: Vec::new(),
    }
    .eval(&expression.expr)
}

struct Evaluation<'b, 'e> {
    bindings: &'b dyn Bindings,
    /// Comprehension variables, innermost last.
    locals: Vec<(&'e str, Fast)>,
}

static EMPTY_MAP: LazyLock<Arc<Value>> = LazyLock::new(|| Arc::new(Value::Object(Map::new())));

impl<'e> Evaluation<'_, 'e> {
    fn eval(&mut self, expr: &'e Expr) -> Option<Fast> {
        match expr {
            Expr::Literal(literal) => literal_value(literal),
            Expr::Ident(name) => self.ident(name),
            Expr::Select(select) => self.select(select),
            Expr::List(list) if list.optional_indices.is_empty() => {
                let items = list.elements.iter().map(|e| self.eval(&e.expr));
                Some(Fast::List(Rc::new(items.collect::<Option<_>>()?)))
            }
            Expr::Map(map) if map.entries.is_empty() => Some(Fast::document(EMPTY_MAP.clone())),
            Expr::Call(call) => self.call(call),
            Expr::Comprehension(comprehension) => self.comprehension(comprehension),
            _ => None,
        }
    }

    fn ident(&self, name: &str) -> Option<Fast> {
        match self.locals.iter().rev().find(|(n, _)| *n == name) {
            Some((_, value)) => Some(value.clone()),
            None => self.bindings.ident(name),
        }
    }

    fn select(&mut self, select: &'e SelectExpr) -> Option<Fast> {
        if let Expr::Ident(root) = &select.operand.expr
            && !select.test
            && !self.locals.iter().any(|(n, _)| n == root)
            && let Some(value) = self.bindings.member(root, &select.field)
        {
            return Some(value);
        }
        let operand = self.eval(&select.operand.expr)?;
        match operand.view() {
            View::Map(map) if select.test => Some(Fast::Bool(map.contains_key(&select.field))),
            _ if select.test => None,
            _ => operand.field(&select.field),
        }
    }

    fn call(&mut self, call: &'e CallExpr) -> Option<Fast> {
        let args = &call.args;
        match (call.func_name.as_str(), &call.target, args.len()) {
            (operators::LOGICAL_AND, None, 2) => self.logical(call, false),
            (operators::LOGICAL_OR, None, 2) => self.logical(call, true),
            (operators::CONDITIONAL, None, 3) => match self.eval(&args[0].expr)?.as_bool()? {
                true => self.eval(&args[1].expr),
                false => self.eval(&args[2].expr),
            },
            (operators::OPT_SELECT, None, 2) => {
                let Expr::Literal(LiteralValue::String(field)) = &args[1].expr else {
                    return None;
                };
                let operand = self.eval(&args[0].expr)?;
                optional_entry(&operand, field.inner())
            }
            (name, None, _) => self.with_args(args, |values| function(name, values)),
            (name, Some(target), _) => {
                let receiver = self.eval(&target.expr)?;
                self.with_args(args, |values| method(name, &receiver, values))
            }
        }
    }

    /// Calls `f` with the arguments' values (on the stack for up to two: most calls).
    fn with_args(&mut self, args: &'e [IdedExpr], f: impl FnOnce(&[Fast]) -> Option<Fast>) -> Option<Fast> {
        match args {
            [] => f(&[]),
            [a] => {
                let a = self.eval(&a.expr)?;
                f(std::slice::from_ref(&a))
            }
            [a, b] => {
                let a = self.eval(&a.expr)?;
                let b = self.eval(&b.expr)?;
                f(&[a, b])
            }
            _ => {
                let values: Vec<Fast> = args.iter().map(|a| self.eval(&a.expr)).collect::<Option<_>>()?;
                f(&values)
            }
        }
    }

    /// `&&` (`or` false) and `||` (`or` true): the left side decides alone when it is
    /// `or`; anything but two bools is cel's (it absorbs an error on either side).
    fn logical(&mut self, call: &'e CallExpr, or: bool) -> Option<Fast> {
        if self.eval(&call.args[0].expr)?.as_bool()? == or {
            return Some(Fast::Bool(or));
        }
        self.eval(&call.args[1].expr)?.as_bool().map(Fast::Bool)
    }

    /// The macros' expansions (`all`, `exists`, `exists_one`, `map`, `filter`): the loop
    /// condition is checked before each step, as cel-go does.
    fn comprehension(&mut self, c: &'e ComprehensionExpr) -> Option<Fast> {
        if c.iter_var2.is_some() {
            return None;
        }
        let items = self.eval(&c.iter_range.expr)?.items()?;
        let mut accu = self.eval(&c.accu_init.expr)?;
        // An early `None` leaves `locals` as it is: nothing recovers from it.
        for item in items {
            self.locals.push((&c.accu_var, accu));
            if !self.eval(&c.loop_cond.expr)?.as_bool()? {
                accu = self.locals.pop()?.1;
                break;
            }
            self.locals.push((&c.iter_var, item));
            let next = self.eval(&c.loop_step.expr)?;
            self.locals.truncate(self.locals.len() - 2);
            accu = next;
        }
        self.locals.push((&c.accu_var, accu));
        let result = self.eval(&c.result.expr);
        self.locals.pop();
        result
    }
}

fn literal_value(literal: &LiteralValue) -> Option<Fast> {
    Some(match literal {
        LiteralValue::Boolean(b) => Fast::Bool(*b.inner()),
        LiteralValue::Int(i) => Fast::Int(*i.inner()),
        LiteralValue::String(s) => Fast::Str(Rc::from(s.inner())),
        LiteralValue::Null => Fast::Null,
        _ => return None,
    })
}

/// `operand.?field`: an optional of the entry (none when it is missing); on an optional,
/// none stays none.
fn optional_entry(operand: &Fast, field: &str) -> Option<Fast> {
    match (operand.view(), operand) {
        (View::Opt(None), _) => Some(Fast::Opt(None)),
        (View::Opt(Some(inner)), _) => optional_entry(inner, field),
        (View::Map(_), _) => Some(Fast::Opt(operand.field(field).map(Rc::new))),
        _ => None,
    }
}

/// `container[?key]`: an optional of a map's entry (none when it is missing); on an
/// optional, none stays none.
fn optional_index(container: &Fast, key: &Fast) -> Option<Fast> {
    match (container.view(), key.view()) {
        (View::Opt(None), _) => Some(Fast::Opt(None)),
        (View::Opt(Some(inner)), _) => optional_index(inner, key),
        (View::Map(_), View::Str(k)) => Some(Fast::Opt(container.field(k).map(Rc::new))),
        _ => None,
    }
}

/// The global functions and operators.
fn function(name: &str, args: &[Fast]) -> Option<Fast> {
    match (name, args) {
        (operators::EQUALS, [a, b]) => equal(a, b).map(Fast::Bool),
        (operators::NOT_EQUALS, [a, b]) => equal(a, b).map(|e| Fast::Bool(!e)),
        (operators::LOGICAL_NOT, [a]) => a.as_bool().map(|b| Fast::Bool(!b)),
        (operators::NOT_STRICTLY_FALSE, [a]) => a.as_bool().map(Fast::Bool),
        (operators::IN, [item, container]) => contains(container, item).map(Fast::Bool),
        (operators::ADD, [a, b]) => add(a, b),
        (operators::SUBSTRACT, [Fast::Int(a), Fast::Int(b)]) => a.checked_sub(*b).map(Fast::Int),
        (operators::INDEX, [container, key]) => index(container, key),
        (operators::OPT_INDEX, [container, key]) => optional_index(container, key),
        (
            operators::LESS | operators::LESS_EQUALS | operators::GREATER | operators::GREATER_EQUALS,
            [a, b],
        ) => compare(name, a, b),
        ("size", [a]) => size(a),
        _ => None,
    }
}

/// The receiver-style functions.
fn method(name: &str, receiver: &Fast, args: &[Fast]) -> Option<Fast> {
    if let View::Opt(inner) = receiver.view() {
        return match (name, args, inner) {
            ("orValue", [default], None) => Some(default.clone()),
            ("orValue", [_], Some(value)) | ("value", [], Some(value)) => Some(value.clone()),
            ("hasValue", [], inner) => Some(Fast::Bool(inner.is_some())),
            _ => None,
        };
    }
    if name == "size" && args.is_empty() {
        return size(receiver);
    }
    if name == "join" {
        return join(receiver, args);
    }
    let (View::Str(s), [arg]) = (receiver.view(), args) else {
        return None;
    };
    let View::Str(arg) = arg.view() else {
        return None;
    };
    Some(match name {
        "contains" => Fast::Bool(s.contains(arg)),
        "startsWith" => Fast::Bool(s.starts_with(arg)),
        "endsWith" => Fast::Bool(s.ends_with(arg)),
        "split" if !arg.is_empty() => {
            Fast::List(Rc::new(s.split(arg).map(|p| Fast::Str(Rc::from(p))).collect()))
        }
        _ => return None,
    })
}

/// CEL equality where the two values' types make it certain; `None` for a computed value
/// against one of another kind, or an int against a number that is not (cel's to decide).
fn equal(a: &Fast, b: &Fast) -> Option<bool> {
    // Two documents' values: what cel's `==` asks of their views ([`same_json`]).
    if let (Fast::Json(x), Fast::Json(y)) = (a, b) {
        return Some(same_json(x.get(), y.get()));
    }
    match (a.view(), b.view()) {
        (View::Null, View::Null) => Some(true),
        (View::Bool(a), View::Bool(b)) => Some(a == b),
        (View::Str(a), View::Str(b)) => Some(a == b),
        (View::Int(a), View::Int(b)) => Some(a == b),
        (View::Int(a), View::Number(b)) | (View::Number(b), View::Int(a)) => Some(b.as_i64()? == a),
        (View::Array(_) | View::List(_), View::Array(_) | View::List(_)) => {
            let (a, b) = (a.items()?, b.items()?);
            all_equal(a.len() == b.len(), a.iter().zip(&b).map(|(x, y)| equal(x, y)))
        }
        _ => None,
    }
}

/// Containers of `same_size` with these entry comparisons: the first unequal entry
/// decides (an entry this module cannot compare before it leaves the whole to cel).
fn all_equal(same_size: bool, entries: impl Iterator<Item = Option<bool>>) -> Option<bool> {
    if !same_size {
        return Some(false);
    }
    for entry in entries {
        if !entry? {
            return Some(false);
        }
    }
    Some(true)
}

/// `item in container`: a list's items compared, or a map's string keys.
fn contains(container: &Fast, item: &Fast) -> Option<bool> {
    match container.view() {
        View::Map(map) => match item.view() {
            View::Str(key) => Some(map.contains_key(key)),
            _ => None,
        },
        View::Array(_) | View::List(_) => {
            let mut found = false;
            for candidate in container.items()? {
                found |= equal(&candidate, item)?;
            }
            Some(found)
        }
        _ => None,
    }
}

fn add(a: &Fast, b: &Fast) -> Option<Fast> {
    match (a.view(), b.view()) {
        (View::Str(x), View::Str(y)) => Some(Fast::Str(Rc::from(format!("{x}{y}")))),
        (View::Int(x), View::Int(y)) => x.checked_add(y).map(Fast::Int),
        (View::Array(_) | View::List(_), View::Array(_) | View::List(_)) => {
            let mut items = a.items()?;
            items.extend(b.items()?);
            Some(Fast::List(Rc::new(items)))
        }
        _ => None,
    }
}

/// `map[key]` with a string key present, `list[i]` in range.
fn index(container: &Fast, key: &Fast) -> Option<Fast> {
    match (container.view(), key.view()) {
        (View::Map(_), View::Str(k)) => container.field(k),
        (View::Array(_) | View::List(_), View::Int(i)) => container.item(usize::try_from(i).ok()?),
        _ => None,
    }
}

fn compare(name: &str, a: &Fast, b: &Fast) -> Option<Fast> {
    let ordering = match (a.view(), b.view()) {
        (View::Int(x), View::Int(y)) => x.cmp(&y),
        (View::Str(x), View::Str(y)) => x.cmp(y),
        _ => return None,
    };
    Some(Fast::Bool(match name {
        operators::LESS => ordering.is_lt(),
        operators::LESS_EQUALS => ordering.is_le(),
        operators::GREATER => ordering.is_gt(),
        _ => ordering.is_ge(),
    }))
}

/// `size`: a string's code points, a list's items, a map's entries.
fn size(value: &Fast) -> Option<Fast> {
    let n = match value.view() {
        View::Str(s) => s.chars().count(),
        View::Map(m) => m.len(),
        View::Array(a) => a.len(),
        View::List(l) => l.len(),
        _ => return None,
    };
    i64::try_from(n).ok().map(Fast::Int)
}

/// `list.join()`, `list.join(separator)` of a list of strings.
fn join(list: &Fast, args: &[Fast]) -> Option<Fast> {
    let separator = match args {
        [] => "",
        [separator] => match separator.view() {
            View::Str(s) => s,
            _ => return None,
        },
        _ => return None,
    };
    let items = match list.view() {
        View::Array(_) | View::List(_) => list.items()?,
        _ => return None,
    };
    let mut parts = Vec::with_capacity(items.len());
    for item in &items {
        match item.view() {
            View::Str(s) => parts.push(s.to_string()),
            _ => return None,
        }
    }
    Some(Fast::Str(Rc::from(parts.join(separator))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Binds `object`, `oldObject` and a `variables.v` to documents, as a policy does.
    struct Documents {
        object: Arc<Value>,
        old: Arc<Value>,
    }

    impl Bindings for Documents {
        fn ident(&self, name: &str) -> Option<Fast> {
            match name {
                "object" => Some(Fast::document(self.object.clone())),
                "oldObject" => Some(Fast::document(self.old.clone())),
                _ => None,
            }
        }

        fn member(&self, root: &str, field: &str) -> Option<Fast> {
            (root == "variables" && field == "labels").then(|| {
                let node = Yoke::attach_to_cart(self.object.clone(), |v| &v["metadata"]["labels"]);
                Fast::Json(node)
            })
        }
    }

    fn documents() -> Documents {
        Documents {
            object: Arc::new(json!({
                "kind": "Machine",
                "metadata": {"name": "m-1", "labels": {"a": "1", "node-role.kubernetes.io/worker": "", "x/y": "z"},
                             "annotations": {"cluster.x-k8s.io/paused": ""}},
                "spec": {"replicas": 3, "ratio": 1.5, "big": u64::MAX, "on": true, "none": null,
                         "list": [1, "two", {"three": 3}], "names": ["a", "b"], "empty": {}},
                "status": {"conditions": [{"type": "Paused", "status": "True"}, {"type": "Ready", "status": "False"}]}
            })),
            old: Arc::new(json!({
                "kind": "Machine",
                "metadata": {"name": "m-1", "labels": {"a": "2", "gone": "g"}},
                "spec": {"replicas": 3, "ratio": 1.5, "big": u64::MAX, "on": true, "none": null,
                         "list": [1, "two", {"three": 3}], "names": ["a", "b"], "empty": {}}
            })),
        }
    }

    /// cel's result for `source` with the same bindings (its `variables` a map).
    fn by_cel(documents: &Documents, source: &str) -> Result<CelValue, String> {
        let program = crate::schema::cel::compile(source)?;
        let mut ctx = crate::schema::cel::context();
        ctx.add_variable_as_val(
            "object",
            value_at(Yoke::attach_to_cart(documents.object.clone(), |v| v)),
        );
        ctx.add_variable_as_val(
            "oldObject",
            value_at(Yoke::attach_to_cart(documents.old.clone(), |v| v)),
        );
        let labels = documents.object["metadata"]["labels"].clone();
        let variables = crate::schema::cel::to_cel(&json!({ "labels": labels }), None);
        ctx.add_variable("variables", variables);
        program
            .execute(&ctx)
            .map_err(|e| crate::schema::cel::error_message(&e))
    }

    fn by_fast(documents: &Documents, source: &str) -> Option<CelValue> {
        let program = crate::schema::cel::compile(source).ok()?;
        evaluate(program.expression(), documents)?.to_cel()
    }

    /// Lists of strings in order, for results whose order CEL leaves open (map keys).
    fn sorted(value: CelValue) -> CelValue {
        match value {
            CelValue::List(items) => {
                let mut items = items.as_ref().clone();
                items.sort_by_key(|i| format!("{i:?}"));
                CelValue::List(Arc::new(items))
            }
            other => other,
        }
    }

    /// Each expression is answered here, and as cel answers it.
    #[test]
    fn the_subset_is_answered_as_cel_answers_it() {
        let documents = documents();
        let ordered = [
            "object.metadata.name == 'm-1'",
            "object.metadata.name != oldObject.metadata.name",
            "object.?spec.?replicas.orValue(0) == 3",
            "object.?status.?phase.orValue('') != 'Provisioning'",
            "object.?nothing.?deeper.hasValue()",
            "object.metadata.labels[?'a'].orValue('') == '1' && !object.metadata.labels[?'zz'].hasValue()",
            "object.?nothing[?'x'].orValue('none')",
            "object.?spec.hasValue() && !has(object.metadata.deletionTimestamp)",
            "has(object.spec.none)",
            "object.spec.none == null",
            "!object.spec.on || (object.spec.on ? object.spec.on && true : false)",
            "'cluster.x-k8s.io/paused' in object.metadata.?annotations.orValue({})",
            "'b' in object.spec.names && !('c' in object.spec.names)",
            "object.?status.?conditions.orValue([]).exists(c, c.type == 'Paused' && c.status == 'True')",
            "object.status.conditions.all(c, c.status == 'True')",
            "object.status.conditions.exists_one(c, c.type == 'Ready')",
            "object.status.conditions.map(c, c.type)",
            "object.status.conditions.filter(c, c.status == 'False').map(c, c.type + '!')",
            "object.spec.names.map(n, 'spec.' + n).join(', ')",
            "['a', 'b'].join()",
            "size(object.metadata.labels) == 3 && object.spec.names.size() == 2 && size('héllo') == 5",
            "object.spec == oldObject.spec",
            "object.spec.big == oldObject.spec.big && object.spec.ratio == oldObject.spec.ratio",
            "object.spec.ratio == object.spec.replicas || object.spec.names == object.metadata.name",
            "object.metadata == oldObject.metadata",
            "object.spec.list == oldObject.spec.list",
            "object.kind == 'Machine' ? object.?spec.orValue({}) : object.?spec.?template.?spec.orValue({})",
            "'node-role.kubernetes.io/worker'.split('/')[0].endsWith('.kubernetes.io')",
            "'a/b/c'.split('/')",
            "'abc'.startsWith('ab') && 'abc'.contains('bc') && !'abc'.endsWith('b')",
            "['x'] + object.spec.names + []",
            "size(object.spec.names) - 1 < 2 && 'a' <= 'b'",
            "object.spec.replicas == 3 && object.spec.names[1] == 'b'",
            "object.metadata.labels['a'] == variables.labels['a']",
            "false && object.nothing",
            "true || object.nothing",
            "object.kind == 'Machine' ? 'spec' : object.nothing",
        ];
        let unordered = [
            "variables.labels.filter(k, !(k in oldObject.metadata.labels) || oldObject.metadata.labels[k] != variables.labels[k])",
            "oldObject.metadata.labels.filter(k, !(k in object.metadata.labels))",
            "object.metadata.labels.filter(k, k.contains('/') && ['kubernetes.io', 'x'].exists(d, ('.' + k.split('/')[0]).endsWith('.' + d)))",
        ];
        for source in ordered {
            let fast = by_fast(&documents, source).unwrap_or_else(|| panic!("not answered: {source}"));
            assert_eq!(Ok(fast), by_cel(&documents, source), "{source}");
        }
        for source in unordered {
            let fast = by_fast(&documents, source).unwrap_or_else(|| panic!("not answered: {source}"));
            let cel = by_cel(&documents, source).map(sorted);
            assert_eq!(Ok(sorted(fast)), cel, "{source}");
        }
    }

    /// What is left to cel: errors (which cel words), numbers whose CEL type the JSON does
    /// not say, and what the subset does not cover.
    #[test]
    fn errors_untyped_numbers_and_other_forms_are_left_to_cel() {
        let documents = documents();
        for source in [
            "object.spec.missing == 1",
            "object.metadata.labels['missing'] == '1'",
            "object.spec.names[2] == 'c'",
            "object.nothing && false",
            "object.spec.ratio == 1.5",
            "object.spec.replicas + 1 == 4",
            "object.spec.replicas < 4",
            "object.spec.list == [1, 'two', {'three': 3}]",
            "'a' == 1",
            "object.metadata.name.matches('^m-')",
            "object.metadata.labels.all(k, v, v != '')",
            "!object.spec.on ? 1 : 2.0",
            "object.?spec",
            "'abc'.split('')",
            "{'a': 1}.a == 1",
            "request.userInfo.username == ''",
        ] {
            assert!(by_fast(&documents, source).is_none(), "answered: {source}");
        }
        // cel answers the last ones (or fails) on its own, unaffected.
        assert_eq!(
            by_cel(&documents, "object.spec.replicas + 1 == 4"),
            Ok(CelValue::Bool(true))
        );
        assert!(by_cel(&documents, "object.spec.missing == 1").is_err());
    }
}

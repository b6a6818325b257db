//! Label keys, label values and label selectors as apimachinery checks and parses them:
//! the qualified-name rules (`IsQualifiedName`, also used for annotation keys and
//! finalizers), label values, and the selector lexer and parser of `labels/selector.go`
//! with its exact error messages (`>`/`<`, `in ()`, empty values in sets, keywords as
//! values).

use std::collections::BTreeSet;

use super::validation::subdomain_errors;

const NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// apimachinery's `RegexError`: the message, examples, and the regex.
pub fn regex_error(message: &str, regex: &str, examples: &[&str]) -> String {
    let examples: String = examples
        .iter()
        .map(|e| format!("'{e}', "))
        .collect::<Vec<_>>()
        .join(" or ");
    if examples.is_empty() {
        format!("{message} (regex used for validation is '{regex}')")
    } else {
        format!("{message} (e.g. {examples}regex used for validation is '{regex}')")
    }
}

fn is_name(name: &str) -> bool {
    let b = name.as_bytes();
    b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// What is wrong with a qualified name (a label key, an annotation key, a finalizer):
/// an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters.
pub fn qualified_name_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_string());
            } else {
                errors.extend(
                    subdomain_errors(prefix)
                        .into_iter()
                        .map(|e| format!("prefix part {e}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(NAME_MSG, NAME_FMT, &["MyName", "my.name", "123-abc"])
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errors.push("name part must be no more than 63 characters".to_string());
    }
    if !is_name(name) {
        errors.push(format!(
            "name part {}",
            regex_error(NAME_MSG, NAME_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    errors
}

/// What is wrong with a label value: empty, or at most 63 characters of the name rules.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 characters".to_string());
    }
    if !value.is_empty() && !is_name(value) {
        errors.push(regex_error(
            VALUE_MSG,
            &format!("({NAME_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

/// The operator of one requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// `in (a,b)`, `=`, `==`.
    In,
    /// `notin (a,b)`, `!=`.
    NotIn,
    /// `key`.
    Exists,
    /// `!key`.
    DoesNotExist,
    /// `key>3` (integers).
    GreaterThan,
    /// `key<3` (integers).
    LessThan,
}

/// One requirement of a selector: `key`, operator, values (sorted, deduplicated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// The operator.
    pub operator: Operator,
    /// The values (one integer for `>`/`<`, none for `Exists`/`DoesNotExist`).
    pub values: Vec<String>,
}

impl Requirement {
    /// True when `value` (the object's value for the key, `None`: absent) satisfies it.
    pub fn matches(&self, value: Option<&str>) -> bool {
        let compare = |ordering: std::cmp::Ordering| {
            let wanted = self.values.first().and_then(|v| v.parse::<i64>().ok());
            match (value.and_then(|v| v.parse::<i64>().ok()), wanted) {
                (Some(actual), Some(wanted)) => actual.cmp(&wanted) == ordering,
                _ => false,
            }
        };
        match self.operator {
            Operator::In => value.is_some_and(|v| self.values.iter().any(|x| x == v)),
            Operator::NotIn => value.is_none_or(|v| !self.values.iter().any(|x| x == v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan => compare(std::cmp::Ordering::Greater),
            Operator::LessThan => compare(std::cmp::Ordering::Less),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Error,
    End,
    ClosedPar,
    Comma,
    Not,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::Not,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// The lexer's tokens and literals, up to and including the end.
fn lex(input: &str) -> Vec<(Token, String)> {
    let bytes = input.as_bytes();
    let mut pos = 0;
    let mut items = Vec::new();
    loop {
        while pos < bytes.len() && is_space(bytes[pos]) {
            pos += 1;
        }
        if pos >= bytes.len() {
            items.push((Token::End, String::new()));
            return items;
        }
        let start = pos;
        if is_special(bytes[pos]) {
            // The longest run of special symbols that is still an operator.
            let mut last: Option<(Token, usize)> = None;
            while pos < bytes.len() && is_special(bytes[pos]) {
                pos += 1;
                match keyword(&input[start..pos]) {
                    Some(token) => last = Some((token, pos)),
                    None if last.is_some() => {
                        pos -= 1;
                        break;
                    }
                    None => {}
                }
            }
            match last {
                Some((token, end)) => {
                    pos = end;
                    items.push((token, input[start..end].to_string()));
                }
                None => items.push((
                    Token::Error,
                    format!("error expected: keyword found '{}'", &input[start..pos]),
                )),
            }
        } else {
            while pos < bytes.len() && !is_special(bytes[pos]) && !is_space(bytes[pos]) {
                pos += 1;
            }
            let literal = &input[start..pos];
            items.push((keyword(literal).unwrap_or(Token::Identifier), literal.to_string()));
        }
    }
}

/// Whether `in`/`notin` are keywords (after a key) or plain values.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

impl Parser {
    fn token(&self, at: usize, context: Context) -> (Token, String) {
        let (token, literal) = self.items.get(at).cloned().unwrap_or((Token::End, String::new()));
        match token {
            Token::In | Token::NotIn if context == Context::Values => (Token::Identifier, literal),
            _ => (token, literal),
        }
    }

    fn lookahead(&self, context: Context) -> (Token, String) {
        self.token(self.position, context)
    }

    fn consume(&mut self, context: Context) -> (Token, String) {
        let item = self.token(self.position, context);
        self.position += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (token, literal) = self.lookahead(Context::Values);
            match token {
                Token::Identifier | Token::Not => {
                    let requirement = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(requirement);
                    let (token, literal) = self.consume(Context::Values);
                    match token {
                        Token::End => return Ok(requirements),
                        Token::Comma => {
                            let (next, literal) = self.lookahead(Context::Values);
                            if next != Token::Identifier && next != Token::Not {
                                return Err(format!("found '{literal}', expected: identifier after ','"));
                            }
                        }
                        _ => return Err(format!("found '{literal}', expected: ',' or 'end of string'")),
                    }
                }
                Token::End => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{literal}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (key, operator) = self.key_and_inferred_operator()?;
        if let Some(operator) = operator {
            return new_requirement(key, operator, Vec::new());
        }
        let (operator, set_based) = self.operator()?;
        let values = if set_based {
            self.values()?
        } else {
            self.exact_value()?
        };
        new_requirement(key, operator, values.into_iter().collect())
    }

    fn key_and_inferred_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut operator = None;
        let (mut token, mut literal) = self.consume(Context::Values);
        if token == Token::Not {
            operator = Some(Operator::DoesNotExist);
            (token, literal) = self.consume(Context::Values);
        }
        if token != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        let errors = qualified_name_errors(&literal);
        if !errors.is_empty() {
            return Err(format!(
                "<nil>: Invalid value: {literal:?}: {}",
                errors.join("; ")
            ));
        }
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Token::End | Token::Comma) && operator.is_none() {
            operator = Some(Operator::Exists);
        }
        Ok((literal, operator))
    }

    /// The operator, and whether a set of values follows (`in`, `notin`).
    fn operator(&mut self) -> Result<(Operator, bool), String> {
        let (token, literal) = self.consume(Context::KeyAndOperator);
        Ok(match token {
            Token::In => (Operator::In, true),
            Token::NotIn => (Operator::NotIn, true),
            Token::Equals | Token::DoubleEquals => (Operator::In, false),
            Token::NotEquals => (Operator::NotIn, false),
            Token::GreaterThan => (Operator::GreaterThan, false),
            Token::LessThan => (Operator::LessThan, false),
            _ => {
                return Err(format!(
                    "found '{literal}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    fn values(&mut self) -> Result<BTreeSet<String>, String> {
        let (token, literal) = self.consume(Context::Values);
        if token != Token::OpenPar {
            return Err(format!("found '{literal}' expected: '('"));
        }
        let (token, literal) = self.lookahead(Context::Values);
        match token {
            Token::Identifier | Token::Comma => {
                let set = self.identifiers()?;
                if self.consume(Context::Values).0 != Token::ClosedPar {
                    return Err(format!("found '{literal}', expected: ')'"));
                }
                Ok(set)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!("found '{literal}', expected: ',', ')' or identifier")),
        }
    }

    fn identifiers(&mut self) -> Result<BTreeSet<String>, String> {
        let mut set = BTreeSet::new();
        loop {
            let (token, literal) = self.consume(Context::Values);
            match token {
                Token::Identifier => {
                    set.insert(literal);
                    let (next, literal) = self.lookahead(Context::Values);
                    match next {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set),
                        _ => return Err(format!("found '{literal}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (next, _) = self.lookahead(Context::Values);
                    if next == Token::ClosedPar {
                        set.insert(String::new());
                        return Ok(set);
                    }
                    if next == Token::Comma {
                        set.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{literal}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        let (token, _) = self.lookahead(Context::Values);
        if matches!(token, Token::End | Token::Comma) {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (token, literal) = self.consume(Context::Values);
        if token == Token::Identifier {
            Ok(BTreeSet::from([literal]))
        } else {
            Err(format!("found '{literal}', expected: identifier"))
        }
    }
}

/// apimachinery's `NewRequirement`: the values' checks, aggregated as `ToAggregate` does.
fn new_requirement(key: String, operator: Operator, values: Vec<String>) -> Result<Requirement, String> {
    let mut errors = Vec::new();
    if matches!(operator, Operator::GreaterThan | Operator::LessThan) {
        for (i, value) in values.iter().enumerate() {
            if value.parse::<i64>().is_err() {
                errors.push(format!(
                    "values[{i}]: Invalid value: {value:?}: for 'Gt', 'Lt' operators, the value must be an integer"
                ));
            }
        }
    }
    for (i, value) in values.iter().enumerate() {
        let problems = label_value_errors(value);
        if !problems.is_empty() {
            errors.push(format!(
                "values[{i}][{key}]: Invalid value: {value:?}: {}",
                problems.join("; ")
            ));
        }
    }
    errors.dedup();
    match errors.len() {
        0 => Ok(Requirement {
            key,
            operator,
            values,
        }),
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// Parses a label selector (`a=b,c!=d,e in (f,g),h,!i,j>1`), sorted by key as kube does;
/// the error is kube-apiserver's message.
pub fn parse_selector(input: &str) -> Result<Vec<Requirement>, String> {
    let mut parser = Parser {
        items: lex(input),
        position: 0,
    };
    let mut requirements = parser.parse()?;
    requirements.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(requirements)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(input: &str) -> Requirement {
        parse_selector(input)
            .ok()
            .and_then(|r| r.into_iter().next())
            .unwrap_or(Requirement {
                key: "unparsed".into(),
                operator: Operator::Exists,
                values: Vec::new(),
            })
    }

    #[test]
    fn the_grammar_as_kube_parses_it() {
        assert_eq!(one("x in (foo,,baz)").values, vec!["", "baz", "foo"]);
        assert_eq!(one("x notin ()").values, vec![""]);
        assert_eq!(
            one("x in (in)").values,
            vec!["in"],
            "keywords are values in a set"
        );
        assert_eq!(one("x=").values, vec![""]);
        assert_eq!(one("x>3").operator, Operator::GreaterThan);
        assert_eq!(one("x < 3").operator, Operator::LessThan);
        assert_eq!(one("!x").operator, Operator::DoesNotExist);
        let keys: Vec<String> = parse_selector("b,a=1,c")
            .unwrap_or_default()
            .into_iter()
            .map(|r| r.key)
            .collect();
        assert_eq!(keys, vec!["a", "b", "c"]);
        assert_eq!(parse_selector(""), Ok(Vec::new()));
    }

    #[test]
    fn errors_are_worded_as_kube() {
        for (input, message) in [
            ("x in a", "unable to parse requirement: found 'a' expected: '('"),
            (
                "a b",
                "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
            ),
            ("a=b,", "found '', expected: identifier after ','"),
            ("a=b c", "found 'c', expected: ',' or 'end of string'"),
            ("=a", "found '=', expected: !, identifier, or 'end of string'"),
            (
                "x>a",
                "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer",
            ),
            (
                "x in (a b)",
                "unable to parse requirement: found 'b', expected: ',' or ')'",
            ),
            (
                "a=(",
                "unable to parse requirement: found '(', expected: identifier",
            ),
        ] {
            assert_eq!(parse_selector(input).err().as_deref(), Some(message), "{input}");
        }
        let key = parse_selector("-bad-=x").err().unwrap_or_default();
        assert!(
            key.starts_with(
                "unable to parse requirement: <nil>: Invalid value: \"-bad-\": name part must consist of"
            ),
            "{key}"
        );
        let value = parse_selector("a=-x-").err().unwrap_or_default();
        assert!(value.starts_with("unable to parse requirement: values[0][a]: Invalid value: \"-x-\": a valid label must be an empty string"), "{value}");
    }

    #[test]
    fn matching() {
        assert!(one("x>3").matches(Some("4")));
        assert!(!one("x>3").matches(Some("3")));
        assert!(!one("x>3").matches(Some("four")));
        assert!(!one("x>3").matches(None));
        assert!(one("x<3").matches(Some("-1")));
        assert!(one("x notin (a)").matches(None));
        assert!(one("x in ()").matches(Some("")));
    }

    #[test]
    fn qualified_names() {
        assert!(qualified_name_errors("example.com/My_Name.1").is_empty());
        assert_eq!(qualified_name_errors("/a"), vec!["prefix part must be non-empty"]);
        assert_eq!(qualified_name_errors("a/b/c").len(), 1);
        assert_eq!(
            qualified_name_errors(&"a".repeat(64)),
            vec!["name part must be no more than 63 characters"]
        );
        assert_eq!(
            label_value_errors("-"),
            vec![
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
            ]
        );
    }
}

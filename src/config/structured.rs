//! `structuredOutput`: Go type declarations compiled into the JSON Schema
//! an agent's every answer must follow, when the config loads.
//!
//! The text is parsed as Go source with tree-sitter's Go grammar. Every
//! `type X struct` is a definition; the one `var X = T{}` (or `[]T{}`)
//! names the root. A field's key is its `json` tag, else its Go name
//! (`json:"-"` leaves it out); `//` comments become descriptions, and
//! properties keep their declaration order. A pointer or `omitempty`
//! makes a value nullable (still required, which strict mode demands).
//! Anything else is an error at its line and column in the block.

use serde_json::{Map, Value, json};
use tree_sitter::{Node, Parser};

/// The compiled declarations.
#[derive(Clone, Debug, PartialEq)]
pub struct Structured {
    /// The root variable's name (the schema's name in the request).
    pub name: String,
    pub schema: Value,
    /// The declarations as written: the model reads them, comments and
    /// all, because a grammar constrains syntax, not meaning.
    pub source: String,
}

/// An error in the declarations: 1-based line and column in the block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

/// Go's integer types.
const INTEGERS: &[&str] = &[
    "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64",
    "uintptr", "byte", "rune",
];

/// What the block is read as: a file of package `schema`.
const PRELUDE: &str = "package schema\n";

struct Compiler<'a> {
    src: &'a [u8],
    /// Declared structs, in order: name, node of the struct type, doc.
    defs: Vec<(String, Node<'a>, Option<String>)>,
}

fn err(node: Node<'_>, message: impl Into<String>) -> GoError {
    let p = node.start_position();
    GoError {
        // The prelude is one line.
        line: p.row.max(1),
        col: p.column + 1,
        message: message.into(),
    }
}

/// Compiles the declarations.
pub fn compile(block: &str) -> Result<Structured, GoError> {
    let text = format!("{PRELUDE}{block}");
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_go::LANGUAGE.into())
        .map_err(|e| GoError {
            line: 1,
            col: 1,
            message: format!("the Go grammar did not load: {e}"),
        })?;
    let tree = parser.parse(&text, None).ok_or_else(|| GoError {
        line: 1,
        col: 1,
        message: "the declarations could not be parsed".into(),
    })?;
    let root = tree.root_node();
    if root.has_error() {
        return Err(syntax_error(root, &text));
    }
    let src = text.as_bytes();
    let mut c = Compiler {
        src,
        defs: Vec::new(),
    };
    let mut roots: Vec<(String, Node<'_>, Option<String>)> = Vec::new();
    let mut cursor = root.walk();
    let top: Vec<Node<'_>> = root.named_children(&mut cursor).collect();
    for (i, node) in top.iter().enumerate() {
        let doc = doc_before(&top, i, src);
        match node.kind() {
            "package_clause" | "comment" => {}
            "type_declaration" => c.declare_types(*node, &doc)?,
            "var_declaration" => {
                let mut cur = node.walk();
                for spec in node.named_children(&mut cur) {
                    match spec.kind() {
                        "var_spec" => roots.push((c.text(field(spec, "name")?), spec, doc.clone())),
                        "comment" => {}
                        _ => {
                            return Err(err(
                                spec,
                                "declare the root as `var X = T{}`, one per block",
                            ));
                        }
                    }
                }
            }
            "function_declaration" | "method_declaration" => {
                return Err(err(
                    *node,
                    "functions are not supported: declare types and one var",
                ));
            }
            "const_declaration" => return Err(err(*node, "constants are not supported")),
            "import_declaration" => return Err(err(*node, "imports are not supported")),
            other => return Err(err(*node, format!("{other} is not supported here"))),
        }
    }
    let (name, spec, doc) = match roots.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(GoError {
                line: block.lines().count().max(1),
                col: 1,
                message: "no root: declare what the answer is with `var Answer = T{}` (or `[]T{}`)"
                    .into(),
            });
        }
        [_, second, ..] => {
            return Err(err(
                second.1,
                format!(
                    "two roots ({} and {}): one `var` names the answer",
                    roots[0].0, second.0
                ),
            ));
        }
    };
    let root_ty = c.root_type(spec)?;
    let mut used = Vec::new();
    let mut schema = c.ty(root_ty, &mut used)?;
    // A struct root is the object itself, as strict mode wants it; it
    // stays a definition too when it refers to itself.
    if let Some(r) = schema.get("$ref").and_then(Value::as_str)
        && let Some(def) = r.strip_prefix("#/$defs/")
    {
        let def = def.to_string();
        let (_, node, ddoc) = c.def(&def).ok_or_else(|| err(root_ty, "unknown type"))?;
        schema = c.object(node, ddoc, &mut used)?;
        let refers_to_itself = c.refers_to(&def, &def, &mut Vec::new())?;
        if !refers_to_itself {
            used.retain(|u| *u != def);
        }
    }
    if let (Some(d), Value::Object(m)) = (doc, &mut schema) {
        m.entry("description").or_insert(Value::String(d));
    }
    // Every definition reached, each compiled once.
    let mut defs = Map::new();
    let mut i = 0;
    while i < used.len() {
        let d = used[i].clone();
        if !defs.contains_key(&d) {
            let (_, node, ddoc) = c.def(&d).ok_or_else(|| err(root_ty, "unknown type"))?;
            let obj = c.object(node, ddoc, &mut used)?;
            defs.insert(d, obj);
        }
        i += 1;
    }
    if !defs.is_empty()
        && let Value::Object(m) = &mut schema
    {
        m.insert("$defs".into(), Value::Object(defs));
    }
    Ok(Structured {
        name,
        schema,
        source: block.trim_end().to_string(),
    })
}

/// Where and how the declarations are not valid Go.
fn syntax_error(root: Node<'_>, text: &str) -> GoError {
    let bad = first_error(root).unwrap_or(root);
    if bad.end_byte() >= text.trim_end().len() && !bad.is_missing() {
        // Cut short: say so where it ends.
        let end = root.end_position();
        return GoError {
            line: end.row.max(1),
            col: end.column + 1,
            message: "not valid Go: the declarations end too early (a `}` is missing?)".into(),
        };
    }
    let what = if bad.is_missing() {
        format!("missing {}", bad.kind())
    } else {
        let t = bad.utf8_text(text.as_bytes()).unwrap_or("").trim();
        let t: String = t.chars().take(30).collect();
        format!("unexpected {t:?}")
    };
    err(bad, format!("not valid Go: {what}"))
}

fn first_error(node: Node<'_>) -> Option<Node<'_>> {
    if node.is_error() || node.is_missing() {
        return Some(node);
    }
    let mut cur = node.walk();
    let kids: Vec<Node<'_>> = node.children(&mut cur).collect();
    kids.into_iter()
        .filter(|k| k.has_error() || k.is_missing())
        .find_map(first_error)
}

fn field<'a>(node: Node<'a>, name: &str) -> Result<Node<'a>, GoError> {
    node.child_by_field_name(name)
        .ok_or_else(|| err(node, format!("{} without its {name}", node.kind())))
}

/// The `//` comments on the lines right above `nodes[i]`, joined; not
/// one that ends the line of something else (a field's own comment).
fn doc_before(nodes: &[Node<'_>], i: usize, src: &[u8]) -> Option<String> {
    let mut lines = Vec::new();
    let mut row = nodes[i].start_position().row;
    for j in (0..i).rev() {
        let n = nodes[j];
        if n.kind() != "comment" || n.end_position().row + 1 != row {
            break;
        }
        let trails = j > 0 && nodes[j - 1].end_position().row == n.start_position().row;
        if trails {
            break;
        }
        lines.push(comment_text(n, src));
        row = n.start_position().row;
    }
    lines.reverse();
    let text = lines.join(" ").trim().to_string();
    (!text.is_empty()).then_some(text)
}

fn comment_text(n: Node<'_>, src: &[u8]) -> String {
    let t = n.utf8_text(src).unwrap_or("");
    let t = t
        .strip_prefix("//")
        .or_else(|| t.strip_prefix("/*").and_then(|x| x.strip_suffix("*/")))
        .unwrap_or(t);
    t.trim().to_string()
}

/// The key and options of a field's `json` tag.
fn json_tag(tag: &str) -> Option<(String, bool)> {
    let at = tag.find("json:\"")? + "json:\"".len();
    let rest = &tag[at..];
    let value = &rest[..rest.find('"')?];
    let mut parts = value.split(',');
    let key = parts.next().unwrap_or("").to_string();
    let omitempty = parts.any(|p| p == "omitempty");
    Some((key, omitempty))
}

fn nullable(schema: Value) -> Value {
    match schema {
        Value::Object(mut m)
            if m.get("type").and_then(Value::as_str).is_some() && !m.contains_key("$ref") =>
        {
            let t = m.remove("type").unwrap_or(Value::Null);
            m.insert("type".into(), json!([t, "null"]));
            Value::Object(m)
        }
        other => json!({"anyOf": [other, {"type": "null"}]}),
    }
}

impl<'a> Compiler<'a> {
    /// The struct types of one `type` declaration, each with its doc.
    fn declare_types(&mut self, node: Node<'a>, doc: &Option<String>) -> Result<(), GoError> {
        let mut cur = node.walk();
        for spec in node.named_children(&mut cur) {
            match spec.kind() {
                "type_spec" => {
                    if let Some(tp) = spec.child_by_field_name("type_parameters") {
                        return Err(err(tp, "generic types are not supported"));
                    }
                    let name = self.text(field(spec, "name")?);
                    let ty = field(spec, "type")?;
                    if ty.kind() != "struct_type" {
                        return Err(err(
                            ty,
                            format!(
                                "type {name}: only struct types can be declared (write the {} where it is used)",
                                self.text(ty)
                            ),
                        ));
                    }
                    if self.defs.iter().any(|(n, _, _)| *n == name) {
                        return Err(err(spec, format!("type {name} is declared twice")));
                    }
                    self.defs.push((name, ty, doc.clone()));
                }
                "type_alias" => {
                    return Err(err(spec, "type aliases are not supported"));
                }
                "comment" => {}
                other => return Err(err(spec, format!("{other} is not supported"))),
            }
        }
        Ok(())
    }

    fn text(&self, n: Node<'_>) -> String {
        n.utf8_text(self.src).unwrap_or("").to_string()
    }

    fn def(&self, name: &str) -> Option<(String, Node<'a>, Option<String>)> {
        self.defs.iter().find(|(n, _, _)| n == name).cloned()
    }

    /// The type a root `var` declares: `var X = T{}`, `var X = []T{}`, or
    /// `var X T`.
    fn root_type(&self, spec: Node<'a>) -> Result<Node<'a>, GoError> {
        if let Some(t) = spec.child_by_field_name("type") {
            return Ok(t);
        }
        let value = field(spec, "value")?;
        let mut cur = value.walk();
        let exprs: Vec<Node<'a>> = value.named_children(&mut cur).collect();
        match exprs.as_slice() {
            [lit] if lit.kind() == "composite_literal" => field(*lit, "type"),
            _ => Err(err(
                value,
                "the root is written `var X = T{}` or `var X = []T{}`",
            )),
        }
    }

    /// The schema of a type where it is used.
    fn ty(&self, n: Node<'a>, used: &mut Vec<String>) -> Result<Value, GoError> {
        match n.kind() {
            "type_identifier" => {
                let name = self.text(n);
                Ok(match name.as_str() {
                    "string" => json!({"type": "string"}),
                    "bool" => json!({"type": "boolean"}),
                    "float32" | "float64" => json!({"type": "number"}),
                    i if INTEGERS.contains(&i) => json!({"type": "integer"}),
                    "any" => return Err(err(n, "`any` is not supported: name a type")),
                    _ if self.def(&name).is_some() => {
                        if !used.contains(&name) {
                            used.push(name.clone());
                        }
                        json!({"$ref": format!("#/$defs/{name}")})
                    }
                    _ => {
                        return Err(err(
                            n,
                            format!("unknown type {name}: declare it as a struct"),
                        ));
                    }
                })
            }
            "slice_type" | "array_type" => Ok(json!({
                "type": "array",
                "items": self.ty(field(n, "element")?, used)?,
            })),
            "map_type" => {
                let key = field(n, "key")?;
                if self.text(key) != "string" {
                    return Err(err(key, "map keys must be string (JSON object keys are)"));
                }
                Ok(json!({
                    "type": "object",
                    "additionalProperties": self.ty(field(n, "value")?, used)?,
                }))
            }
            "pointer_type" => {
                let inner = n
                    .named_child(0)
                    .ok_or_else(|| err(n, "a pointer to nothing"))?;
                Ok(nullable(self.ty(inner, used)?))
            }
            "parenthesized_type" => {
                let inner = n
                    .named_child(0)
                    .ok_or_else(|| err(n, "empty parentheses"))?;
                self.ty(inner, used)
            }
            "struct_type" => self.object(n, None, used),
            "interface_type" => Err(err(
                n,
                "interfaces are not supported: name a struct or a basic type",
            )),
            "channel_type" => Err(err(n, "channels are not supported")),
            "function_type" => Err(err(n, "functions are not supported")),
            "generic_type" => Err(err(n, "generic types are not supported")),
            "qualified_type" => Err(err(
                n,
                format!(
                    "{} is from another package: declare the type here",
                    self.text(n)
                ),
            )),
            other => Err(err(n, format!("{other} is not supported"))),
        }
    }

    /// A struct as a closed object: every field required, in order.
    fn object(
        &self,
        st: Node<'a>,
        doc: Option<String>,
        used: &mut Vec<String>,
    ) -> Result<Value, GoError> {
        let list = st
            .named_child(0)
            .filter(|l| l.kind() == "field_declaration_list");
        let mut props = Map::new();
        let mut required = Vec::new();
        if let Some(list) = list {
            let mut cur = list.walk();
            let items: Vec<Node<'a>> = list.named_children(&mut cur).collect();
            for (i, f) in items.iter().enumerate() {
                if f.kind() != "field_declaration" {
                    continue;
                }
                let mut names = Vec::new();
                let mut nc = f.walk();
                for name in f.children_by_field_name("name", &mut nc) {
                    names.push(self.text(name));
                }
                let ty = field(*f, "type")?;
                if names.is_empty() {
                    return Err(err(
                        *f,
                        "embedded fields are not supported: give the field a name",
                    ));
                }
                let tag = f.child_by_field_name("tag").map(|t| self.text(t));
                let (key, omitempty) = match tag.as_deref().and_then(json_tag) {
                    Some((k, o)) => (Some(k), o),
                    None => (None, false),
                };
                if key.as_deref() == Some("-") {
                    continue;
                }
                // A comment on the field's line, else the lines above it.
                let trailing = items
                    .get(i + 1)
                    .filter(|c| {
                        c.kind() == "comment" && c.start_position().row == f.end_position().row
                    })
                    .map(|c| comment_text(*c, self.src));
                let description = trailing.or_else(|| doc_before(&items, i, self.src));
                let mut schema = self.ty(ty, used)?;
                if omitempty && ty.kind() != "pointer_type" {
                    schema = nullable(schema);
                }
                if let (Some(d), Value::Object(m)) = (&description, &mut schema) {
                    if m.contains_key("$ref") || m.contains_key("anyOf") {
                        // A $ref's siblings are ignored by older drafts:
                        // wrap it so the description is kept.
                        schema = json!({"allOf": [Value::Object(m.clone())], "description": d});
                    } else {
                        m.insert("description".into(), Value::String(d.clone()));
                    }
                }
                for name in &names {
                    let k = match &key {
                        Some(k) if !k.is_empty() && names.len() == 1 => k.clone(),
                        _ => name.clone(),
                    };
                    if props.contains_key(&k) {
                        return Err(err(*f, format!("the key {k:?} is used twice")));
                    }
                    props.insert(k.clone(), schema.clone());
                    required.push(Value::String(k));
                }
            }
        }
        let mut m = Map::new();
        m.insert("type".into(), json!("object"));
        if let Some(d) = doc {
            m.insert("description".into(), Value::String(d));
        }
        m.insert("properties".into(), Value::Object(props));
        m.insert("required".into(), Value::Array(required));
        m.insert("additionalProperties".into(), json!(false));
        Ok(Value::Object(m))
    }

    /// Whether struct `from` refers to `target`, directly or through
    /// others.
    fn refers_to(&self, from: &str, target: &str, seen: &mut Vec<String>) -> Result<bool, GoError> {
        let Some((_, node, _)) = self.def(from) else {
            return Ok(false);
        };
        let mut used = Vec::new();
        self.object(node, None, &mut used)?;
        for u in used {
            if u == target {
                return Ok(true);
            }
            if !seen.contains(&u) {
                seen.push(u.clone());
                if self.refers_to(&u, target, seen)? {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(src: &str) -> Value {
        compile(src).unwrap().schema
    }

    fn error(src: &str) -> (usize, usize, String) {
        let e = compile(src).unwrap_err();
        (e.line, e.col, e.message)
    }

    #[test]
    fn every_basic_type_maps_and_keys_come_from_tags_in_order() {
        let s = schema(
            "type T struct {\n    Zed string `json:\"zed\"`\n    Count int64\n    Small uint8 `json:\"small,omitempty\"`\n    Ratio float32 `json:\"ratio\"`\n    Ok bool `json:\"ok\"`\n    Skip string `json:\"-\"`\n    Tags []string `json:\"tags\"`\n    Grid [3][]int `json:\"grid\"`\n    Scores map[string]float64 `json:\"scores\"`\n    Note *string `json:\"note\"`\n}\nvar X = T{}\n",
        );
        let props = schema_props(&s);
        assert_eq!(
            props,
            [
                "zed", "Count", "small", "ratio", "ok", "tags", "grid", "scores", "note"
            ]
        );
        let p = &s["properties"];
        assert_eq!(p["zed"], json!({"type": "string"}));
        assert_eq!(p["Count"], json!({"type": "integer"}));
        assert_eq!(p["small"], json!({"type": ["integer", "null"]}));
        assert_eq!(p["ratio"], json!({"type": "number"}));
        assert_eq!(p["ok"], json!({"type": "boolean"}));
        assert_eq!(
            p["tags"],
            json!({"type": "array", "items": {"type": "string"}})
        );
        assert_eq!(
            p["grid"],
            json!({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}})
        );
        assert_eq!(
            p["scores"],
            json!({"type": "object", "additionalProperties": {"type": "number"}})
        );
        assert_eq!(p["note"], json!({"type": ["string", "null"]}));
        // Every key is required (strict mode); the object is closed.
        assert_eq!(s["required"].as_array().unwrap().len(), 9);
        assert_eq!(s["additionalProperties"], false);
        assert!(s.get("$defs").is_none());
    }

    fn schema_props(s: &Value) -> Vec<String> {
        // serde_json keeps insertion order here only with preserve_order;
        // `required` is a list, so it holds the declaration order.
        s["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn structs_become_definitions_and_recursion_works() {
        let s = schema(
            "// A node of the tree.\ntype Node struct {\n    Name string `json:\"name\"` // what it is called\n    Kids []Node `json:\"kids\"`\n    Parent *Node `json:\"parent\"`\n}\n\n// The whole tree.\nvar Tree = Node{}\n",
        );
        assert_eq!(s["type"], "object");
        assert_eq!(s["description"], "A node of the tree.");
        assert_eq!(s["properties"]["name"]["description"], "what it is called");
        assert_eq!(
            s["properties"]["kids"],
            json!({"type": "array", "items": {"$ref": "#/$defs/Node"}})
        );
        assert_eq!(
            s["properties"]["parent"],
            json!({"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]})
        );
        // It refers to itself: the definition stays for the $refs.
        assert_eq!(s["$defs"]["Node"]["type"], "object");
        let v = jsonschema::validator_for(&s).unwrap();
        assert!(v.is_valid(&json!({"name": "a", "kids": [{"name": "b", "kids": [], "parent": null}], "parent": null})));
        assert!(!v.is_valid(
            &json!({"name": "a", "kids": [{"name": 1, "kids": [], "parent": null}], "parent": null})
        ));
    }

    #[test]
    fn an_array_root_and_comments_above_fields() {
        let c = compile(
            "type Language struct {\n    // the language's name\n    Name string `json:\"name\"`\n    Official bool `json:\"official\"` // official status\n}\n\nvar Langs = []Language{}\n",
        )
        .unwrap();
        assert_eq!(c.name, "Langs");
        assert_eq!(c.schema["type"], "array");
        assert_eq!(c.schema["items"], json!({"$ref": "#/$defs/Language"}));
        let def = &c.schema["$defs"]["Language"];
        assert_eq!(
            def["properties"]["name"]["description"],
            "the language's name"
        );
        assert_eq!(
            def["properties"]["official"]["description"],
            "official status"
        );
    }

    #[test]
    fn what_json_cannot_carry_is_an_error_at_its_place() {
        let cases = [
            (
                "type T struct {\n    F interface{}\n}\nvar X = T{}\n",
                2,
                7,
                "interfaces",
            ),
            (
                "type T struct {\n    F chan int\n}\nvar X = T{}\n",
                2,
                7,
                "channels",
            ),
            (
                "type T struct {\n    F func()\n}\nvar X = T{}\n",
                2,
                7,
                "functions",
            ),
            (
                "type T struct {\n    F Missing\n}\nvar X = T{}\n",
                2,
                7,
                "unknown type Missing",
            ),
            (
                "type T struct {\n    F map[int]string\n}\nvar X = T{}\n",
                2,
                11,
                "map keys",
            ),
            (
                "type T[K any] struct {\n    F K\n}\nvar X = T{}\n",
                1,
                7,
                "generic",
            ),
            (
                "type T struct {\n    F time.Time\n}\nvar X = T{}\n",
                2,
                7,
                "another package",
            ),
            ("type T struct {\n    F string\n}\n", 3, 1, "no root"),
            (
                "type T struct{}\nvar X = T{}\nvar Y = T{}\n",
                3,
                5,
                "two roots",
            ),
            ("type T struct {\n    F string\n", 3, 1, "not valid Go"),
            ("type T string\nvar X = T{}\n", 1, 8, "only struct types"),
            (
                "type T struct {\n    Other\n}\ntype Other struct{}\nvar X = T{}\n",
                2,
                5,
                "embedded",
            ),
        ];
        for (src, line, col, words) in cases {
            let (l, c, m) = error(src);
            assert!(m.contains(words), "{src:?}: {m}");
            assert_eq!((l, c), (line, col), "{src:?}: {m}");
        }
    }
}

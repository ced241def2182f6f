//! Tool definitions sent with chat-like requests (`--tools FILE`, `--tool-choice`), read once
//! and rendered in each API's form.
//!
//! The file is OpenAI's form, a JSON list of
//! `{"type": "function", "function": {"name", "description"?, "parameters"?}}`
//! (`parameters` a JSON Schema object). Rendered per API:
//!
//! | API | `tools` entry | `tool_choice` for auto / none / required / NAME |
//! |---|---|---|
//! | chat | the entry as given | `"auto"`, `"none"`, `"required"`, `{"type":"function","function":{"name":NAME}}` |
//! | responses | `{"type":"function","name","description","parameters"}` | `"auto"`, `"none"`, `"required"`, `{"type":"function","name":NAME}` |
//! | messages | `{"name","description","input_schema"}` | `{"type":"auto"}`, `{"type":"none"}`, `{"type":"any"}`, `{"type":"tool","name":NAME}` |
//!
//! A tool without `parameters` gets `{"type":"object","properties":{}}` (Anthropic requires an
//! `input_schema`).

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::target::Api;

/// One function a model may call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDef {
    /// The function's name.
    pub name: String,
    /// What it does, when the file says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments' JSON Schema.
    pub parameters: Value,
}

/// Whether (and which) tool the model must call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// No tool call.
    None,
    /// Some tool must be called.
    Required,
    /// This tool must be called.
    Named(String),
}

/// `--tools` and `--tool-choice`, read and checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolsPlan {
    /// The file.
    pub path: PathBuf,
    /// The definitions, in file order.
    #[serde(serialize_with = "defs")]
    pub tools: Arc<Vec<ToolDef>>,
    /// `--tool-choice`.
    pub choice: ToolChoice,
}

fn defs<S: serde::Serializer>(t: &Arc<Vec<ToolDef>>, s: S) -> Result<S::Ok, S::Error> {
    t.as_slice().serialize(s)
}

/// What a tools file should hold, for error messages.
pub const TOOLS_FORM: &str = r#"a JSON list of OpenAI tool definitions, e.g. [{"type": "function", "function": {"name": "get_weather", "description": "...", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]"#;

/// Why a `--tools` file is not a list of tool definitions: the entry and what is wrong. The
/// plan puts the flag, the file and [`TOOLS_FORM`] around it, as a usage error.
#[derive(Debug, thiserror::Error)]
pub enum ToolsError {
    /// Not JSON.
    #[error("not JSON ({0})")]
    Json(#[source] serde_json::Error),
    /// A request body's `{"tools": [...]}`.
    #[error("an object with a \"tools\" list: the file must be the list itself")]
    Wrapped,
    /// Not a list.
    #[error("not a list")]
    NotList,
    /// An empty list.
    #[error("an empty list: give at least one tool")]
    Empty,
    /// An entry (1-based) that is not a function tool.
    #[error("entry {entry}: {problem}")]
    Entry {
        /// The entry (1-based).
        entry: usize,
        /// What is wrong with it.
        problem: EntryError,
    },
    /// A name given twice.
    #[error("entry {entry}: a second tool named '{name}'")]
    Duplicate {
        /// The entry (1-based).
        entry: usize,
        /// The name.
        name: String,
    },
}

/// What is wrong with one entry of a tools file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// Not an object.
    #[error("not an object")]
    NotObject,
    /// A tool type other than `function`.
    #[error("type '{0}' (only \"function\" tools are sent)")]
    Type(String),
    /// No type.
    #[error("no \"type\": \"function\"")]
    NoType,
    /// No function.
    #[error("no \"function\" object")]
    NoFunction,
    /// A function without a name.
    #[error("its function has no \"name\"")]
    NoName,
    /// A description that is not text.
    #[error("function '{0}': \"description\" is not a string")]
    Description(String),
    /// Parameters that are not a schema.
    #[error("function '{0}': \"parameters\" is not a JSON Schema object")]
    Parameters(String),
}

/// A `--tool-choice` that names none of the tools; the plan puts the flag in front.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "'{name}' is neither auto, none, required nor a tool in --tools (its tools: {})",
    .tools.join(", ")
)]
pub struct ToolChoiceError {
    /// The choice as given.
    pub name: String,
    /// The tools' names.
    pub tools: Vec<String>,
}

/// Reads a tools file's text: every entry a function with a name, names distinct. `Err` says
/// which entry is wrong and how.
pub fn parse_tools(text: &str) -> Result<Vec<ToolDef>, ToolsError> {
    let v: Value = serde_json::from_str(text).map_err(ToolsError::Json)?;
    let list = match v {
        Value::Array(list) => list,
        // `{"tools": [...]}` is a request body's fragment: say where the list is.
        Value::Object(o) if o.get("tools").is_some_and(Value::is_array) => {
            return Err(ToolsError::Wrapped);
        }
        _ => return Err(ToolsError::NotList),
    };
    if list.is_empty() {
        return Err(ToolsError::Empty);
    }
    let mut tools: Vec<ToolDef> = Vec::with_capacity(list.len());
    for (i, entry) in list.iter().enumerate() {
        let t = tool_def(entry).map_err(|problem| ToolsError::Entry {
            entry: i + 1,
            problem,
        })?;
        if tools.iter().any(|d| d.name == t.name) {
            return Err(ToolsError::Duplicate {
                entry: i + 1,
                name: t.name,
            });
        }
        tools.push(t);
    }
    Ok(tools)
}

/// One OpenAI-form entry.
fn tool_def(entry: &Value) -> Result<ToolDef, EntryError> {
    let o = entry.as_object().ok_or(EntryError::NotObject)?;
    match o.get("type").and_then(Value::as_str) {
        Some("function") => {}
        Some(other) => return Err(EntryError::Type(other.into())),
        None => return Err(EntryError::NoType),
    }
    let f = o
        .get("function")
        .and_then(Value::as_object)
        .ok_or(EntryError::NoFunction)?;
    let name = f
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.trim().is_empty())
        .ok_or(EntryError::NoName)?;
    let description = match f.get("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(d)) => Some(d.clone()),
        Some(_) => return Err(EntryError::Description(name.into())),
    };
    let parameters = match f.get("parameters") {
        None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
        Some(p @ Value::Object(_)) => p.clone(),
        Some(_) => return Err(EntryError::Parameters(name.into())),
    };
    Ok(ToolDef {
        name: name.to_string(),
        description,
        parameters,
    })
}

/// `--tool-choice` as given, checked against the tools' names.
pub fn parse_choice(raw: Option<&str>, tools: &[ToolDef]) -> Result<ToolChoice, ToolChoiceError> {
    Ok(match raw.map(str::trim) {
        None | Some("auto") => ToolChoice::Auto,
        Some("none") => ToolChoice::None,
        Some("required") | Some("any") => ToolChoice::Required,
        Some(name) if tools.iter().any(|t| t.name == name) => ToolChoice::Named(name.to_string()),
        Some(name) => {
            return Err(ToolChoiceError {
                name: name.into(),
                tools: tools.iter().map(|t| t.name.clone()).collect(),
            });
        }
    })
}

impl ToolsPlan {
    /// The request's `tools` list in `api`'s form.
    pub fn tools_json(&self, api: Api) -> Value {
        Value::Array(self.tools.iter().map(|t| tool_json(t, api)).collect())
    }
}

impl ToolChoice {
    /// The request's `tool_choice` in `api`'s form.
    pub fn json(&self, api: Api) -> Value {
        match (self, api == Api::Messages) {
            (ToolChoice::Auto, false) => json!("auto"),
            (ToolChoice::None, false) => json!("none"),
            (ToolChoice::Required, false) => json!("required"),
            (ToolChoice::Auto, true) => json!({"type": "auto"}),
            (ToolChoice::None, true) => json!({"type": "none"}),
            (ToolChoice::Required, true) => json!({"type": "any"}),
            (ToolChoice::Named(n), true) => json!({"type": "tool", "name": n}),
            (ToolChoice::Named(n), false) if api == Api::Responses => {
                json!({"type": "function", "name": n})
            }
            (ToolChoice::Named(n), false) => json!({"type": "function", "function": {"name": n}}),
        }
    }
}

/// Offers the model tool `name` as its choice (an agentic session's turn before the tool's
/// result): `tools` is the run's `--tools` list with a definition of `name` added when it has
/// none (no required arguments), and `tool_choice` names it, in `api`'s form.
pub fn offer(m: &mut Map<String, Value>, api: Api, plan: Option<&ToolsPlan>, name: &str) {
    let mut tools: Vec<Value> = plan.map_or(Vec::new(), |p| {
        p.tools.iter().map(|t| tool_json(t, api)).collect()
    });
    if !plan.is_some_and(|p| p.tools.iter().any(|t| t.name == name)) {
        let def = ToolDef {
            name: name.to_string(),
            description: None,
            parameters: json!({"type": "object", "properties": {}}),
        };
        tools.push(tool_json(&def, api));
    }
    m.insert("tools".into(), Value::Array(tools));
    let choice = ToolChoice::Named(name.to_string()).json(api);
    m.insert("tool_choice".into(), choice);
}

/// One definition in `api`'s form: chat nests it under `function`, Responses puts `type` in
/// front of it, Messages names its parameters `input_schema`.
fn tool_json(t: &ToolDef, api: Api) -> Value {
    let Ok(Value::Object(mut def)) = serde_json::to_value(t) else {
        return Value::Null;
    };
    match api {
        Api::Messages => {
            // `parameters` is the last field: removing it keeps the order.
            if let Some(p) = def.remove("parameters") {
                def.insert("input_schema".into(), p);
            }
            Value::Object(def)
        }
        Api::Responses => {
            let mut m = Map::from_iter([("type".to_string(), json!("function"))]);
            m.extend(def);
            Value::Object(m)
        }
        _ => json!({"type": "function", "function": def}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WEATHER: &str = r#"[{"type":"function","function":{"name":"get_weather","description":"Weather now","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
        {"type":"function","function":{"name":"now"}}]"#;

    fn plan(choice: ToolChoice) -> ToolsPlan {
        ToolsPlan {
            path: "tools.json".into(),
            tools: Arc::new(parse_tools(WEATHER).unwrap()),
            choice,
        }
    }

    /// Each API's rendering, exactly.
    #[test]
    fn rendered_per_api() {
        let p = plan(ToolChoice::Auto);
        let schema =
            r#"{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}"#;
        let empty = r#"{"type":"object","properties":{}}"#;
        assert_eq!(
            p.tools_json(Api::Chat).to_string(),
            format!(
                r#"[{{"type":"function","function":{{"name":"get_weather","description":"Weather now","parameters":{schema}}}}},{{"type":"function","function":{{"name":"now","parameters":{empty}}}}}]"#
            )
        );
        assert_eq!(
            p.tools_json(Api::Responses).to_string(),
            format!(
                r#"[{{"type":"function","name":"get_weather","description":"Weather now","parameters":{schema}}},{{"type":"function","name":"now","parameters":{empty}}}]"#
            )
        );
        assert_eq!(
            p.tools_json(Api::Messages).to_string(),
            format!(
                r#"[{{"name":"get_weather","description":"Weather now","input_schema":{schema}}},{{"name":"now","input_schema":{empty}}}]"#
            )
        );
    }

    #[test]
    fn choices_per_api() {
        let cases = [
            (
                ToolChoice::Auto,
                r#""auto""#,
                r#""auto""#,
                r#"{"type":"auto"}"#,
            ),
            (
                ToolChoice::None,
                r#""none""#,
                r#""none""#,
                r#"{"type":"none"}"#,
            ),
            (
                ToolChoice::Required,
                r#""required""#,
                r#""required""#,
                r#"{"type":"any"}"#,
            ),
            (
                ToolChoice::Named("now".into()),
                r#"{"type":"function","function":{"name":"now"}}"#,
                r#"{"type":"function","name":"now"}"#,
                r#"{"type":"tool","name":"now"}"#,
            ),
        ];
        for (c, chat, responses, messages) in cases {
            let p = plan(c.clone());
            assert_eq!(p.choice.json(Api::Chat).to_string(), chat, "{c:?}");
            assert_eq!(
                p.choice.json(Api::Responses).to_string(),
                responses,
                "{c:?}"
            );
            assert_eq!(p.choice.json(Api::Messages).to_string(), messages, "{c:?}");
        }
        let tools = parse_tools(WEATHER).unwrap();
        assert_eq!(parse_choice(None, &tools), Ok(ToolChoice::Auto));
        assert_eq!(
            parse_choice(Some("get_weather"), &tools),
            Ok(ToolChoice::Named("get_weather".into()))
        );
        let e = parse_choice(Some("lookup"), &tools)
            .unwrap_err()
            .to_string();
        assert!(e.contains("its tools: get_weather, now"), "{e}");
    }

    /// Files that are not a list of tool definitions say which entry and why.
    #[test]
    fn bad_files_name_the_entry() {
        for (text, says) in [
            ("{", "not JSON"),
            (r#"{"a":1}"#, "not a list"),
            (r#"{"tools":[]}"#, "the list itself"),
            ("[]", "empty list"),
            ("[1]", "entry 1: not an object"),
            (r#"[{"function":{"name":"x"}}]"#, "no \"type\""),
            (r#"[{"type":"web_search"}]"#, "type 'web_search'"),
            (r#"[{"type":"function"}]"#, "no \"function\" object"),
            (r#"[{"type":"function","function":{}}]"#, "no \"name\""),
            (
                r#"[{"type":"function","function":{"name":"x","parameters":"{}"}}]"#,
                "not a JSON Schema object",
            ),
            (
                r#"[{"type":"function","function":{"name":"x"}},{"type":"function","function":{"name":"x"}}]"#,
                "entry 2: a second tool named 'x'",
            ),
        ] {
            let e = parse_tools(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}

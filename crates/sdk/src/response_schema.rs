//! Structured output on a tool (`response_schema` in a tool spec's params):
//! the response schema's properties are merged into the tool's parameters
//! and, when the model calls the tool, the response part of the arguments
//! is validated (JSON Schema draft 2020-12) before the tool sees the rest.
//! A violation is an argument error the model is told about; a valid call's
//! response part is read back from the `ActionEvent` with
//! [`structured_output`] (the reference's `parse_last_response`).

use crate::tool::{Tool, ToolCallContext, ToolError};
use async_trait::async_trait;
use openhands_wire::content::Content;
use openhands_wire::event::{Event, EventBody};
use openhands_wire::tool::{ToolAnnotations, ToolDefinition};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::sync::Arc;

/// Tool-call arguments (a JSON object).
pub type Arguments = Map<String, Value>;

/// Name of the tool-spec parameter carrying the schema.
pub const PARAM: &str = "response_schema";

/// Response fields that would clash with what the agent adds or records.
const RESERVED: &[&str] = &["kind", "security_risk", "structured_output", "summary"];

/// Top-level keywords a response schema may use (everything else could not
/// be merged into a tool's parameters).
const SUPPORTED_KEYS: &[&str] = &[
    "$anchor",
    "$comment",
    "$defs",
    "$dynamicAnchor",
    "$id",
    "$schema",
    "$vocabulary",
    "additionalProperties",
    "default",
    "deprecated",
    "description",
    "examples",
    "properties",
    "readOnly",
    "required",
    "title",
    "type",
    "writeOnly",
];

/// Why a response schema is unusable or a response does not validate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ResponseSchemaError(pub String);

/// A checked response schema: the original (validated against) and the
/// `$ref`-expanded form merged into the tool's parameters.
#[derive(Debug, Clone)]
pub struct ResponseSchema {
    original: Value,
    expanded: Map<String, Value>,
}

impl ResponseSchema {
    /// Checks `schema` the way the reference does: a valid draft 2020-12
    /// object schema with named properties, only supported top-level
    /// keywords, no dynamic fields, required fields among the properties.
    pub fn new(schema: Value) -> Result<Self, ResponseSchemaError> {
        let err = |m: String| Err(ResponseSchemaError(m));
        if let Err(e) = jsonschema::draft202012::meta::validate(&schema) {
            return err(format!("Invalid response_schema: {e}"));
        }
        let Some(obj) = schema.as_object() else {
            return err("response_schema must describe a JSON object".into());
        };
        if obj.get("type").and_then(Value::as_str) != Some("object") {
            return err("response_schema must describe a JSON object".into());
        }
        let properties = match obj.get("properties").and_then(Value::as_object) {
            Some(p) if !p.is_empty() => p,
            _ => return err("response_schema must define named properties".into()),
        };
        let unsupported: Vec<&str> = obj
            .keys()
            .map(String::as_str)
            .filter(|k| !SUPPORTED_KEYS.contains(k))
            .collect();
        if !unsupported.is_empty() {
            return err(format!(
                "response_schema has unsupported top-level keywords: {unsupported:?}"
            ));
        }
        if !matches!(
            obj.get("additionalProperties"),
            None | Some(Value::Bool(false))
        ) {
            return err(
                "response_schema does not support dynamic fields via additionalProperties".into(),
            );
        }
        let unnamed: Vec<&str> = required_of(obj)
            .filter(|r| !properties.contains_key(*r))
            .collect();
        if !unnamed.is_empty() {
            return err(format!(
                "response_schema required fields {unnamed:?} must be named properties"
            ));
        }
        let reserved: Vec<&str> = properties
            .keys()
            .map(String::as_str)
            .filter(|k| RESERVED.contains(k))
            .collect();
        if !reserved.is_empty() {
            return err(format!("response_schema fields {reserved:?} are reserved"));
        }
        let defs = obj
            .get("$defs")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let expanded = match expand_refs(&schema, &defs, &BTreeSet::new()) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Ok(Self {
            original: schema,
            expanded,
        })
    }

    /// The schema as given.
    pub fn schema(&self) -> &Value {
        &self.original
    }

    fn field_names(&self) -> BTreeSet<String> {
        self.expanded
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// `parameters` with the response properties added, their required
    /// fields appended and `additionalProperties: false` carried over.
    pub fn merge_into(&self, parameters: Value) -> Result<Value, ResponseSchemaError> {
        let Value::Object(mut merged) = parameters else {
            return Err(ResponseSchemaError(
                "the tool's parameters are not an object".into(),
            ));
        };
        let props = merged
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(props) = props else {
            return Err(ResponseSchemaError(
                "the tool's properties are not an object".into(),
            ));
        };
        let response_props = self
            .expanded
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let overlap: Vec<&String> = response_props
            .keys()
            .filter(|k| props.contains_key(*k))
            .collect();
        if !overlap.is_empty() {
            return Err(ResponseSchemaError(format!(
                "response_schema fields {overlap:?} collide with tool fields"
            )));
        }
        props.extend(response_props.clone());
        let required = merged
            .entry("required")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(required) = required {
            for r in required_of(&self.expanded) {
                if !required.iter().any(|x| x == r) {
                    required.push(Value::String(r.to_string()));
                }
            }
        }
        if self.expanded.get("additionalProperties") == Some(&Value::Bool(false)) {
            merged.insert("additionalProperties".into(), Value::Bool(false));
        }
        Ok(Value::Object(merged))
    }

    /// Splits model arguments into the tool's own and the response part,
    /// validating the response part.
    pub fn split(
        &self,
        mut args: Map<String, Value>,
    ) -> Result<(Arguments, Arguments), ResponseSchemaError> {
        let mut response = Map::new();
        for name in self.field_names() {
            if let Some(v) = args.remove(&name) {
                response.insert(name, v);
            }
        }
        let response = Value::Object(response);
        let validator = jsonschema::draft202012::new(&self.original)
            .map_err(|e| ResponseSchemaError(format!("Invalid response_schema: {e}")))?;
        if let Some(e) = validator.iter_errors(&response).next() {
            return Err(ResponseSchemaError(format!(
                "response_schema validation failed: {e}"
            )));
        }
        let Value::Object(response) = response else {
            return Ok((args, Map::new()));
        };
        Ok((args, response))
    }
}

fn required_of(obj: &Map<String, Value>) -> impl Iterator<Item = &str> {
    obj.get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// `node` with local `#/$defs/…` references replaced by their definitions
/// (a recursive reference becomes a shallow `{type, description}`) and the
/// `$defs` themselves dropped, so providers that resolve no references
/// still see the whole shape.
fn expand_refs(node: &Value, defs: &Map<String, Value>, visiting: &BTreeSet<String>) -> Value {
    let Value::Object(obj) = node else {
        return node.clone();
    };
    if let Some(name) = obj
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        && let Some(def) = defs.get(name)
    {
        if visiting.contains(name) {
            let mut shallow = Map::new();
            shallow.insert(
                "type".into(),
                def.get("type")
                    .cloned()
                    .unwrap_or_else(|| Value::String("object".into())),
            );
            if let Some(d) = def.get("description") {
                shallow.insert("description".into(), d.clone());
            }
            return Value::Object(shallow);
        }
        let mut inner = visiting.clone();
        inner.insert(name.to_string());
        let mut expanded = expand_refs(def, defs, &inner);
        let siblings: Map<String, Value> = obj
            .iter()
            .filter(|(k, _)| k.as_str() != "$ref")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let (Value::Object(e), Value::Object(s)) = (
            &mut expanded,
            expand_refs(&Value::Object(siblings), defs, &inner),
        ) {
            e.extend(s);
        }
        return expanded;
    }
    let mut out = obj.clone();
    out.remove("$defs");
    if let Some(Value::Object(props)) = out.get_mut("properties") {
        for v in props.values_mut() {
            *v = expand_refs(v, defs, visiting);
        }
    }
    for k in ["items", "additionalProperties", "not"] {
        if let Some(v) = out.get_mut(k)
            && v.is_object()
        {
            *v = expand_refs(v, defs, visiting);
        }
    }
    for k in ["allOf", "anyOf", "oneOf", "prefixItems"] {
        if let Some(Value::Array(items)) = out.get_mut(k) {
            for v in items.iter_mut() {
                *v = expand_refs(v, defs, visiting);
            }
        }
    }
    Value::Object(out)
}

/// A tool with structured output: the inner tool's parameters plus the
/// response schema's; calls are split and the response part validated.
pub struct WithResponseSchema {
    inner: Arc<dyn Tool>,
    schema: ResponseSchema,
    parameters: Value,
}

impl WithResponseSchema {
    /// `inner` with `schema` merged in; fails when the response fields
    /// collide with the tool's own.
    pub fn new(inner: Arc<dyn Tool>, schema: ResponseSchema) -> Result<Self, ResponseSchemaError> {
        let parameters = schema.merge_into(inner.parameters_schema())?;
        Ok(Self {
            inner,
            schema,
            parameters,
        })
    }

    /// The response schema.
    pub fn response_schema(&self) -> &ResponseSchema {
        &self.schema
    }
}

#[async_trait]
impl Tool for WithResponseSchema {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn kind(&self) -> &str {
        self.inner.kind()
    }
    fn action_kind(&self) -> &str {
        self.inner.action_kind()
    }
    fn observation_kind(&self) -> &str {
        self.inner.observation_kind()
    }
    fn description(&self) -> String {
        self.inner.description()
    }
    fn parameters_schema(&self) -> Value {
        self.parameters.clone()
    }
    fn annotations(&self) -> ToolAnnotations {
        self.inner.annotations()
    }
    fn parse_action(&self, args: Map<String, Value>) -> Result<Value, ToolError> {
        let (own, _response) = self
            .schema
            .split(args)
            .map_err(|e| ToolError::InvalidArguments(e.0))?;
        self.inner.parse_action(own)
    }
    async fn execute(&self, action: Value, ctx: &ToolCallContext) -> Result<Value, ToolError> {
        self.inner.execute(action, ctx).await
    }
    fn observation_to_llm(&self, observation: &Value) -> Vec<Content> {
        self.inner.observation_to_llm(observation)
    }
    async fn close(&self) {
        self.inner.close().await;
    }
    fn prompt_guidance(&self) -> Option<&str> {
        self.inner.prompt_guidance()
    }
    fn definition(&self) -> ToolDefinition {
        self.inner.definition()
    }
}

/// The validated response of the last accepted call of `tool_name` in
/// `events` (the reference's `parse_last_response`): `None` when the tool
/// was not called or the call carried no response fields.
pub fn structured_output(
    events: &[Event],
    tool_name: &str,
    schema: &ResponseSchema,
) -> Result<Option<Value>, ResponseSchemaError> {
    let call = events.iter().rev().find_map(|e| match &e.body {
        EventBody::Action(a) if a.tool_name == tool_name && a.action.is_some() => {
            Some(a.tool_call.arguments.clone())
        }
        _ => None,
    });
    let Some(arguments) = call else {
        return Ok(None);
    };
    let args: Map<String, Value> = serde_json::from_str(&arguments)
        .map_err(|e| ResponseSchemaError(format!("the call's arguments are not JSON: {e}")))?;
    let (_, response) = schema.split(args)?;
    Ok((!response.is_empty()).then_some(Value::Object(response)))
}

#[cfg(test)]
#[path = "response_schema_tests.rs"]
mod tests;

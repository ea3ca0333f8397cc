//! JSON schemas of tool arguments generated from Rust types, so a custom
//! tool's `parameters_schema` is one line.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// The JSON schema of `T` as a tool's parameters: an inline object schema
/// (no `$schema`, `title` or shared definitions), doc comments of the fields
/// as their descriptions.
///
/// ```
/// use openhands::parameters_schema;
///
/// #[derive(schemars::JsonSchema)]
/// struct Greet {
///     /// Who to greet.
///     name: String,
/// }
///
/// let schema = parameters_schema::<Greet>();
/// assert_eq!(schema["type"], "object");
/// assert_eq!(schema["properties"]["name"]["description"], "Who to greet.");
/// assert_eq!(schema["required"][0], "name");
/// ```
pub fn parameters_schema<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft07().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Value::Object(map) = &mut schema {
        map.remove("title");
        map.remove("$schema");
        map.remove("definitions");
    }
    schema
}

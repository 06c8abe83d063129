//! `.tf.json` files, in Terraform's JSON syntax: a top-level object whose `variable`,
//! `output`, `resource`, `module` and `terraform` properties hold the blocks (each an object
//! keyed by label, or an array of such objects).

use serde_json::{Map, Value};

use super::hcl::namespace_of;
use super::{
    DocsError, ModuleCall, ModuleInput, ModuleOutput, ModulePart, ModuleResource,
    ProviderDependency,
};

/// Adds what the `.tf.json` file `name` declares to `part`.
pub(super) fn read(name: &str, text: &str, part: &mut ModulePart) -> Result<(), DocsError> {
    // serde_json stops at 128 levels of nesting, so hostile input cannot overflow the stack.
    let root: Value = serde_json::from_str(text).map_err(|e| DocsError::Syntax {
        file: name.to_owned(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    let invalid = |why: &str| DocsError::Invalid {
        file: name.to_owned(),
        line: 1,
        why: why.to_owned(),
    };
    let Value::Object(root) = root else {
        return Err(invalid("the file is not a JSON object"));
    };
    for (name, body) in labelled(root.get("variable")) {
        part.inputs.push(input(name, body));
    }
    for (name, body) in labelled(root.get("output")) {
        part.outputs.push(ModuleOutput {
            name: name.to_owned(),
            description: string(body, "description"),
            sensitive: body.get("sensitive").and_then(Value::as_bool) == Some(true),
        });
    }
    for (type_, by_name) in labelled(root.get("resource")) {
        for name in by_name.keys() {
            part.resources.push(ModuleResource {
                name: name.to_owned(),
                type_: type_.to_owned(),
            });
        }
    }
    for (name, body) in labelled(root.get("module")) {
        part.dependencies.push(ModuleCall {
            name: name.to_owned(),
            source: string(body, "source"),
            version: string(body, "version"),
        });
    }
    for terraform in objects(root.get("terraform")) {
        if let Some(version) = terraform.get("required_version") {
            part.required_version = Some(text_of(version));
        }
        for providers in objects(terraform.get("required_providers")) {
            for (name, value) in providers {
                let mut dependency = ProviderDependency {
                    name: name.clone(),
                    ..Default::default()
                };
                match value {
                    Value::Object(object) => {
                        dependency.source = string(object, "source");
                        dependency.version = string(object, "version");
                    }
                    other => dependency.version = text_of(other),
                }
                dependency.namespace = namespace_of(&dependency.source);
                part.provider_dependencies.push(dependency);
            }
        }
    }
    Ok(())
}

fn input(name: &str, body: &Map<String, Value>) -> ModuleInput {
    let default = body.get("default").map(Value::to_string);
    ModuleInput {
        name: name.to_owned(),
        type_: string(body, "type"),
        description: string(body, "description"),
        required: default.is_none(),
        default,
        sensitive: body.get("sensitive").and_then(Value::as_bool) == Some(true),
        nullable: body.get("nullable").and_then(Value::as_bool) != Some(false),
    }
}

/// A block property's objects: itself when it is one, its items when it is an array.
fn objects(value: Option<&Value>) -> Vec<&Map<String, Value>> {
    match value {
        Some(Value::Object(object)) => vec![object],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_object).collect(),
        _ => Vec::new(),
    }
}

/// The (label, body) pairs of a block property: `{"name": {...}}` or `[{"name": {...}}]`.
fn labelled(value: Option<&Value>) -> Vec<(&str, &Map<String, Value>)> {
    let mut pairs = Vec::new();
    for object in objects(value) {
        for (label, body) in object {
            for body in objects(Some(body)) {
                pairs.push((label.as_str(), body));
            }
        }
    }
    pairs
}

fn string(body: &Map<String, Value>, key: &str) -> String {
    body.get(key).map(text_of).unwrap_or_default()
}

/// A string's content, or any other value as JSON.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

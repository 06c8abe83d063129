//! `.tf` files, parsed with `hcl-edit` (through `hcl-rs`), whose parser bounds its own nesting
//! depth, so hostile input gets a parse error rather than a stack overflow.

use hcl::edit::expr::{Expression, ObjectKey};
use hcl::edit::parser::parse_body;
use hcl::edit::structure::{Block, Body};
use hcl::edit::Span;
use hcl::eval::Evaluate;

use super::{
    DocsError, ModuleCall, ModuleInput, ModuleOutput, ModulePart, ModuleResource,
    ProviderDependency,
};

/// Adds what the `.tf` file `name` (its path in the archive) declares to `part`.
pub(super) fn read(name: &str, text: &str, part: &mut ModulePart) -> Result<(), DocsError> {
    let body = parse_body(text).map_err(|e| DocsError::Syntax {
        file: name.to_owned(),
        line: e.location().line(),
        column: e.location().column(),
        message: e.message().to_owned(),
    })?;
    let source = Source { text };
    for block in body.blocks() {
        let labels: Vec<&str> = block.labels.iter().map(|l| l.as_str()).collect();
        match (block.ident.as_str(), labels.as_slice()) {
            ("variable", [label]) => part.inputs.push(source.input(label, &block.body)),
            ("output", [label]) => part.outputs.push(ModuleOutput {
                name: (*label).to_owned(),
                description: source.string(&block.body, "description"),
                sensitive: boolean(&block.body, "sensitive").unwrap_or(false),
            }),
            ("resource", [type_, label]) => part.resources.push(ModuleResource {
                name: (*label).to_owned(),
                type_: (*type_).to_owned(),
            }),
            ("module", [label]) => part.dependencies.push(ModuleCall {
                name: (*label).to_owned(),
                source: source.string(&block.body, "source"),
                version: source.string(&block.body, "version"),
            }),
            ("terraform", []) => source.terraform(block, part),
            ("variable" | "output" | "resource" | "module", _) => {
                return Err(DocsError::Invalid {
                    file: name.to_owned(),
                    line: source.line(block.span()),
                    why: format!(
                        "a {} block with {} label(s)",
                        block.ident.as_str(),
                        labels.len()
                    ),
                });
            }
            _ => {}
        }
    }
    Ok(())
}

/// The file being read, to quote expressions as written.
struct Source<'a> {
    text: &'a str,
}

impl Source<'_> {
    fn input(&self, name: &str, body: &Body) -> ModuleInput {
        let default = expr(body, "default").map(|e| self.value(e));
        ModuleInput {
            name: name.to_owned(),
            type_: expr(body, "type").map_or_else(String::new, |e| self.written(e)),
            description: self.string(body, "description"),
            required: default.is_none(),
            default,
            sensitive: boolean(body, "sensitive").unwrap_or(false),
            nullable: boolean(body, "nullable").unwrap_or(true),
        }
    }

    /// `terraform { required_version = ..., required_providers { ... } }`
    fn terraform(&self, block: &Block, part: &mut ModulePart) {
        if expr(&block.body, "required_version").is_some() {
            part.required_version = Some(self.string(&block.body, "required_version"));
        }
        for providers in block.body.get_blocks("required_providers") {
            for attribute in providers.body.attributes() {
                let mut dependency = ProviderDependency {
                    name: attribute.key.as_str().to_owned(),
                    ..Default::default()
                };
                match &attribute.value {
                    // The legacy form: `aws = ">= 5.0"`.
                    Expression::String(version) => dependency.version = version.value().clone(),
                    Expression::Object(object) => {
                        for (key, value) in object {
                            let key = match key {
                                ObjectKey::Ident(ident) => ident.as_str().to_owned(),
                                ObjectKey::Expression(Expression::String(s)) => s.value().clone(),
                                ObjectKey::Expression(_) => continue,
                            };
                            let text = self.text_of(value.expr());
                            match key.as_str() {
                                "source" => dependency.source = text,
                                "version" => dependency.version = text,
                                _ => {}
                            }
                        }
                    }
                    other => dependency.version = self.written(other),
                }
                dependency.namespace = namespace_of(&dependency.source);
                part.provider_dependencies.push(dependency);
            }
        }
    }

    /// A string attribute's value, or its expression as written when it is not a plain string.
    fn string(&self, body: &Body, key: &str) -> String {
        expr(body, key).map_or_else(String::new, |e| self.text_of(e))
    }

    fn text_of(&self, e: &Expression) -> String {
        match e {
            Expression::String(s) => s.value().clone(),
            other => self.written(other),
        }
    }

    /// A default as JSON when it is a constant, else as written.
    fn value(&self, e: &Expression) -> String {
        let expression = hcl::Expression::from(e.clone());
        match expression.evaluate(&hcl::eval::Context::new()) {
            Ok(value) => serde_json::to_string(&value).unwrap_or_else(|_| self.written(e)),
            Err(_) => self.written(e),
        }
    }

    /// The expression's text in the file.
    fn written(&self, e: &Expression) -> String {
        e.span()
            .and_then(|span| self.text.get(span))
            .map(|s| s.trim().to_owned())
            .unwrap_or_default()
    }

    /// The line a span starts on.
    fn line(&self, span: Option<std::ops::Range<usize>>) -> usize {
        let start = span.map_or(0, |s| s.start);
        self.text
            .get(..start)
            .map_or(1, |before| before.matches('\n').count() + 1)
    }
}

fn expr<'a>(body: &'a Body, key: &str) -> Option<&'a Expression> {
    body.get_attribute(key).map(|a| &a.value)
}

fn boolean(body: &Body, key: &str) -> Option<bool> {
    match expr(body, key)? {
        Expression::Bool(b) => Some(*b.value()),
        _ => None,
    }
}

/// `hashicorp` of `hashicorp/aws` or `registry.example.com/hashicorp/aws`.
pub(super) fn namespace_of(source: &str) -> String {
    let parts: Vec<&str> = source.split('/').collect();
    match parts.as_slice() {
        [.., namespace, _type] => (*namespace).to_owned(),
        _ => String::new(),
    }
}

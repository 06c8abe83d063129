"""Prints the environment each Lambda function of a SAM template gets, as JSON.

    python tests/tools/function_env.py TEMPLATE [--param Name=Value ...]

The template is read offline (with cfn-lint's decoder, like template_cycles.py) and resolved
the way CloudFormation would for the given parameter values (the parameters' defaults
otherwise). The output is one object per `AWS::Serverless::Function` that exists under those
values (its `Condition` holds), keyed by logical ID, with sorted keys:

    {"ModulesFunction": {"TFREG_TABLE": "tfreg-table", ..., "__code_uri__": "build/..."}}

- Globals.Function is merged under each function's own properties as SAM merges it (maps
  key by key, the function's value winning), so the variables are the ones the function
  really gets. `__code_uri__` is the function's CodeUri: which binary runs with them;
  `__routes__` its HTTP API routes, as space-separated `METHOD:PATH` words;
  `__s3_keys__` the object keys its S3 events take, as space-separated `PREFIX*SUFFIX`
  words (the test stack delivers each key's events to the functions it matches).
- Conditions and `Fn::If` are evaluated; `AWS::NoValue` drops the variable.
- Everything the template cannot know offline is a fixed placeholder: pseudo parameters
  (account 123456789012, region us-east-1, partition aws, stack name tfreg), `Ref` to a
  resource (`tfreg-` and its logical ID in kebab case: `!Ref Table` is `tfreg-table`),
  `Fn::GetAtt` (an ARN for `Arn`, else `tfreg-table.Attribute`), and any dynamic reference
  `{{resolve:...}}` (a fixed 64-character alphanumeric string, the length of the URL
  signing secret the template generates).
- `Fn::Sub`, `Fn::Join`, `Fn::Select`, `Fn::Split` and `Fn::FindInMap` are computed; any
  other intrinsic function is an error rather than a guess.

The same resolver serves template_policy.py (`Template`, `NO_VALUE`).
"""

import argparse
import json
import re
import sys

from cfnlint.decode import decode

ACCOUNT_ID = "123456789012"
REGION = "us-east-1"
PSEUDO_PARAMETERS = {
    "AWS::AccountId": ACCOUNT_ID,
    "AWS::Region": REGION,
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": "tfreg",
    "AWS::StackId": f"arn:aws:cloudformation:{REGION}:{ACCOUNT_ID}:stack/tfreg/00000000-0000-0000-0000-000000000000",
    "AWS::NotificationARNs": [],
}
# What a dynamic reference ({{resolve:secretsmanager:...}}, {{resolve:ssm:...}}) stands for.
DYNAMIC_REFERENCE_PLACEHOLDER = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ01"
assert len(DYNAMIC_REFERENCE_PLACEHOLDER) == 64 and DYNAMIC_REFERENCE_PLACEHOLDER.isalnum()
DYNAMIC_REFERENCE = re.compile(r"\{\{resolve:[^{}]*\}\}")
SUB_VARIABLE = re.compile(r"\$\{([^}]*)\}")


class _NoValue:
    """AWS::NoValue: the property (or list item) is left out."""

    def __repr__(self):
        return "AWS::NoValue"


NO_VALUE = _NoValue()


class TemplateError(Exception):
    pass


def kebab(name):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", name).lower()


def is_intrinsic(node):
    if not isinstance(node, dict) or len(node) != 1:
        return False
    key = next(iter(node))
    return key in ("Ref", "Condition") or key.startswith("Fn::")


def merge_globals(global_value, local_value):
    """SAM's Globals merge: maps merge key by key, lists concatenate, anything else (an
    intrinsic function included) is replaced by the local value."""
    if isinstance(global_value, dict) and isinstance(local_value, dict):
        if is_intrinsic(global_value) or is_intrinsic(local_value):
            return local_value
        merged = dict(global_value)
        for key, value in local_value.items():
            merged[key] = merge_globals(global_value[key], value) if key in global_value else value
        return merged
    if isinstance(global_value, list) and isinstance(local_value, list):
        return global_value + local_value
    return local_value


class Template:
    """A template with parameter values: conditions, intrinsic functions and Globals resolved."""

    def __init__(self, path, overrides=None):
        self.path = path
        document, matches = decode(path)
        if matches:
            raise TemplateError(f"{path}: cannot parse: {matches}")
        self.document = document
        self.resources = document.get("Resources") or {}
        self.parameters = self._parameter_values(overrides or {})
        self._conditions = {}

    def _parameter_values(self, overrides):
        declared = self.document.get("Parameters") or {}
        unknown = sorted(set(overrides) - set(declared))
        if unknown:
            raise TemplateError(f"{self.path}: no such parameter: {', '.join(unknown)}")
        values = {}
        for name, spec in declared.items():
            if name in overrides:
                value = overrides[name]
            elif "Default" in spec:
                value = spec["Default"]
            else:
                raise TemplateError(f"{self.path}: parameter {name} has no default: pass --param {name}=...")
            value = str(value) if not isinstance(value, bool) else str(value).lower()
            allowed = spec.get("AllowedValues")
            if allowed is not None and value not in [str(a) for a in allowed]:
                raise TemplateError(f"{self.path}: {name}={value!r} is not one of {allowed}")
            pattern = spec.get("AllowedPattern")
            if pattern is not None and not re.fullmatch(pattern, value):
                raise TemplateError(f"{self.path}: {name}={value!r} does not match {pattern}")
            kind = str(spec.get("Type", "String"))
            if kind == "CommaDelimitedList" or kind.startswith("List<"):
                values[name] = value.split(",") if value else []
            else:
                values[name] = value
        return values

    # ---- conditions ------------------------------------------------------------------------
    def condition(self, name):
        if name not in self._conditions:
            conditions = self.document.get("Conditions") or {}
            if name not in conditions:
                raise TemplateError(f"{self.path}: no such condition: {name}")
            self._conditions[name] = None  # a cycle would recurse forever
            self._conditions[name] = bool(self._evaluate(conditions[name]))
        if self._conditions[name] is None:
            raise TemplateError(f"{self.path}: condition {name} depends on itself")
        return self._conditions[name]

    def _evaluate(self, node):
        if isinstance(node, dict) and len(node) == 1:
            (key, args), = node.items()
            if key == "Condition":
                return self.condition(args)
            if key == "Fn::Equals":
                left, right = (self.resolve(a) for a in args)
                return str(left) == str(right) if not isinstance(left, list) else left == right
            if key == "Fn::Not":
                return not self._evaluate(args[0])
            if key == "Fn::And":
                return all(self._evaluate(a) for a in args)
            if key == "Fn::Or":
                return any(self._evaluate(a) for a in args)
        raise TemplateError(f"{self.path}: not a condition: {node!r}")

    def exists(self, logical_id):
        condition = self.resources[logical_id].get("Condition")
        return condition is None or self.condition(condition)

    # ---- intrinsic functions -----------------------------------------------------------------
    def ref(self, name):
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in self.parameters:
            return self.parameters[name]
        if name in PSEUDO_PARAMETERS:
            return PSEUDO_PARAMETERS[name]
        if name in self.resources:
            return f"tfreg-{kebab(name)}"
        raise TemplateError(f"{self.path}: Ref to nothing: {name}")

    def get_att(self, name, attribute):
        if name not in self.resources:
            raise TemplateError(f"{self.path}: Fn::GetAtt of nothing: {name}")
        physical = self.ref(name)
        if attribute != "Arn":
            return f"{physical}.{attribute}"
        kind = self.resources[name].get("Type", "")
        service = kind.split("::")[1].lower() if kind.count("::") == 2 else "unknown"
        if kind == "AWS::S3::Bucket":
            return f"arn:aws:s3:::{physical}"
        if kind == "AWS::DynamoDB::Table":
            return f"arn:aws:dynamodb:{REGION}:{ACCOUNT_ID}:table/{physical}"
        if kind == "AWS::Logs::LogGroup":
            return f"arn:aws:logs:{REGION}:{ACCOUNT_ID}:log-group:{physical}:*"
        return f"arn:aws:{service}:{REGION}:{ACCOUNT_ID}:{physical}"

    def _sub(self, text, variables):
        def value(match):
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                resolved = variables[name]
            elif "." in name and name.split(".", 1)[0] in self.resources:
                resolved = self.get_att(*name.split(".", 1))
            else:
                resolved = self.ref(name)
            if not isinstance(resolved, str):
                raise TemplateError(f"{self.path}: Fn::Sub variable {name} is not a string: {resolved!r}")
            return resolved

        return SUB_VARIABLE.sub(value, text)

    def resolve(self, node):
        """The value of `node` under the parameter values (NO_VALUE for AWS::NoValue)."""
        if isinstance(node, list):
            items = (self.resolve(item) for item in node)
            return [item for item in items if item is not NO_VALUE]
        if isinstance(node, str):
            return DYNAMIC_REFERENCE.sub(DYNAMIC_REFERENCE_PLACEHOLDER, node)
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            (key, args), = node.items()
            if key == "Ref":
                return self.ref(args)
            if key == "Fn::If":
                name, when_true, when_false = args
                return self.resolve(when_true if self.condition(name) else when_false)
            if key == "Fn::Sub":
                text, variables = (args, {}) if isinstance(args, str) else args
                variables = {k: self.resolve(v) for k, v in variables.items()}
                return self.resolve(self._sub(text, variables))
            if key == "Fn::GetAtt":
                name, attribute = args.split(".", 1) if isinstance(args, str) else args
                return self.get_att(name, attribute)
            if key == "Fn::Join":
                delimiter, items = args
                return delimiter.join(str(i) for i in self.resolve(items))
            if key == "Fn::Select":
                index, items = args
                return self.resolve(items)[int(self.resolve(index))]
            if key == "Fn::Split":
                delimiter, text = args
                return self.resolve(text).split(delimiter)
            if key == "Fn::FindInMap":
                mapping, first, second = (self.resolve(a) for a in args)
                return self.resolve(self.document["Mappings"][mapping][first][second])
            if key.startswith("Fn::") or key == "Condition":
                raise TemplateError(f"{self.path}: cannot resolve {key} offline: {node!r}")
        resolved = {}
        for key, value in node.items():
            value = self.resolve(value)
            if value is not NO_VALUE:
                resolved[key] = value
        return resolved

    # ---- resources ---------------------------------------------------------------------------
    def properties(self, logical_id):
        """A resource's properties, Globals merged in for serverless resources, resolved."""
        resource = self.resources[logical_id]
        properties = resource.get("Properties") or {}
        kind = resource.get("Type", "")
        if kind.startswith("AWS::Serverless::"):
            globals_ = (self.document.get("Globals") or {}).get(kind.split("::")[2]) or {}
            properties = merge_globals(globals_, properties)
        return self.resolve(properties)

    def existing(self, kind):
        """Logical IDs of the resources of a type that exist under the parameter values."""
        return sorted(
            logical_id
            for logical_id, resource in self.resources.items()
            if resource.get("Type") == kind and self.exists(logical_id)
        )


def env_value(logical_id, name, value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise TemplateError(f"{logical_id}: environment variable {name} is not a string: {value!r}")


def code_uri(properties):
    uri = properties.get("CodeUri")
    if isinstance(uri, dict):
        return f"s3://{uri.get('Bucket')}/{uri.get('Key')}"
    return uri


def routes(properties):
    """The HTTP API routes a function serves, as `METHOD:PATH` words (sorted)."""
    found = []
    for event in (properties.get("Events") or {}).values():
        if event.get("Type") != "HttpApi":
            continue
        props = event.get("Properties") or {}
        found.append(f"{props.get('Method', 'ANY').upper()}:{props.get('Path', '')}")
    return sorted(found)


def s3_keys(properties):
    """The object keys a function's S3 events take, as `PREFIX*SUFFIX` words (sorted)."""
    found = set()
    for event in (properties.get("Events") or {}).values():
        if event.get("Type") != "S3":
            continue
        rules = (((event.get("Properties") or {}).get("Filter") or {}).get("S3Key") or {}).get("Rules") or []
        by_name = {str(rule.get("Name", "")).lower(): str(rule.get("Value", "")) for rule in rules}
        found.add(f"{by_name.get('prefix', '')}*{by_name.get('suffix', '')}")
    return sorted(found)


def function_environments(template):
    out = {}
    for logical_id in template.existing("AWS::Serverless::Function"):
        properties = template.properties(logical_id)
        variables = (properties.get("Environment") or {}).get("Variables") or {}
        env = {name: env_value(logical_id, name, value) for name, value in variables.items()}
        env["__code_uri__"] = code_uri(properties)
        env["__routes__"] = " ".join(routes(properties))
        env["__s3_keys__"] = " ".join(s3_keys(properties))
        out[logical_id] = env
    return out


def parse_param(text):
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected Name=Value, got {text!r}")
    return name, value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("template")
    parser.add_argument("--param", action="append", type=parse_param, default=[], metavar="Name=Value")
    args = parser.parse_args(argv)
    try:
        template = Template(args.template, dict(args.param))
        environments = function_environments(template)
    except TemplateError as e:
        sys.exit(f"function_env: {e}")
    json.dump(environments, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

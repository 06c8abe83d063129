"""Fails if template.yaml, once SAM has transformed it, has a circular dependency.

cfn-lint and `sam validate` check the template as written; CloudFormation refuses a stack
whose transformed resources depend on each other in a cycle (for instance a bucket whose
event notifications need a function that itself references the bucket). This translates the
template offline with SAM's own translator and looks for cycles among Ref, Fn::GetAtt,
Fn::Sub and DependsOn.
"""

import os
import re
import sys

from cfnlint.decode import decode
from samtranslator.translator.transform import transform
from samtranslator.public.exceptions import InvalidDocumentException


class NoManagedPolicies:
    """The translator asks for AWS managed policy ARNs; none are used by name here."""

    def load(self):
        return {}

    def get(self, name):
        return None


def refs(node, resources, found):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref" and isinstance(value, str) and value in resources:
                found.add(value)
            elif key == "Fn::GetAtt":
                target = value[0] if isinstance(value, list) else str(value).split(".")[0]
                if target in resources:
                    found.add(target)
            elif key == "Fn::Sub":
                text = value[0] if isinstance(value, list) else value
                for name in re.findall(r"\$\{([A-Za-z0-9]+)(?:\.[A-Za-z0-9.]+)?\}", str(text)):
                    if name in resources:
                        found.add(name)
                if isinstance(value, list):
                    refs(value[1], resources, found)
            else:
                refs(value, resources, found)
    elif isinstance(node, list):
        for item in node:
            refs(item, resources, found)


def main(path):
    # The translator needs a region for ARNs; nothing is sent anywhere.
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    template, matches = decode(path)
    if matches:
        sys.exit(f"{path}: cannot parse: {matches}")
    # `sam package` replaces local code paths with S3 locations before the transform.
    for resource in template.get("Resources", {}).values():
        properties = resource.get("Properties") or {}
        if resource.get("Type") == "AWS::Serverless::Function" and "CodeUri" in properties:
            properties["CodeUri"] = "s3://packaged/code.zip"
    parameters = {"AWS::Region": "us-east-1", "AWS::AccountId": "123456789012", "AWS::Partition": "aws"}
    try:
        output = transform(template, parameters, NoManagedPolicies())
    except InvalidDocumentException as e:
        sys.exit(f"{path}: SAM cannot transform it: {e}")
    resources = output.get("Resources", {})
    graph = {}
    for name, resource in resources.items():
        deps = set()
        refs({k: v for k, v in resource.items() if k != "DependsOn"}, resources, deps)
        depends_on = resource.get("DependsOn", [])
        deps.update([depends_on] if isinstance(depends_on, str) else depends_on)
        graph[name] = deps

    state = {}
    path_stack = []

    def visit(node):
        state[node] = "visiting"
        path_stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "visiting":
                cycle = path_stack[path_stack.index(dep):] + [dep]
                sys.exit(f"{path}: circular dependency after the SAM transform: {' -> '.join(cycle)}")
            if dep not in state:
                visit(dep)
        path_stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    print(f"{path}: no circular dependencies among {len(graph)} transformed resources")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "template.yaml")

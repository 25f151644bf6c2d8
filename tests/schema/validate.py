#!/usr/bin/env python3
"""Checks JSON files against schema/summary.schema.json with the part of JSON Schema 2020-12
that the schema uses (type, const, enum, minimum, required, properties, additionalProperties,
items, oneOf, $ref into $defs), so that the test needs no package beyond Python.

    validate.py SCHEMA FILE...     exit 0 if every file is valid, else 1 with the reasons
"""
import json
import sys

TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def errors(schema, value, root, where):
    """The reasons value does not match schema, as a list of strings."""
    if "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        return errors(root["$defs"][name], value, root, where)
    out = []
    if "oneOf" in schema:
        matches = [s for s in schema["oneOf"] if not errors(s, value, root, where)]
        if len(matches) != 1:
            best = min((errors(s, value, root, where) for s in schema["oneOf"]), key=len)
            return best or [f"{where}: matches {len(matches)} of oneOf"]
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[t](value) for t in types):
            return [f"{where}: {json.dumps(value)[:40]} is not {'/'.join(types)}"]
    if "const" in schema and value != schema["const"]:
        out.append(f"{where}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "minimum" in schema and TYPES["number"](value) and value < schema["minimum"]:
        out.append(f"{where}: {value} is below {schema['minimum']}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for k in schema.get("required", []):
            if k not in value:
                out.append(f"{where}: no key '{k}'")
        for k, v in value.items():
            if k in props:
                out += errors(props[k], v, root, f"{where}.{k}")
            elif schema.get("additionalProperties") is False:
                out.append(f"{where}: key '{k}' is not in the schema")
            elif isinstance(schema.get("additionalProperties"), dict):
                out += errors(schema["additionalProperties"], v, root, f"{where}.{k}")
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            out += errors(schema["items"], v, root, f"{where}[{i}]")
    return out


def main():
    schema = json.load(open(sys.argv[1]))
    bad = 0
    for path in sys.argv[2:]:
        found = errors(schema, json.load(open(path)), schema, "$")
        for e in found[:20]:
            print(f"{path}: {e}")
        bad += bool(found)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

"""Structural validation of Kubernetes objects against the API server's OpenAPI schema.

The schemas are the ones ``kubernetes-validate`` ships (JSON Schema converted from each release's
OpenAPI document, one directory per Kubernetes minor, in a lenient and a ``strict`` variant that
forbids unknown fields). They are compiled to Python by ``fastjsonschema``, one validator per kind and
apiVersion, with only the definitions that kind reaches: a pod validates in about 50 µs, where the
interpreting ``jsonschema`` validator takes 0.7 ms. Those validators say only *whether* an object is
valid; an object that is not is checked again by a slower variant that says where and why, compiled
the first time one is needed.

What the API server's decoder would refuse (a wrong type, a value outside an enum) is an
:class:`ObjectError` naming the JSON path. An unknown field is returned as a warning, as ``kubectl``
does by default. The schemas' ``required`` lists are not used: they mark every field Go serialises
without ``omitempty`` (all of ``status.nodeInfo``, for one), not what the server refuses; the fields the
server does require are checked with its other rules in :mod:`.validation`. The schemas begin at
Kubernetes 1.25; apiVersions that release no longer serves (``extensions/v1beta1`` ReplicaSets,
``policy/v1beta1`` PodDisruptionBudgets, ...) are checked against their successor's schema.
"""

from __future__ import annotations

import copy
import importlib.metadata
import importlib.util
import json
import os
import py_compile
import re
from collections.abc import Callable
from functools import cache, partial
from pathlib import Path
from typing import Any

import fastjsonschema

from ..errors import ObjectError, UserError
from .fields import describe

# The schemas are data files of the package; importing it would cost 0.1 s of jsonschema for nothing.
_PACKAGE = importlib.util.find_spec("kubernetes_validate")
SCHEMA_ROOT = Path(next(iter(_PACKAGE.submodule_search_locations or ()))) / "kubernetes-json-schema" if _PACKAGE else Path()
_VALIDATE_VERSION = importlib.metadata.version("kubernetes-validate")
# The apiVersion whose schema checks a kind when the requested release no longer has the one in use.
SUCCESSORS: dict[str, str] = {
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "StorageClass": "storage.k8s.io/v1",
    "CSINode": "storage.k8s.io/v1",
    "PodDisruptionBudget": "policy/v1",
    "PriorityClass": "scheduling.k8s.io/v1",
}
MAX_UNKNOWN_FIELDS = 20  # per object; more are counted, not named
_DIR = re.compile(r"^v(\d+)\.(\d+)\.\d+-local$")
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?$")
_REF = re.compile(r'"\$ref": "[^"#]*#/\$defs/')
_FORMAT_LOCALS = re.compile(r'"((?:[^"\\{}]|\{\w+\})*)"\.format\(\*\*locals\(\)\)')

Validator = Callable[[Any], Any]


def schema_versions() -> list[tuple[int, int]]:
    """The Kubernetes minors the installed ``kubernetes-validate`` has schemas for, oldest first."""
    found = (_DIR.match(p.name) for p in SCHEMA_ROOT.iterdir())
    return sorted((int(m.group(1)), int(m.group(2))) for m in found if m)


def resolve_version(requested: str | None, *, clamp: bool = False) -> tuple[int, int]:
    """``--kubernetes-version``: ``None`` or ``latest`` is the newest schema.

    With ``clamp`` (a version read from an API server), a release older or newer than the schemas uses
    the nearest one; otherwise it is an error naming the range.
    """
    versions = schema_versions()
    if requested is None or requested == "latest":
        return versions[-1]
    m = _VERSION.match(requested.strip())
    if not m:
        raise UserError(f"--kubernetes-version: {requested!r} is not a Kubernetes version such as 1.26")
    wanted = (int(m.group(1)), int(m.group(2)))
    if wanted in versions:
        return wanted
    if clamp:
        return versions[0] if wanted < versions[0] else versions[-1]
    first, last = versions[0], versions[-1]
    raise UserError(
        f"--kubernetes-version: no schema for Kubernetes {wanted[0]}.{wanted[1]}; "
        f"kubernetes-validate {_VALIDATE_VERSION} has "
        f"{first[0]}.{first[1]} to {last[0]}.{last[1]}"
    )


class OpenAPIValidator:
    """Checks objects against one Kubernetes release's schemas (compiled on first use per kind)."""

    def __init__(self, version: tuple[int, int]) -> None:
        self.version = version
        self._schema_api_versions: dict[tuple[str, str], str | None] = {}

    @property
    def version_text(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"

    def check(self, obj: dict[str, Any], what: str) -> list[str]:
        """Raise :class:`ObjectError` if the API server would refuse ``obj``; return its unknown fields.

        ``what`` names the object (``Pod shop/web-1``) in the error.
        """
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if not isinstance(kind, str) or not isinstance(api_version, str):
            return []
        schema_api_version = self._schema_api_version(kind, api_version)
        if schema_api_version is None:
            return []
        successor = schema_api_version != api_version
        if successor:
            obj = {**obj, "apiVersion": schema_api_version}
        validator = partial(_compiled, self.version, kind, schema_api_version)
        # A retired version's fields are not all its successor's (policy/v1beta1's podDisruptionsAllowed):
        # with a successor's schema only types are checked, unknown fields are not reported.
        if not successor and _passes(validator(strict=True, detailed=False), obj):
            return []
        if not _passes(validator(strict=False, detailed=False), obj):
            try:
                validator(strict=False, detailed=True)(obj)
            except fastjsonschema.JsonSchemaValueException as e:
                raise _object_error(what, e) from None
        return [] if successor else _unknown_fields(validator(strict=True, detailed=True), obj)

    def _schema_api_version(self, kind: str, api_version: str) -> str | None:
        """The apiVersion whose schema checks ``kind``: its own, or its successor's, or None (unchecked)."""
        key = (kind, api_version)
        if key not in self._schema_api_versions:
            found = None
            for candidate in (api_version, SUCCESSORS.get(kind)):
                if candidate and _schema_file(self.version, kind, candidate, strict=False).is_file():
                    found = candidate
                    break
            self._schema_api_versions[key] = found
        return self._schema_api_versions[key]


def _passes(validator: Validator, obj: dict[str, Any]) -> bool:
    try:
        validator(obj)
        return True
    except fastjsonschema.JsonSchemaValueException:
        return False


def _schema_dir(version: tuple[int, int], strict: bool) -> Path:
    return SCHEMA_ROOT / f"v{version[0]}.{version[1]}.0-local{'-strict' if strict else ''}"


def _schema_file(version: tuple[int, int], kind: str, api_version: str, strict: bool) -> Path:
    group, _, ver = api_version.rpartition("/")
    prefix = f"-{group.split('.')[0]}" if group else ""
    return _schema_dir(version, strict) / f"{kind.lower()}{prefix}-{ver}.json"


@cache
def _definitions(version: tuple[int, int], strict: bool) -> dict[str, Any]:
    with open(_schema_dir(version, strict) / "_definitions.json", encoding="utf-8") as f:
        return json.load(f)["$defs"]


@cache
def _compiled(version: tuple[int, int], kind: str, api_version: str, strict: bool, detailed: bool) -> Validator:
    """One kind's schema with the definitions it reaches, compiled (``detailed``: errors say where).

    The generated module is kept in the user's cache directory, so later runs import it (and its
    bytecode) instead of generating it again: 10 ms rather than 100 ms for a Pod.
    """
    variant = f"{'strict' if strict else 'lenient'}{'_detailed' if detailed else ''}"
    name = re.sub(r"\W", "_", f"{kind}_{api_version}_{variant}").lower()
    path = _cache_dir(version) / f"{name}.py"
    if not path.is_file():
        code = fastjsonschema.compile_to_code(_schema(version, kind, api_version, strict), detailed_exceptions=detailed)
        # Item paths are built for every list item as "…[{i}]".format(**locals()); an f-string builds
        # the same text without materialising locals(): a fifth of a pod's validation time.
        code = _FORMAT_LOCALS.sub(r'f"\1"', code)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(code, encoding="utf-8")
            tmp.replace(path)
            py_compile.compile(str(path), doraise=True)  # its bytecode too, whatever PYTHONDONTWRITEBYTECODE says
        except OSError:  # no writable cache: compile in memory
            namespace: dict[str, Any] = {}
            exec(compile(code, name, "exec"), namespace)  # noqa: S102 (code generated from the schema)
            return namespace["validate"]
    spec = importlib.util.spec_from_file_location(f"policy_scheduler_openapi_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.validate


def _cache_dir(version: tuple[int, int]) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    tag = f"kv{_VALIDATE_VERSION}-fjs{fastjsonschema.VERSION}-k{version[0]}.{version[1]}"
    return base / "policy-scheduler" / "openapi" / tag


def _schema(version: tuple[int, int], kind: str, api_version: str, strict: bool) -> dict[str, Any]:
    """The kind's schema with the definitions it reaches inlined as local ``$defs``."""
    with open(_schema_file(version, kind, api_version, strict), encoding="utf-8") as f:
        root = json.load(f)
    definitions = _definitions(version, strict)
    reached: dict[str, Any] = {}
    pending = _refs(root)
    while pending:
        name = pending.pop()
        if name not in reached:
            reached[name] = definitions[name]
            pending |= _refs(reached[name]) - reached.keys()
    schema = _trim({**root, "$defs": reached})
    schema.pop("$schema", None)
    schema.pop("$id", None)
    return json.loads(_REF.sub('"$ref": "#/$defs/', json.dumps(schema)))


def _refs(node: Any) -> set[str]:
    found: set[str] = set()
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            ref = x.get("$ref")
            if isinstance(ref, str):
                found.add(ref.rsplit("/", 1)[1])
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return found


def _trim(node: Any) -> Any:
    """Drop what does not validate (descriptions, ``x-kubernetes-*``) and the ``required`` lists, and
    allow ``null`` everywhere: Go's decoder takes it as the field's zero value, whatever the type."""
    if isinstance(node, dict):
        out = {
            k: v if k == "enum" else {name: _trim(s) for name, s in v.items()} if k in ("properties", "$defs") else _trim(v)
            for k, v in node.items()
            if k != "description" and not k.startswith("x-kubernetes") and not (k == "required" and isinstance(v, list))
        }
        one_of = out.get("oneOf")
        if isinstance(one_of, list) and all(isinstance(o, dict) and o.keys() == {"type"} for o in one_of):
            # Quantity and IntOrString: a union of types, checked without oneOf's bookkeeping (and with
            # null allowed, which two nullable alternatives would otherwise both match).
            del out["oneOf"]
            out["type"] = [t for o in one_of for t in (o["type"] if isinstance(o["type"], list) else [o["type"]])]
        types = out.get("type")
        if isinstance(types, str) and types != "null":
            out["type"] = [types, "null"]
        elif isinstance(types, list) and "null" not in types:
            out["type"] = [*types, "null"]
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        return out
    if isinstance(node, list):
        return [_trim(v) for v in node]
    return node


def _json_path(name: str | None) -> str:
    """fastjsonschema's ``data.spec.containers[0]`` as ``spec.containers[0]``."""
    name = name or "data"
    return name[len("data."):] if name.startswith("data.") else name[len("data"):]


def _object_error(what: str, e: fastjsonschema.JsonSchemaValueException) -> ObjectError:
    path = _json_path(e.name)
    detail = e.message[len(e.name or ""):].strip() if e.name and e.message.startswith(e.name) else e.message
    if e.rule == "type":
        expected = " or ".join(dict.fromkeys(t for t in detail.removeprefix("must be ").split(" or ") if t != "null"))
        detail = f"expected {_article(expected)}, got {describe(e.value)}"
    elif e.rule == "enum":
        detail = f"Unsupported value: {describe(e.value)}: {detail.removeprefix('must be ')}"
    return ObjectError(what, path or "(object)", detail)


def _article(type_name: str) -> str:
    words = {"object": "an object", "array": "a list", "integer": "an integer", "string": "a string",
             "number": "a number", "boolean": "a boolean"}
    return " or ".join(words.get(t, t) for t in type_name.split(" or "))


def _unknown_fields(strict: Validator, obj: dict[str, Any]) -> list[str]:
    """Every field the strict schema does not know, found by removing each one and checking again."""
    doc = copy.deepcopy(obj)
    unknown: list[str] = []
    for _ in range(MAX_UNKNOWN_FIELDS):
        try:
            strict(doc)
            return unknown
        except fastjsonschema.JsonSchemaValueException as e:
            # The exception's value is the object itself, inside doc: drop the fields it does not allow.
            if e.rule != "additionalProperties" or not isinstance(e.value, dict):
                return unknown
            parent = _json_path(e.name)
            allowed = e.definition.get("properties", {}) if isinstance(e.definition, dict) else {}
            for key in sorted(k for k in e.value if k not in allowed):
                unknown.append(f"{parent}.{key}" if parent else key)
                del e.value[key]
    unknown.append("...")
    return unknown

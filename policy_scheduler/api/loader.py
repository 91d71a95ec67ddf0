"""Decode a scheduler Policy from text, a file or a ConfigMap, with Kubernetes 1.9's rules.

Decoding (``policy.md`` §3):

* The document must be an object. ``apiVersion`` and ``kind`` are read first (keys case-insensitive):

  ======================================  ==================================================================
  ``apiVersion: v1``, kind Policy/absent  decoded as v1; extenders under ``extenders``
  no ``apiVersion``, kind Policy/absent   decoded into the internal type: same keys, **except** that
                                          extenders are read from ``extenderConfigs`` and an ``extenders``
                                          key is ignored (1.9 quirk, reproduced; ``lint_policy`` warns)
  ``apiVersion: v1``, other kind K        ``no kind "K" is registered for version "v1"``
  other version V                         ``no kind "Policy" is registered for version "V"``
  no ``apiVersion``, other kind K         ``no kind "K" is registered for the internal version of group ""``
  ``apiVersion`` with two or more ``/``   ``unexpected GroupVersion string: <value>``
  malformed JSON                          ``couldn't get version/kind; json parse error: <detail>``
  ======================================  ==================================================================

  (``apiVersion`` ``"/"`` counts as absent and ``"/v1"`` as ``v1``, as upstream's GroupVersion parser
  has it; the internal version name ``__internal`` behaves like an absent ``apiVersion``.)
* Object keys match field names case-insensitively at every level (json-iterator 1.0.0 lower-cases
  both sides), so ``BindVerb``, ``bindVerb`` and ``bindverb`` all set the bind verb. For duplicate keys
  the last one wins; a repeated object-valued key (``argument``, ``tlsConfig``, ...) is merged into the
  earlier one, as Go decodes into the already allocated struct.
* Unknown keys are ignored; their paths are kept in :attr:`Policy.ignored_keys` for ``lint_policy``.
* ``null`` is the same as absent for lists, arguments and ``tlsConfig``.
* ``httpTimeout`` is an integer number of nanoseconds; ``tlsConfig`` byte fields (``CertData``,
  ``KeyData``, ``CAData``) are base64 strings.
* Type mismatches are errors naming the field path, e.g.
  ``policy.json: priorities[2].weight: expected an integer, got "2"``. Booleans are not integers and
  numbers written with a fraction or exponent (``2.0``, ``1e3``) are not integers either (Go's decoder
  rejects them for ``int`` fields). The shape is checked with the JSON Schema shipped as
  ``policy_scheduler/api/schema/policy-v1.schema.json``, after keys are folded to canonical spellings.

Differences from upstream, all deliberate:

* **YAML is accepted too** (upstream's decoder is JSON-only). Text that is not valid JSON is parsed
  with ``yaml.safe_load``; if that gives a mapping it is used. Otherwise the error is that of the format
  the text is in (:func:`policy_scheduler.syntax.format_of`: the ``.json`` / ``.yaml`` extension, else
  a first ``{`` or ``[`` for JSON): upstream's ``couldn't get version/kind; json parse error: <problem>
  at line L, column C`` for JSON, ``invalid YAML: <problem> at line L, column C`` for YAML.
* A ``null`` scalar (``"weight": null``, ``"name": null``) is a type error; Go would read the zero
  value. A top-level ``null`` is an error ("expected a JSON object"); Go would decode an empty Policy.
* Every Policy entry needs a ``name`` (string). Go would decode a missing name as ``""`` and fail later
  with ``Invalid configuration: Predicate type not found for``.

Errors are :class:`PolicyDecodeError` (a :class:`~policy_scheduler.errors.PolicyError`) whose message is
``<source>: [<field path>: ]<detail>``; ``detail`` alone is upstream's text where upstream has one, so
a daemon can report ``invalid policy: <detail>`` exactly as kube-scheduler does.
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, TypeVar

import jsonschema
import yaml

from policy_scheduler.errors import PolicyError
from policy_scheduler.model.fields import describe
from policy_scheduler.syntax import JSON, format_of, json_problem, yaml_problem

from .types import (
    POLICY_API_VERSION,
    POLICY_KIND,
    SCHEDULER_POLICY_CONFIG_MAP_KEY,
    ExtenderConfig,
    ExtenderManagedResource,
    LabelPreferenceArgs,
    LabelsPresenceArgs,
    Policy,
    PredicateArgument,
    PredicatePolicy,
    PriorityArgument,
    PriorityPolicy,
    ServiceAffinityArgs,
    ServiceAntiAffinityArgs,
    TLSConfig,
)

__all__ = [
    "PolicyDecodeError",
    "load_policy",
    "load_policy_file",
    "load_policy_from_configmap",
    "policy_from_dict",
    "policy_schema",
]

SCHEMA_RESOURCE = "schema/policy-v1.schema.json"
_INTERNAL_VERSION = "__internal"
_MAX_DEPTH = 200
_PARSE_ERROR = "couldn't get version/kind; json parse error: "
_T = TypeVar("_T")


class PolicyDecodeError(PolicyError):
    """A Policy could not be decoded. ``detail`` is the message without source and field path."""

    def __init__(self, source: str | None, detail: str, field: str | None = None) -> None:
        self.source = source
        self.field = field
        self.detail = detail
        super().__init__(": ".join(part for part in (source, field, detail) if part))


# --------------------------------------------------------------------------------------------------
# Public entry points


def load_policy(text: str, source: str = "<policy>") -> Policy:
    """Decode Policy ``text`` (JSON, or YAML as an extension); ``source`` prefixes every message."""
    return _decode(_parse(text, source), source)


def load_policy_file(path: str | os.PathLike[str]) -> Policy:
    """Read and decode a policy file; the path is the message source.

    A path that cannot be stat'ed gives upstream's ``missing policy config file <path>`` and why (``no
    such file``); a read error ``couldn't read policy config: <error>``.
    """
    name = os.fspath(path)
    if not name:
        raise PolicyError("missing policy config file ")  # upstream's words for an empty flag value
    try:
        os.stat(name)
    except FileNotFoundError as exc:
        raise PolicyError(f"missing policy config file {name}: no such file") from exc
    except (OSError, ValueError) as exc:
        why = exc.strerror.lower() if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise PolicyError(f"missing policy config file {name}: {why}") from exc
    try:
        with open(name, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise PolicyError(f"couldn't read policy config: {name}: {exc.strerror or exc}") from exc
    # Go leaves invalid UTF-8 to the JSON decoder, which replaces it inside strings with U+FFFD.
    return load_policy(data.decode("utf-8", errors="replace"), name)


def load_policy_from_configmap(configmap: Mapping[str, Any] | Any, source: str | None = None) -> Policy:
    """Decode the policy stored under ``data["policy.cfg"]`` of a ConfigMap.

    ``configmap`` is the object as the API returns it: a dict, or an object with ``data`` and
    ``metadata`` attributes (e.g. the kubernetes client's ``V1ConfigMap``).

    ``source`` defaults to ``ConfigMap <namespace>/<name>``. A missing key gives upstream's
    ``missing policy config map value at key "policy.cfg"``.
    """
    where = source or _configmap_source(configmap)
    data = _get(configmap, "data")
    if not isinstance(data, Mapping) or SCHEDULER_POLICY_CONFIG_MAP_KEY not in data:
        raise PolicyDecodeError(where, f'missing policy config map value at key "{SCHEDULER_POLICY_CONFIG_MAP_KEY}"')
    text = data[SCHEDULER_POLICY_CONFIG_MAP_KEY]
    if not isinstance(text, str):
        field = f"data.{SCHEDULER_POLICY_CONFIG_MAP_KEY}"
        raise PolicyDecodeError(where, f"expected a string, got {_describe(text)}", field)
    return load_policy(text, where)


def policy_from_dict(data: Mapping[str, Any], source: str = "<policy>") -> Policy:
    """Decode an already parsed document (e.g. a ``policy`` object embedded in a test case)."""
    if not isinstance(data, Mapping):
        raise PolicyDecodeError(source, _PARSE_ERROR + f"expected an object at the top level, got {_describe(data)}")
    return _decode(_from_native(data, source, 0), source)


def policy_schema() -> dict[str, Any]:
    """The Policy v1 JSON Schema (draft 2020-12) shipped with the package (a fresh copy)."""
    return copy.deepcopy(_schema())


@functools.cache
def _schema() -> dict[str, Any]:
    text = resources.files("policy_scheduler.api").joinpath(SCHEMA_RESOURCE).read_text(encoding="utf-8")
    return json.loads(text)


# --------------------------------------------------------------------------------------------------
# Parsing: JSON (keeping every key/value pair in order) or YAML


class _Object:
    """A parsed object: its key/value pairs in document order, duplicates kept."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: list[tuple[Any, Any]]) -> None:
        self.pairs = pairs


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON value {name}")


def _parse(text: str, source: str) -> _Object:
    try:
        document = json.loads(text, object_pairs_hook=_Object, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        return _parse_yaml(text, source, _json_error_detail(text, exc))
    if not isinstance(document, _Object):
        raise PolicyDecodeError(source, _PARSE_ERROR + f"expected a JSON object at the top level, got {_json_kind(document)}")
    return document


def _json_error_detail(text: str, exc: Exception) -> str:
    if not text.strip():
        return "unexpected end of JSON input"
    if isinstance(exc, RecursionError):
        return "document nested too deeply"
    if isinstance(exc, json.JSONDecodeError):
        return json_problem(exc)
    return str(exc)


def _parse_yaml(text: str, source: str, json_detail: str) -> _Object:
    """Text that is not JSON: a YAML mapping, else the error of the format the text is in (:mod:`..syntax`)."""
    in_json = format_of(text, source) == JSON
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PolicyDecodeError(source, _PARSE_ERROR + json_detail if in_json else f"invalid YAML: {yaml_problem(exc, text)}") from None
    except RecursionError:
        raise PolicyDecodeError(source, _PARSE_ERROR + json_detail if in_json else "invalid YAML: document nested too deeply") from None
    if isinstance(document, dict):
        return _from_native(document, source, 0)
    if in_json:
        raise PolicyDecodeError(source, _PARSE_ERROR + json_detail)
    got = "nothing" if document is None else describe(document)
    raise PolicyDecodeError(source, f"couldn't get version/kind; expected a YAML mapping at the top level, got {got}")


def _from_native(value: Any, source: str, depth: int) -> Any:
    """Turn mappings into :class:`_Object` recursively (YAML documents, dicts given by callers)."""
    if depth > _MAX_DEPTH:
        raise PolicyDecodeError(source, "document nested too deeply")
    if isinstance(value, Mapping):
        return _Object([(key, _from_native(item, source, depth + 1)) for key, item in value.items()])
    if isinstance(value, (list, tuple)):
        return [_from_native(item, source, depth + 1) for item in value]
    return value


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array"


# --------------------------------------------------------------------------------------------------
# apiVersion / kind


@dataclass(frozen=True)
class _TypeMeta:
    api_version: str
    kind: str


def _read_type_meta(document: _Object, source: str) -> _TypeMeta:
    found = {"apiversion": "", "kind": ""}
    for key, value in document.pairs:
        if not isinstance(key, str) or key.lower() not in found or value is None:
            continue
        if not isinstance(value, str):
            canonical = "apiVersion" if key.lower() == "apiversion" else "kind"
            raise PolicyDecodeError(source, _PARSE_ERROR + f"{canonical}: expected a string, got {_describe(_plain(value))}")
        found[key.lower()] = value
    return _TypeMeta(found["apiversion"], found["kind"])


def _is_internal(meta: _TypeMeta, source: str) -> bool:
    """True to decode into the internal type, False for v1; raise for anything else."""
    group, version = _parse_group_version(meta.api_version, source)
    kind = meta.kind or POLICY_KIND
    if group == "" and version in ("", _INTERNAL_VERSION):
        if kind != POLICY_KIND:
            raise PolicyDecodeError(source, f'no kind "{kind}" is registered for the internal version of group ""')
        return True
    group_version = f"{group}/{version}" if group else version
    if group_version != POLICY_API_VERSION or kind != POLICY_KIND:
        raise PolicyDecodeError(source, f'no kind "{kind}" is registered for version "{group_version}"')
    return False


def _parse_group_version(value: str, source: str) -> tuple[str, str]:
    if value in ("", "/"):
        return "", ""
    slashes = value.count("/")
    if slashes == 0:
        return "", value
    if slashes == 1:
        group, version = value.split("/")
        return group, version
    raise PolicyDecodeError(source, f"unexpected GroupVersion string: {value}")


# --------------------------------------------------------------------------------------------------
# Key folding, driven by the schema's properties


@dataclass(frozen=True)
class _Field:
    name: str  # canonical key
    struct: dict[str, _Field] | None  # fields of an object value, or of the items of a list value
    is_list: bool


def _deref(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = root
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def _struct_fields(node: dict[str, Any], root: dict[str, Any]) -> dict[str, _Field]:
    fields: dict[str, _Field] = {}
    for key, sub in node["properties"].items():
        sub = _deref(sub, root)
        is_list = "items" in sub
        target = _deref(sub["items"], root) if is_list else sub
        struct = _struct_fields(target, root) if "properties" in target else None
        fields[key.lower()] = _Field(key, struct, is_list)
    return fields


@functools.cache
def _document_fields(internal: bool) -> dict[str, _Field]:
    schema = _schema()
    fields = dict(_struct_fields(schema, schema))
    fields.pop("extenders" if internal else "extenderconfigs")
    return fields


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class _Folder:
    """Folds keys to their canonical spelling, drops unknown keys and records where they were."""

    def __init__(self) -> None:
        self.ignored: dict[str, None] = {}

    def fold_object(self, obj: _Object, fields: dict[str, _Field], path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        merged: dict[str, list[tuple[Any, Any]]] = {}
        for key, value in obj.pairs:
            field = fields.get(key.lower()) if isinstance(key, str) else None
            if field is None:
                self.ignored[_join(path, str(key))] = None
                continue
            if field.struct is not None and not field.is_list and isinstance(value, _Object):
                # A repeated object key decodes into the struct already allocated: merge.
                merged[field.name] = merged.get(field.name, []) + value.pairs
                out[field.name] = self.fold_object(_Object(merged[field.name]), field.struct, _join(path, field.name))
                continue
            merged.pop(field.name, None)
            out[field.name] = self.fold_value(field, value, _join(path, field.name))
        return out

    def fold_value(self, field: _Field, value: Any, path: str) -> Any:
        if field.is_list and isinstance(value, list):
            return [self.fold_item(field, item, f"{path}[{index}]") for index, item in enumerate(value)]
        return _plain(value)

    def fold_item(self, field: _Field, item: Any, path: str) -> Any:
        if field.struct is not None and isinstance(item, _Object):
            return self.fold_object(item, field.struct, path)
        return _plain(item)


def _plain(value: Any) -> Any:
    """Parsed value → plain dicts and lists (last duplicate key wins)."""
    if isinstance(value, _Object):
        return {str(key): _plain(item) for key, item in value.pairs}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


# --------------------------------------------------------------------------------------------------
# Shape validation (JSON Schema) and its messages


def _is_strict_integer(_checker: Any, instance: Any) -> bool:
    # Draft 2020-12 counts 2.0 as an integer and Python counts True; Go's decoder accepts neither.
    return isinstance(instance, int) and not isinstance(instance, bool)


@functools.cache
def _validator() -> jsonschema.protocols.Validator:
    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine("integer", _is_strict_integer)
    strict = jsonschema.validators.extend(base, type_checker=checker)
    return strict(_schema())


_ARTICLES = {"integer": "an integer", "string": "a string", "boolean": "a boolean", "array": "an array",
             "object": "an object", "null": "null", "number": "a number"}
_VALIDATOR_RANK = {"type": 0, "required": 1}


def _check_shape(document: dict[str, Any], source: str) -> None:
    errors = list(_validator().iter_errors(document))
    if not errors:
        return
    first = min(errors, key=lambda error: _error_order(document, error))
    field, detail = _schema_message(first)
    raise PolicyDecodeError(source, detail, field)


def _error_order(document: Any, error: jsonschema.ValidationError) -> tuple[Any, ...]:
    """Sort key: document order of the error's location, then type errors before others."""
    positions: list[int] = []
    node = document
    for step in error.absolute_path:
        if isinstance(node, dict):
            positions.append(list(node).index(step))
        else:
            positions.append(int(step))
        node = node[step]
    return (*positions, -1, _VALIDATOR_RANK.get(str(error.validator), 9))


def _format_path(steps: Any) -> str:
    path = ""
    for step in steps:
        path = f"{path}[{step}]" if isinstance(step, int) else _join(path, str(step))
    return path


def _schema_message(error: jsonschema.ValidationError) -> tuple[str, str]:
    path = _format_path(error.absolute_path)
    if error.validator == "type":
        wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        expected = " or ".join(_ARTICLES.get(name, name) for name in wanted)
        return path, f"expected {expected}, got {_describe(error.instance)}"
    if error.validator == "required":
        missing = next(name for name in error.validator_value if name not in error.instance)
        return _join(path, missing), "required field is missing"
    if error.validator in ("minimum", "maximum"):
        return path, f"expected an integer, got {_describe(error.instance)} (outside the 64-bit integer range)"
    return path, error.message


def _describe(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = f"{value!s} ({type(value).__name__})"
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------------------------------
# Decoding into the Policy types


def _decode(document: _Object, source: str) -> Policy:
    internal = _is_internal(_read_type_meta(document, source), source)
    folder = _Folder()
    folded = folder.fold_object(document, _document_fields(internal), "")
    _check_shape(folded, source)
    extender_key = "extenderConfigs" if internal else "extenders"
    builder = _Builder(source)
    return Policy(
        predicates=builder.list_of(folded.get("predicates"), "predicates", builder.predicate),
        priorities=builder.list_of(folded.get("priorities"), "priorities", builder.priority),
        extenders=builder.list_of(folded.get(extender_key), extender_key, builder.extender),
        hard_pod_affinity_symmetric_weight=folded.get("hardPodAffinitySymmetricWeight", 0),
        source=source,
        ignored_keys=tuple(folder.ignored),
    )


class _Builder:
    """Builds the dataclasses from a folded document that passed the schema."""

    def __init__(self, source: str) -> None:
        self.source = source

    @staticmethod
    def list_of(
        items: list[dict[str, Any]] | None, path: str, build: Callable[[dict[str, Any], str], _T]
    ) -> list[_T] | None:
        if items is None:
            return None
        return [build(item, f"{path}[{index}]") for index, item in enumerate(items)]

    @staticmethod
    def predicate(entry: dict[str, Any], path: str) -> PredicatePolicy:
        argument = entry.get("argument")
        if argument is None:
            return PredicatePolicy(name=entry["name"])
        affinity = argument.get("serviceAffinity")
        presence = argument.get("labelsPresence")
        return PredicatePolicy(
            name=entry["name"],
            argument=PredicateArgument(
                service_affinity=None if affinity is None else ServiceAffinityArgs(labels=affinity.get("labels") or []),
                labels_presence=None if presence is None else LabelsPresenceArgs(
                    labels=presence.get("labels") or [], presence=presence.get("presence", False)
                ),
            ),
        )

    @staticmethod
    def priority(entry: dict[str, Any], path: str) -> PriorityPolicy:
        argument = entry.get("argument")
        weight = entry.get("weight", 0)
        if argument is None:
            return PriorityPolicy(name=entry["name"], weight=weight)
        anti = argument.get("serviceAntiAffinity")
        preference = argument.get("labelPreference")
        return PriorityPolicy(
            name=entry["name"],
            weight=weight,
            argument=PriorityArgument(
                service_anti_affinity=None if anti is None else ServiceAntiAffinityArgs(label=anti.get("label", "")),
                label_preference=None if preference is None else LabelPreferenceArgs(
                    label=preference.get("label", ""), presence=preference.get("presence", False)
                ),
            ),
        )

    def extender(self, entry: dict[str, Any], path: str) -> ExtenderConfig:
        tls = entry.get("tlsConfig")
        managed = entry.get("managedResources")
        return ExtenderConfig(
            url_prefix=entry.get("urlPrefix", ""),
            filter_verb=entry.get("filterVerb", ""),
            prioritize_verb=entry.get("prioritizeVerb", ""),
            weight=entry.get("weight", 0),
            bind_verb=entry.get("bindVerb", ""),
            enable_https=entry.get("enableHttps", False),
            tls_config=None if tls is None else self.tls_config(tls, _join(path, "tlsConfig")),
            http_timeout_ns=entry.get("httpTimeout", 0),
            node_cache_capable=entry.get("nodeCacheCapable", False),
            managed_resources=None if managed is None else tuple(
                ExtenderManagedResource(r["name"], r.get("ignoredByScheduler", False)) for r in managed
            ),
            ignorable=entry.get("ignorable", False),
        )

    def tls_config(self, tls: dict[str, Any], path: str) -> TLSConfig:
        return TLSConfig(
            insecure=tls.get("Insecure", False),
            server_name=tls.get("ServerName", ""),
            cert_file=tls.get("CertFile", ""),
            key_file=tls.get("KeyFile", ""),
            ca_file=tls.get("CAFile", ""),
            cert_data=self.base64(tls.get("CertData"), _join(path, "CertData")),
            key_data=self.base64(tls.get("KeyData"), _join(path, "KeyData")),
            ca_data=self.base64(tls.get("CAData"), _join(path, "CAData")),
        )

    def base64(self, value: str | None, path: str) -> bytes:
        if not value:
            return b""
        try:
            # Go's base64.StdEncoding (padding required) skips CR and LF.
            return base64.b64decode(value.replace("\r", "").replace("\n", ""), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise PolicyDecodeError(self.source, f"invalid base64 data: {exc}", path) from None


# --------------------------------------------------------------------------------------------------
# ConfigMap helpers


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _configmap_source(configmap: Any) -> str:
    metadata = _get(configmap, "metadata")
    namespace = _get(metadata, "namespace") or ""
    name = _get(metadata, "name") or ""
    return f"ConfigMap {namespace}/{name}" if name else "ConfigMap"

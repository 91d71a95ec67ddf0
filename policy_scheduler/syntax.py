"""What keeps a YAML or JSON file from parsing, on one line: the format the file is in, the line and column,
and the parser's problem in short, never its internals (no ``in "<unicode string>"``, no "while parsing a
block mapping" unless as a short phrase).

Every loader of a user's file (Policy, manifests, sweep specifications, ``--config``, saved results,
kubeconfig) parses it its own way and, when that fails, asks :func:`syntax_problem` (or
:func:`json_problem` / :func:`yaml_problem` with the parser's exception in hand) what to say.

The format is the file's extension (``.json``; ``.yaml`` / ``.yml``), else its first non-blank character
(``{`` or ``[``: JSON; anything else: YAML). The loaders that accept both read JSON first and YAML
second; only the error names one format, the one the file is in, so a badly indented YAML Policy is
not reported with the JSON parser's complaint about its first character.
"""

from __future__ import annotations

import json
import os
import re

import yaml

JSON = "JSON"
YAML = "YAML"

# PyYAML's and libyaml's token names, as a reader would say them.
_TOKENS = {
    "'<stream end>'": "the end of the file",
    "<stream end>": "the end of the file",
    "'<block end>'": "the end of a block",
    "<block end>": "the end of a block",
    "'<block mapping start>'": "a key",
    "'<block sequence start>'": "a list item",
    "'<block entry>'": "'-'",
    "'<document start>'": "'---'",
    "'<document end>'": "'...'",
    "'<scalar>'": "a value",
    "'<alias>'": "an alias",
    "'<anchor>'": "an anchor",
    "'<tag>'": "a tag",
    "'<flow mapping end>'": "'}'",
    "'<flow sequence end>'": "']'",
    "'<flow entry>'": "','",
    "'<key>'": "a key",
    "'<value>'": "':'",
}
_TOKEN = re.compile("|".join(re.escape(t) for t in sorted(_TOKENS, key=len, reverse=True)))
# What the parsers say when a line is not indented as the block around it.
_INDENTATION = re.compile(r"^(expected <block end>, but found .*|did not find expected key|"
                          r"did not find expected '-' indicator)$")
_COLON = re.compile(r"^mapping values are not allowed (here|in this context)$")
_TAB = re.compile(r"^(found character '\\t' that cannot start any token|found a tab character that violates indentation)$")
# The block a problem is in, when the parser says which: "while parsing a block mapping" and the like.
_CONTEXTS = {
    "while parsing a block mapping": "the mapping",
    "while parsing a block collection": "the list",
    "while parsing a flow mapping": "the {...} mapping",
    "while parsing a flow sequence": "the [...] list",
    "while scanning a quoted scalar": "the quoted string",
}


def format_of(text: str, name: str | None = None) -> str:
    """``"JSON"`` or ``"YAML"``: by ``name``'s extension, else by the first non-blank character of ``text``."""
    suffix = os.path.splitext(name or "")[1].lower()
    if suffix == ".json":
        return JSON
    if suffix in (".yaml", ".yml"):
        return YAML
    return JSON if text.lstrip()[:1] in ("{", "[") else YAML


def syntax_problem(text: str, name: str | None = None, *, loader: type = yaml.SafeLoader,
                   multiple: bool = False) -> str | None:
    """``invalid JSON: <problem> at line L, column C`` (or YAML) for ``text`` in the format it is in; None
    when it parses in that format. ``loader`` and ``multiple`` (a YAML stream of documents) are the
    caller's way of reading YAML, so the problem found is the one the caller met."""
    if format_of(text, name) == JSON:
        try:
            json.loads(text)
        except json.JSONDecodeError as e:
            return f"invalid JSON: {json_problem(e)}"
        except (ValueError, RecursionError):
            return "invalid JSON: document nested too deeply"
        return None
    try:
        if multiple:
            for _ in yaml.load_all(text, Loader=loader):
                pass
        else:
            yaml.load(text, Loader=loader)
    except yaml.YAMLError as e:
        return f"invalid YAML: {yaml_problem(e, text)}"
    except RecursionError:
        return "invalid YAML: document nested too deeply"
    return None


def json_problem(error: json.JSONDecodeError) -> str:
    """``<problem> at line L, column C``, from Python's JSON decoder."""
    if not error.doc.strip():
        return "the file is empty"
    return f"{error.msg} at line {error.lineno}, column {error.colno}"


def yaml_problem(error: yaml.YAMLError, text: str | None = None) -> str:
    """``<problem> at line L, column C[ (in <the block> that starts at line L, column C)]``, from PyYAML or
    libyaml; with the parsed ``text``, a value missing at its very end is the end of the file (libyaml does
    not say so)."""
    if not isinstance(error, yaml.MarkedYAMLError) or not error.problem:
        message = " ".join(str(error).replace(' in "<unicode string>",', "").split())
        return message or type(error).__name__
    problem = _short(error.problem)
    mark = error.problem_mark
    if (problem == "expected a value" or problem.startswith("did not find expected")) and text is not None \
            and mark is not None and _at_end(text, mark):
        problem = "unexpected end of the file"
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    block = _CONTEXTS.get(error.context or "")
    context = error.context_mark
    inside = ""
    if block and context is not None and (mark is None or (context.line, context.column) != (mark.line, mark.column)):
        inside = f" (in {block} that starts at line {context.line + 1}, column {context.column + 1})"
    return f"{problem}{where}{inside}"


def _at_end(text: str, mark: yaml.Mark) -> bool:
    """Whether ``mark`` is past the last non-blank character of ``text``."""
    lines = text.rstrip().split("\n")
    return mark.line > len(lines) - 1 or (mark.line == len(lines) - 1 and mark.column >= len(lines[-1]))


def _short(problem: str) -> str:
    problem = problem.strip()
    if _INDENTATION.match(problem):
        return "bad indentation"
    if _COLON.match(problem):
        return "unexpected ':' (check the indentation, or quote a value that contains ': ')"
    if _TAB.match(problem):
        return "a tab character (YAML indents with spaces)"
    if problem == "but found another document":
        return "a second document ('---') where one was expected"
    if problem.endswith(("but found '<stream end>'", "but got '<stream end>'", "unexpected end of stream")):
        return "unexpected end of the file"
    if problem == "did not find expected node content":
        return "expected a value"
    return _TOKEN.sub(lambda m: _TOKENS[m.group(0)], problem)

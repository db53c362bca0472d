"""Bounded YAML loading: alias expansion and nesting depth limited as kube-apiserver's decoder
limits them, for every YAML pumice reads from users (request bodies, runtimeEnvYAML, Ray Serve
configs, volcano-scheduler.conf, manifests given to the CLI).

PyYAML builds aliases as shared Python objects, so loading a "billion laughs" document is cheap;
what explodes is whatever later copies or serialises the result. :func:`safe_load` composes the
document first and counts the nodes an expanding decoder would produce, refusing excessive
aliasing by go-yaml's rule (the decoder behind sigs.k8s.io/yaml): once more than 100 of more
than 1,000 decoded nodes came from aliases, their share may not exceed 99% for documents up to
400,000 nodes, falling linearly to 10% at 4,000,000. Nesting deeper than ``max_depth`` (default
100) and expanded documents of more than ``max_nodes`` nodes are refused too.

Mirrors: go-yaml v2 decode.go (allowedAliasRatio, "document contains excessive aliasing").
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Generator, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from pumice._util.files import InputFileError, read_text_file
from pumice._util.gostrings import quote
from pumice._util.goyaml import resolve as go_resolve

__all__ = ["DEFAULT_MAX_DEPTH", "DEFAULT_MAX_NODES", "PLAIN_LOADER", "NotYAMLError", "YAMLLimitError", "check_node",
           "compose", "error_line", "go_yaml_error", "read_yaml_document", "read_yaml_file", "safe_load",
           "safe_load_all"]

DEFAULT_MAX_DEPTH = 100
#: every node takes at least two bytes of JSON: 3 MiB of JSON at most
DEFAULT_MAX_NODES = 3 * 1024 * 1024 // 2

_ALIAS_LOW = 400_000
_ALIAS_HIGH = 4_000_000

try:  # libyaml's composer when present (same node graph, faster)
    _Loader: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment,attr-defined]
except AttributeError:  # pragma: no cover - PyYAML without libyaml
    _Loader = yaml.SafeLoader


class _GoLoader(_Loader):  # type: ignore[misc,valid-type]
    """The safe loader, building what sigs.k8s.io/yaml (go-yaml v2 into ``interface{}``, then
    JSON) builds, so that no YAML value is left that JSON cannot carry (trial 11 F-1: a date made
    the API answer 500): a plain scalar is resolved as go-yaml v2 resolves it (:func:`pumice._util.goyaml.resolve`:
    ``1e3``, ``-.5``, ``09`` are floats, ``0o17`` is 15, ``y`` is true; an unquoted timestamp and a
    base-60 number stay their text), a float is the number Go's JSON encoder then writes
    (``1e3`` -> 1000, ``1.0`` -> 1), ``!!binary`` is the decoded text
    (invalid UTF-8 replaced, as Go's JSON encoder does), ``!!set`` is a mapping of nulls,
    ``!!omap`` and ``!!pairs`` are sequences of one-key mappings, and mapping keys that are not
    strings become go-yaml's text of them (``1``, ``true``, ``0.5``); a null, uint64 or collection
    key is an error, as sigs.k8s.io/yaml refuses it.

    Mirrors: go-yaml v2 decode.go (timestamps into interface{} as strings, !!binary), resolve.go,
    and sigs.k8s.io/yaml yamlToJSONTarget (json.Marshal), convertToJSONableObject (map keys).
    """

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode and implicit[0]:  # plain, untagged
            # a plain << may be a merge key (the decoder's isMerge); anywhere else it is its text
            return _MERGE_TAG if value == "<<" else go_resolve(value)[0]
        tag: str = super().resolve(kind, value, implicit)
        return tag

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:  # type: ignore[override]
        if isinstance(node, yaml.MappingNode):
            try:
                self.flatten_mapping(node)  # merge keys (<<), as the base class does
            except yaml.constructor.ConstructorError as e:
                if not str(e.problem).startswith("expected a mapping"):
                    raise
                raise yaml.constructor.ConstructorError(None, None, _MERGE_WANTS_MAP, e.problem_mark) from None
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _FLOAT_TAG and isinstance(key_node, yaml.ScalarNode):
                key = _go_float64(self, key_node)  # the float64, not its JSON number: 1e7 -> "1e+07"
            else:
                key = self.construct_object(key_node, deep=True)
            value = self.construct_object(value_node, deep=deep)
            # each key converted on its own: 1 and true are one Python key but two JSON keys
            mapping[key if type(key) is str else _go_key(key, value, key_node)] = value
        return mapping


#: sigs.k8s.io/yaml's refusal of a mapping key JSON cannot carry
_UNSUPPORTED_KEY = "unsupported map key of type: "


def _go_key(key: Any, value: Any, node: yaml.Node) -> str:
    """A mapping key as sigs.k8s.io/yaml writes it into JSON."""
    if type(key) is str:
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int) and key < 2**63:
        return str(key)
    if isinstance(key, float):
        return _go_float32_text(key)
    if key is None:
        what, text = "%!s(<nil>)", "<nil>"
    elif isinstance(key, int):  # beyond int64: go-yaml's uint64
        what, text = "uint64", hex(key)
    else:
        what, text = type(key).__name__, repr(key)
    shown = quote(value) if isinstance(value, str) else "<nil>" if value is None else repr(value)
    raise yaml.constructor.ConstructorError(
        None, None, f"{_UNSUPPORTED_KEY}{what}, key: {text}, value: {shown}", node.start_mark)


def _go_float32_text(x: float) -> str:
    """``strconv.FormatFloat(x, 'g', -1, 32)`` with go-yaml's names for infinities and NaN."""
    if x != x:
        return ".nan"
    if x in (float("inf"), float("-inf")):
        return ".inf" if x > 0 else "-.inf"
    if x == 0:
        return "-0" if str(x).startswith("-") else "0"
    f32 = struct.unpack("f", struct.pack("f", x))[0]
    for digits in range(1, 10):  # the shortest decimal that reads back as the same float32
        text = f"{f32:.{digits - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == f32:
            break
    mantissa, exp_text = text.split("e")
    exp = int(exp_text)
    sign = "-" if mantissa.startswith("-") else ""
    figures = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    if exp < -4 or exp >= 6:  # %e form, at least two exponent digits
        frac = figures[1:]
        return f"{sign}{figures[0]}{'.' + frac if frac else ''}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    point = exp + 1
    if point <= 0:
        return f"{sign}0.{'0' * -point}{figures}"
    if point >= len(figures):
        return f"{sign}{figures}{'0' * (point - len(figures))}"
    return f"{sign}{figures[:point]}.{figures[point:]}"


def _float_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float | str:
    """An explicit ``!!float`` scalar go-yaml would not resolve to a number (PyYAML's reading);
    one too large for a float64 (``!!float 1.0e+400``) is its text (a Quantity then parses it as
    Go does); ``.inf`` and ``.nan`` stay floats."""
    number: float = loader.construct_yaml_float(node)
    if not math.isfinite(number) and str(node.value).lstrip("+-")[:1] != ".":
        return str(node.value)
    return number


def _go_float64(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float | str:
    """A float-tagged scalar as go-yaml's float64: the float :func:`go_resolve` reads, an int it
    reads within int64 made a float (``!!float 0x1f`` = 31.0, resolve's deferred conversion), else
    the explicit tag's reading (:func:`_float_text`, refused in go-yaml's words when it fails)."""
    tag, value = go_resolve(str(node.value))
    if tag == _FLOAT_TAG:
        return value  # type: ignore[no-any-return]
    if tag == _INT_TAG and -(2**63) <= value < 2**63:
        return float(value)
    return _EXPLICIT_FLOAT(loader, node)  # type: ignore[no-any-return]


def _json_number(x: float) -> int | float:
    """A float64 as the number pumice's JSON decoder reads from what Go's ``encoding/json`` writes
    of it (sigs.k8s.io/yaml's YAMLToJSON): an integral value below 1e21 is written without point
    or exponent (``1000``, ``1``, ``18446744073709552000``: the shortest digits, then zeros), so it
    is an int; any other float stays itself (``.inf`` and ``.nan`` too, which Go cannot write).

    Mirrors: Go encoding/json floatEncoder ('f' format below 1e21)."""
    if x.is_integer() and abs(x) < 1e21:
        return int(x) if abs(x) < 2**53 else int(Decimal(repr(x)))
    return x


def _construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | float | str:
    value = _go_float64(loader, node)
    return value if isinstance(value, str) else _json_number(value)


def _construct_go(tag: str, explicit: Any) -> Any:
    """A constructor for ``tag``: go-yaml's value when :func:`go_resolve` gives the scalar that tag
    (every plain scalar with it, and an explicit tag go-yaml agrees with: ``!!int 0o17`` = 15),
    else ``explicit`` (PyYAML's reading of an explicit tag, refused in go-yaml's words)."""

    def build(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
        resolved, value = go_resolve(str(node.value))
        return value if resolved == tag else explicit(loader, node)

    return build


def _explicit(construct: Any, short_tag: str) -> Any:
    """A scalar constructor that refuses, in go-yaml's words, a value its explicit tag cannot hold
    (``!!int zz``: ``cannot decode !!str `zz` as a !!int``, the first part the tag the value
    resolves to untagged) instead of letting PyYAML's ValueError or KeyError through (a 500).

    Mirrors: go-yaml v2 resolve.go resolve (the deferred failf). Deviates: PyYAML reads a few
    texts go-yaml refuses under an explicit tag (``!!int 18446744073709551616``, ``!!float
    1e400``); the untagged tag is the loader's resolution (go-yaml's for :class:`_GoLoader`, YAML
    1.1 for :data:`PLAIN_LOADER`)."""

    def build(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
        try:
            return construct(loader, node)
        except (ValueError, KeyError, TypeError):
            text = str(node.value)
            untagged = loader.resolve(yaml.ScalarNode, text, (True, False))
            raise yaml.constructor.ConstructorError(
                None, None, f"{_CANNOT_DECODE}!!{untagged.rsplit(':', 1)[-1]} `{text}` as a {short_tag}",
                node.start_mark) from None

    return build


#: go-yaml's refusal of a scalar its explicit tag cannot hold
_CANNOT_DECODE = "cannot decode "
#: go-yaml's refusal of a merge whose value is not a mapping or a sequence of mappings (failWantMap)
_MERGE_WANTS_MAP = "map merge requires map or sequence of maps as the value"


def _merge_text(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """A ``<<`` (plain, or tagged ``!!merge``) that is no mapping key: its text, as go-yaml v2 reads
    it (``data: {k: <<}``)."""
    if not isinstance(node, yaml.ScalarNode):
        return loader.construct_undefined(node)
    return str(node.value)



def _timestamp_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return str(node.value)


def _binary_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    data: bytes = loader.construct_yaml_binary(node)
    return data.decode("utf-8", errors="replace")


def _set_as_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Iterator[dict[Any, Any]]:
    data: dict[Any, Any] = {}
    yield data
    data.update({k: None for k in loader.construct_mapping(node)})


def _pairs_as_mappings(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> Iterator[list[dict[Any, Any]]]:
    items: list[dict[Any, Any]] = []
    yield items
    for sub in node.value:
        if not isinstance(sub, yaml.MappingNode):
            raise yaml.constructor.ConstructorError("while constructing pairs", node.start_mark,
                                                    f"expected a mapping, but found {sub.id}", sub.start_mark)
        items.append(loader.construct_mapping(sub, deep=True))


def _decimal(construct: Any) -> Any:
    """An int or float constructor refusing a base-60 text (``!!int 1:30``), which go-yaml v2
    does not read as a number."""

    def build(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
        if ":" in str(node.value):
            raise ValueError(f"base 60: {node.value!r}")
        return construct(loader, node)

    return build


_BOOL_TAG = "tag:yaml.org,2002:bool"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"


_MERGE_TAG = "tag:yaml.org,2002:merge"
_EXPLICIT_FLOAT = _explicit(_decimal(_float_text), "!!float")
_GoLoader.add_constructor(_MERGE_TAG, _merge_text)
_GoLoader.add_constructor(_FLOAT_TAG, _construct_float)
_GoLoader.add_constructor(_INT_TAG, _construct_go(_INT_TAG, _explicit(_decimal(_Loader.construct_yaml_int), "!!int")))
_GoLoader.add_constructor(_BOOL_TAG, _construct_go(_BOOL_TAG, _explicit(_Loader.construct_yaml_bool, "!!bool")))
_GoLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_text)
_GoLoader.add_constructor("tag:yaml.org,2002:binary", _binary_text)
_GoLoader.add_constructor("tag:yaml.org,2002:set", _set_as_mapping)
_GoLoader.add_constructor("tag:yaml.org,2002:omap", _pairs_as_mappings)
_GoLoader.add_constructor("tag:yaml.org,2002:pairs", _pairs_as_mappings)


class YAMLLimitError(yaml.YAMLError, ValueError):
    """The document is well-formed but over a limit.

    Attributes:
        kind: ``"aliasing"``, ``"depth"`` or ``"size"``.
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _allowed_alias_ratio(decoded: int) -> float:
    if decoded <= _ALIAS_LOW:
        return 0.99
    if decoded >= _ALIAS_HIGH:
        return 0.10
    return 0.99 - 0.89 * ((decoded - _ALIAS_LOW) / (_ALIAS_HIGH - _ALIAS_LOW))


def check_node(root: yaml.Node, *, max_depth: int = DEFAULT_MAX_DEPTH, max_nodes: int = DEFAULT_MAX_NODES) -> int:
    """Walk a composed document in order, expanding aliases as a decoder would, stopping as soon
    as a limit trips. Returns the expanded node count.

    Raises:
        YAMLLimitError: excessive aliasing, nesting deeper than ``max_depth``, or more than
            ``max_nodes`` nodes once expanded.
    """
    decoded = aliased = 0
    first_seen: set[int] = set()
    stack: list[tuple[yaml.Node, bool, int]] = [(root, False, 0)]  # (node, inside an alias, depth)
    while stack:
        node, in_alias, depth = stack.pop()
        if id(node) in first_seen:
            in_alias = True  # a second reference: an alias
        else:
            first_seen.add(id(node))
        decoded += 1
        if in_alias:
            aliased += 1
        if aliased > 100 and decoded > 1000 and aliased / decoded > _allowed_alias_ratio(decoded):
            raise YAMLLimitError("aliasing", "yaml: document contains excessive aliasing")
        if decoded > max_nodes:
            raise YAMLLimitError("size", f"yaml: document expands to more than {max_nodes} nodes")
        if isinstance(node, yaml.MappingNode | yaml.SequenceNode):
            depth += 1
            if depth > max_depth:
                raise YAMLLimitError("depth", f"yaml: exceeded max depth of {max_depth}")
            if isinstance(node, yaml.MappingNode):
                for k, v in reversed(node.value):
                    stack.append((v, in_alias, depth))
                    stack.append((k, in_alias, depth))
            else:
                stack.extend((c, in_alias, depth) for c in reversed(node.value))
    return decoded


def _documents(stream: str | bytes, max_depth: int, max_nodes: int, single: bool,
               loader_type: type[yaml.SafeLoader] | None = None) -> Generator[Any, None, None]:
    loader = (loader_type or _GoLoader)(stream)
    try:
        if single:
            node = loader.get_single_node()
            if node is None:
                yield None
                return
            check_node(node, max_depth=max_depth, max_nodes=max_nodes)
            yield loader.construct_document(node)
            return
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                break
            check_node(node, max_depth=max_depth, max_nodes=max_nodes)
            yield loader.construct_document(node)
    except RecursionError:
        raise YAMLLimitError("depth", f"yaml: exceeded max depth of {max_depth}") from None
    finally:
        loader.dispose()


def safe_load(stream: str | bytes, *, max_depth: int = DEFAULT_MAX_DEPTH,
              max_nodes: int = DEFAULT_MAX_NODES) -> Any:
    """``yaml.safe_load`` with the limits above (one document; None for an empty stream).

    Raises:
        YAMLLimitError: over a limit (also a ``yaml.YAMLError`` and a ``ValueError``).
        yaml.YAMLError: not YAML.
    """
    return next(_documents(stream, max_depth, max_nodes, single=True))


def safe_load_all(stream: str | bytes, *, max_depth: int = DEFAULT_MAX_DEPTH,
                  max_nodes: int = DEFAULT_MAX_NODES, loader: type[yaml.SafeLoader] | None = None) -> list[Any]:
    """``yaml.safe_load_all`` with the limits above, each document checked before it is built.
    ``loader``: the loader that builds each document, sigs.k8s.io/yaml's values by default
    (:class:`_GoLoader`); :data:`PLAIN_LOADER` builds PyYAML's safe types (dates, sets).

    Raises:
        YAMLLimitError, yaml.YAMLError: as :func:`safe_load`.
    """
    return list(_documents(stream, max_depth, max_nodes, single=False, loader_type=loader))


class _PlainLoader(yaml.SafeLoader):
    """PyYAML's pure-Python safe loader with :func:`_explicit`'s refusal of a scalar its explicit
    tag cannot hold (``cpu: !!int zz``: a YAMLError with its position, not PyYAML's bare
    ValueError)."""


def _plain_timestamp(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    """PyYAML's timestamp, refusing with a ValueError a text that is none (``!!timestamp x``:
    PyYAML's own constructor fails with an AttributeError on it)."""
    if not loader.timestamp_regexp.match(str(node.value)):
        raise ValueError(f"not a timestamp: {node.value!r}")
    return loader.construct_yaml_timestamp(node)


for _tag, _construct in (("int", yaml.SafeLoader.construct_yaml_int), ("float", yaml.SafeLoader.construct_yaml_float),
                         ("bool", yaml.SafeLoader.construct_yaml_bool), ("timestamp", _plain_timestamp)):
    _PlainLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _explicit(_construct, f"!!{_tag}"))

PLAIN_LOADER: type[yaml.SafeLoader] = _PlainLoader
"""PyYAML's own safe loader: ``yaml.safe_load``'s types and error texts (libyaml's differ), for
inputs that are no Kubernetes objects (the simulator's files); a value its explicit tag cannot
hold is a YAMLError (``cannot decode !!str `zz` as a !!int``) with its line and column."""


class NotYAMLError(InputFileError):
    """A file the user named whose text is not YAML or is over a limit of :func:`check_node`; the
    message is one line, ``<path>:<line>:<column>: <problem>`` or ``<path>: yaml: <limit>``."""


def read_yaml_file(path: Path, *, loader: type[yaml.SafeLoader] | None = None) -> list[Any]:
    """Every YAML document of a file the user named (a manifest, a configuration, a kubeconfig),
    read as :func:`pumice._util.files.read_text_file` reads (no device, at most 256 MiB, UTF-8)
    and loaded by :func:`safe_load_all` with its limits (``loader`` as there); an empty document
    is None.

    Raises:
        NotYAMLError: malformed YAML, excessive aliasing, nesting deeper than 100, however deep.
        InputFileError: the file is not readable text (see read_text_file).
        OSError: the file cannot be read (missing, no permission).
    """
    text = read_text_file(path)
    try:
        return safe_load_all(text, loader=loader)
    except yaml.YAMLError as e:
        raise NotYAMLError(error_line(e, str(path))) from None


def read_yaml_document(path: Path) -> Any:
    """The first YAML document of a file the user named (a kubeconfig, a configuration, a
    RayJob), read as :func:`read_yaml_file` reads it; None for an empty file or an empty first
    document. What follows the first document is not read, as go-yaml's Unmarshal (behind
    sigs.k8s.io/yaml: client-go's kubeconfig loader, KubeRay's config, kubectl-ray's decoder)
    decodes the first document only: a kubeconfig ending in ``---`` is read.

    Raises:
        NotYAMLError: as read_yaml_file, for the first document.
        InputFileError, OSError: as read_yaml_file.

    Mirrors: go.yaml.in/yaml/v2 yaml.go unmarshal (one parse of the stream's first document).
    """
    text = read_text_file(path)
    docs = _documents(text, DEFAULT_MAX_DEPTH, DEFAULT_MAX_NODES, single=False)
    try:
        return next(docs, None)
    except yaml.YAMLError as e:
        raise NotYAMLError(error_line(e, str(path))) from None
    finally:
        docs.close()


def compose(stream: str | bytes) -> yaml.Node | None:
    """The node graph of one YAML document (aliases shared, nothing expanded or built); None for
    an empty stream. Callers walk it once per node (e.g. the duplicate-key check of request
    bodies) after :func:`safe_load` accepted the same text.

    Raises:
        yaml.YAMLError: not YAML.
    """
    loader = _Loader(stream)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


def error_line(e: yaml.YAMLError, source: str) -> str:
    """A YAML error in one line, ``<source>:<line>:<column>: <problem>`` (1-based, as editors
    and compilers print them; ``<source>: <first line of the message>`` when PyYAML gives no
    position), instead of PyYAML's multi-line message with its context and caret."""
    mark = getattr(e, "problem_mark", None)
    problem = getattr(e, "problem", None)
    if mark is not None and problem:
        return f"{source}:{mark.line + 1}:{mark.column + 1}: {problem}"
    return f"{source}: {str(e).splitlines()[0] if str(e) else type(e).__name__}"


_ALIAS_NAME = re.compile(r"\*([^\s,\[\]{}]+)")


def go_yaml_error(e: yaml.YAMLError, text: str) -> str:
    """A YAML error of ``text`` in go-yaml v2's words (what sigs.k8s.io/yaml wraps as ``error
    converting YAML to JSON: ...``): ``yaml: line N: <problem>``. The problem is libyaml's (the C
    loader's, which go-yaml ports); ``N`` is go-yaml's: the problem's 0-based line (one more for a
    scanner error), else the context's, and no ``line`` part when both are 0. An undefined alias
    is go-yaml's ``unknown anchor 'x' referenced``; a limit (:class:`YAMLLimitError`) its own text
    (``yaml: document contains excessive aliasing``); a map key JSON cannot carry is
    sigs.k8s.io/yaml's conversion error (``unsupported map key of type: ...``), without ``yaml:``.

    Mirrors: go.yaml.in/yaml/v2 decode.go (parser.fail), sigs.k8s.io/yaml.
    """
    if isinstance(e, YAMLLimitError):
        return str(e)
    problem = getattr(e, "problem", None) or ""
    if isinstance(e, yaml.constructor.ConstructorError) and problem.startswith(_UNSUPPORTED_KEY):
        return problem
    if isinstance(e, yaml.constructor.ConstructorError) and problem.startswith((_CANNOT_DECODE, _MERGE_WANTS_MAP)):
        return f"yaml: {problem}"  # go-yaml's failf: no line
    mark = getattr(e, "problem_mark", None)
    if isinstance(e, yaml.composer.ComposerError) and problem.startswith("found undefined alias") and mark is not None:
        m = _ALIAS_NAME.match(text, mark.index) if mark.index < len(text) else None
        return f"yaml: unknown anchor '{m.group(1) if m else ''}' referenced"
    line = mark.line if mark is not None else 0
    if line and isinstance(e, yaml.scanner.ScannerError):
        line += 1
    if not line:
        context = getattr(e, "context_mark", None)
        line = context.line if context is not None else 0
    where = f"line {line}: " if line else ""
    return f"yaml: {where}{problem or 'unknown problem parsing YAML content'}"

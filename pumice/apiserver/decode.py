"""Request-body decoding with the bounds kube-apiserver's decoders have: JSON or YAML, nesting
depth, YAML alias expansion and decoded size.

- JSON: msgspec; nesting deeper than :data:`MAX_DEPTH` (or deep enough to exhaust Python's
  recursion limit while decoding) is refused with 400.
- YAML (``application/yaml`` bodies and apply patches): :func:`pumice.api.yamlsafe.safe_load`,
  which refuses excessive aliasing by go-yaml's rule (the decoder kube-apiserver uses through
  sigs.k8s.io/yaml) before anything is built: 400 ``yaml: document contains excessive
  aliasing``, so a billion-laughs body is refused without being expanded.
- Decoded size: a YAML body whose expansion would be larger than the request limit
  (:data:`MAX_DECODED_BYTES`, 3 MiB like the body limit) is refused with 413.

Errors are :class:`~pumice.apiserver.errors.StatusError` (400 BadRequest, 413
RequestEntityTooLarge), never RecursionError or MemoryError.

Duplicate fields (:func:`duplicate_fields`): the decoders above keep the last value of a repeated
key, as Go's do; kube-apiserver's strict decoding reports each repetition, JSON as
``duplicate field "spec.template.spec.containers[0].image"`` and YAML as go-yaml's
``line 5: key "name" already set in map``. The caller refuses them under
``fieldValidation=Strict`` and warns otherwise (the HTTP handlers; see http.py).

Float literals (``literals`` of :func:`decode_body`, for create and update bodies): a JSON number
whose text its float's ``repr`` would not give back (``1e3``, ``1.500``) is decoded as a
:class:`~pumice.api.quantity.FloatLiteral`, which remembers the text, because kube-apiserver hands
a Quantity field the literal itself; the caller turns Quantity fields into their strings and then
every other literal back into a float (:func:`plain_floats`).

Mirrors: go-yaml v2 decode.go (allowedAliasRatio, "document contains excessive aliasing"),
sigs.k8s.io/json (max nesting depth), k8s.io/apiserver pkg/endpoints/handlers (400 on decode
errors). Deviates: the depth limit is 100 levels, not 10,000: pumice keeps objects as Python
values and walks them recursively (Kubernetes objects, CRD schemas included, stay well below).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
import yaml

from pumice._util.duration import parse_go_duration_ns
from pumice._util.gostrings import parse_uint, quote
from pumice.api import yamlsafe
from pumice.api.apply import field_manager_errors
from pumice.api.quantity import FloatLiteral
from pumice.apiserver import errors
from pumice.apiserver.authn import UserInfo
from pumice.apiserver.authz import request_attributes
from pumice.apiserver.errors import StatusError

_NOBODY = UserInfo("")  # request_attributes needs a user; only the verb and subresource are read here

__all__ = ["MAX_DECODED_BYTES", "MAX_DEPTH", "check_query", "check_request_timeout", "check_resource_version", "decode_body",
           "duplicate_fields",
           "json_depth", "object_resource_version", "parse_resource_version", "plain_floats"]

MAX_DEPTH = 100
MAX_DECODED_BYTES = 3 * 1024 * 1024


_decode_json = msgspec.json.Decoder().decode

#: a \u escape of a surrogate pair, of a lone surrogate, or another escape (consumed so that an
#: escaped backslash is not read as the start of an escape)
_LONE_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"
                             rb"|(\\u[dD][89a-fA-F][0-9a-fA-F]{2})|\\.", re.DOTALL)


def _replacement(m: re.Match[bytes]) -> bytes:
    """A lone surrogate escape -> ``\\ufffd``; a pair or any other escape stays."""
    return b"\\ufffd" if m.group(1) else m.group()


_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_INNERMOST = re.compile(rb"\[\]|\{\}")


def json_depth(raw: bytes, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of a valid JSON document, counted up to ``limit + 1`` (an answer up to
    ``limit`` may be an upper bound: the number of opening brackets), from its bytes:
    strings removed, then innermost ``[]``/``{}`` pairs removed once per level (each pass is one
    C-level substitution, so a 3 MiB body costs milliseconds, not a walk of the decoded value)."""
    opening = raw.count(b"[") + raw.count(b"{")
    if opening <= limit:  # cannot be deeper (most bodies)
        return opening
    # outside strings: every other piece between quotes, when no escape can hide a quote
    outside = b"".join(raw.split(b'"')[::2]) if b"\\" not in raw else _JSON_STRING.sub(b"", raw)
    s = outside.translate(None, _NOT_BRACKETS)
    for depth in range(limit + 1):
        if not s:
            return depth
        s = _INNERMOST.sub(b"", s)
    return limit + 1  # limit + 1 levels removed


def _literal_decoder(literals: list[FloatLiteral]) -> Callable[[bytes], Any]:
    """A JSON decode that makes a float whose ``repr`` differs from its text a FloatLiteral and
    appends it to ``literals``."""

    def float_hook(text: str) -> float:
        number = float(text)
        if repr(number) == text:
            return number
        literal = FloatLiteral(text)
        literals.append(literal)
        return literal

    return msgspec.json.Decoder(float_hook=float_hook).decode


def plain_floats(value: Any, texts: dict[int, tuple[float, str]] | None = None) -> Any:
    """``value`` (decoded JSON) with every :class:`FloatLiteral` in it replaced, in place, by its
    plain float; returns the value (a new float when ``value`` is itself a literal). ``texts``:
    gets ``id(plain float) -> (plain float, literal text)`` for each (what
    :data:`pumice.api.godecode.LITERAL_TEXTS` holds, so that a decode error quotes the literal)."""
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, dict | list | FloatLiteral):
                value[k] = plain_floats(v, texts)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            if isinstance(v, dict | list | FloatLiteral):
                value[i] = plain_floats(v, texts)
    elif isinstance(value, FloatLiteral):
        number = float(value)
        if texts is not None:
            texts[id(number)] = (number, value.text)
        return number
    return value


def decode_body(raw: bytes, *, yaml_ok: bool, literals: list[FloatLiteral] | None = None) -> Any:
    """Decode a request body (JSON, or YAML when ``yaml_ok`` and it is not JSON). With
    ``literals``, a JSON float whose text its ``repr`` would not give back is decoded as a
    :class:`FloatLiteral` and appended to ``literals``: the caller must pass the body through
    :func:`plain_floats` before it goes on when any was.

    Raises:
        StatusError: 400 for an empty or undecodable body, nesting deeper than
            :data:`MAX_DEPTH`, or excessive YAML aliasing; 413 when YAML expands beyond
            :data:`MAX_DECODED_BYTES`.
    """
    if not raw.strip():
        raise errors.bad_request("the request body is empty")
    decode_json = _decode_json if literals is None else _literal_decoder(literals)
    try:
        try:
            value = decode_json(raw)
        except msgspec.DecodeError as first:
            # Go's encoding/json reads a \u escape of a lone UTF-16 surrogate as U+FFFD; msgspec
            # refuses it. When that was the fault, the body decodes with the replacement (else the
            # first error is the one reported)
            fixed = _LONE_SURROGATE.sub(_replacement, raw) if b"\\u" in raw else raw
            if fixed == raw:
                raise
            try:
                value = decode_json(fixed)
            except msgspec.DecodeError:
                raise first from None
            raw = fixed
    except msgspec.DecodeError as e:
        if not yaml_ok:
            raise errors.bad_request(f"error decoding the request body as JSON: {e}") from None
        try:
            value = yamlsafe.safe_load(raw, max_depth=MAX_DEPTH, max_nodes=MAX_DECODED_BYTES // 2)
        except yamlsafe.YAMLLimitError as le:
            if le.kind == "size":
                raise StatusError(413, f"Request entity too large: limit is {MAX_DECODED_BYTES}",
                                  "RequestEntityTooLarge") from None
            raise errors.bad_request(f"error converting YAML to JSON: {le}") from None
        except yaml.YAMLError as ye:
            detail = yamlsafe.go_yaml_error(ye, raw.decode("utf-8", "replace"))
            raise errors.bad_request(f"error converting YAML to JSON: {detail}") from None
    except RecursionError:
        raise errors.bad_request(f"error decoding the request body as JSON: exceeded max depth of "
                                 f"{MAX_DEPTH}") from None
    else:
        if json_depth(raw) > MAX_DEPTH:
            raise errors.bad_request(f"error decoding the request body as JSON: exceeded max depth of {MAX_DEPTH}")
    return value


class _Pairs(dict[str, Any]):
    """A decoded JSON object that knows the paths of the duplicate keys inside it."""

    __slots__ = ("dups",)
    dups: list[str]


def _nested_dups(prefix: str, value: Any, out: list[str]) -> None:
    if type(value) is _Pairs:
        out.extend(prefix + "." + d if d[0] != "[" else prefix + d for d in value.dups)
    elif type(value) is list:
        for i, item in enumerate(value):
            _nested_dups(f"{prefix}[{i}]", item, out)


def _object_pairs(pairs: list[tuple[str, Any]]) -> _Pairs:
    obj = _Pairs(pairs)
    dups: list[str] = []
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, value in pairs:
            if key in seen:
                dups.append(key)
            seen.add(key)
            _nested_dups(key, value, dups)
    else:
        for key, value in pairs:
            if type(value) is _Pairs or type(value) is list:
                _nested_dups(key, value, dups)
    obj.dups = dups
    return obj


def _yaml_dups(root: yaml.Node) -> list[str]:
    out: list[str] = []
    done: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in done:
            continue
        done.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for k, _v in node.value:
                if isinstance(k, yaml.ScalarNode):
                    if k.value in seen:
                        out.append(f'line {k.start_mark.line + 1}: key "{k.value}" already set in map')
                    seen.add(k.value)
            stack.extend(v for pair in reversed(node.value) for v in reversed(pair))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
    return sorted(out, key=lambda m: int(m.split(":", 1)[0][5:]))


def _any_repeated(raw: bytes) -> bool:
    """Whether any JSON object in ``raw`` repeats a key (a cheap first pass: no paths kept)."""
    repeated = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeated
        obj = dict(items)
        if len(obj) != len(items):
            repeated = True
        return obj

    json.loads(raw, object_pairs_hook=pairs)
    return repeated


def duplicate_fields(raw: bytes) -> list[str]:
    """The repeated keys of a request body that :func:`decode_body` accepted, in document order:
    JSON ``duplicate field "<path>"`` (paths as ``a.b[0].c``), YAML ``line <n>: key "<k>" already
    set in map``. Decodes the body once more without paths (a JSON RayJob of 1.2 KB: 17 us,
    beside 7 us for :func:`decode_body`), and once again with paths only when a key repeats.

    Mirrors: sigs.k8s.io/json strict decoding (``duplicate field``), go-yaml v2 strict unmarshal
    (``already set in map``), as k8s.io/apimachinery's strict serializers report them.
    """
    try:
        if not _any_repeated(raw):
            return []
        value = json.loads(raw, object_pairs_hook=_object_pairs)
    except (ValueError, RecursionError):
        try:
            node = yamlsafe.compose(raw)
        except (yaml.YAMLError, RecursionError):
            return []
        return [] if node is None else _yaml_dups(node)
    out: list[str] = []
    if type(value) is _Pairs:
        out = [f'duplicate field "{d}"' for d in value.dups]
    return out


_OPTIONS_KIND = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions"}


def dry_run_values(query: Mapping[str, str], listed: list[str] | None = None) -> list[str]:
    """The ``dryRun`` option of a request, a list as in every write's options: ``listed`` (all the
    values of the query string, :func:`pumice.api.params.query_list`) when given, else the one
    value ``query`` keeps, else none. ``?dryRun=`` gives ``[""]``, which is refused."""
    if listed is not None:
        return listed
    v = query.get("dryRun")
    return [] if v is None else [v]


def dry_run_refused(values: list[str]) -> bool:
    """Whether ``values`` has one other than ``All`` (ValidateDryRun: ``All`` may repeat)."""
    return any(v != "All" for v in values)


def dry_run_cause(values: list[str]) -> dict[str, str]:
    """ValidateDryRun's cause for ``dryRun`` values other than ``All`` (the bad value printed as Go's
    ``%#v`` of a []string, as apimachinery 1.32's field errors print it)."""
    shown = "[]string{" + ", ".join(quote(v) for v in values) + "}"
    return {"reason": "FieldValueNotSupported", "field": "dryRun",
            "message": f'Unsupported value: {shown}: supported values: "All"'}


def options_invalid(kind: str, causes: list[dict[str, str]]) -> StatusError:
    """422 ``<kind>.meta.k8s.io "" is invalid: <field>: <error>`` (``[...]`` for several), each
    error a cause: a bad CreateOptions, UpdateOptions, PatchOptions or DeleteOptions."""
    parts = [f"{c['field']}: {c['message']}" for c in causes]
    body = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return StatusError(422, f'{kind}.meta.k8s.io "" is invalid: {body}', "Invalid",
                       {"group": "meta.k8s.io", "kind": kind, "causes": causes})
_FIELD_VALIDATION = ("", "Ignore", "Strict", "Warn")


#: subresources whose requests are long-running (no request deadline), as kube-apiserver's
#: BasicLongRunningRequestCheck; the verbs are watch and proxy
_LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "proxy", "log", "portforward"})


def check_request_timeout(method: str, path: str, query: Mapping[str, str]) -> None:
    """The ``timeout`` query parameter of a request that is not long-running (not a watch, a
    proxy, exec, attach, port-forward or log request) must be a Go duration.

    Mirrors: apiserver pkg/endpoints/filters/request_deadline.go parseTimeout.

    Raises:
        StatusError: 400 ``invalid timeout specified in the request URL - time: invalid duration
            "abc"``.
    """
    value = query.get("timeout")
    if not value:
        return
    try:
        parse_go_duration_ns(value)
    except ValueError as e:
        a = request_attributes(_NOBODY, method, path, query)
        if a.verb in ("watch", "proxy") or a.subresource in _LONG_RUNNING_SUBRESOURCES:
            return
        raise errors.bad_request(f"invalid timeout specified in the request URL - {e}") from None


def check_query(method: str, query: Mapping[str, str], patch_type: str | None = None,
                dry_run: list[str] | None = None) -> None:
    """Write options checked before a request is routed, as kube-apiserver checks them (a read's
    ``resourceVersion`` is checked where the read is served: :func:`check_resource_version`):
    CreateOptions, UpdateOptions, PatchOptions (``patch_type`` from the Content-Type, None when
      it is not a patch type: the 415 comes later), 422 ``PatchOptions.meta.k8s.io "" is invalid:
      <field>: <error>`` (``[<error>, <error>]`` for several), each error a cause, in upstream's
      order: an apply patch without ``fieldManager`` (``fieldManager: Required value: is required
      for apply patch``); ``force`` on any other patch (``force: Forbidden: may not be specified
      for non-apply patch``); a ``fieldManager`` longer than 128 bytes or with an unprintable
      character (:func:`pumice.api.apply.field_manager_errors`); a ``fieldValidation`` other than
      ``Ignore``, ``Warn``, ``Strict`` or empty (``fieldValidation: Unsupported value: ...``);
      between those two (upstream's order), a ``dryRun`` value other than ``All``
      (:func:`dry_run_cause`; ``dry_run`` is every value of a repeated ``dryRun``, see
      :func:`dry_run_values`).

    Mirrors: k8s.io/apimachinery pkg/apis/meta/v1/validation ValidateCreateOptions,
    ValidateUpdateOptions, ValidatePatchOptions, ValidateFieldManager, ValidateFieldValidation.

    Raises:
        StatusError: as above.
    """
    if method in _OPTIONS_KIND:
        causes: list[dict[str, str]] = []
        manager = query.get("fieldManager", "")
        if method == "PATCH" and patch_type == "apply":
            if not manager:
                causes.append({"reason": "FieldValueRequired", "message": "Required value: is required for apply patch",
                               "field": "fieldManager"})
        elif method == "PATCH" and patch_type is not None and "force" in query:
            causes.append({"reason": "FieldValueForbidden",
                           "message": "Forbidden: may not be specified for non-apply patch", "field": "force"})
        causes += [{"reason": r, "message": m, "field": "fieldManager"} for r, m in field_manager_errors(manager)]
        dry = dry_run_values(query, dry_run)
        if dry_run_refused(dry):
            causes.append(dry_run_cause(dry))
        fv = query.get("fieldValidation")
        if fv is not None and fv not in _FIELD_VALIDATION:
            supported = ", ".join(f'"{v}"' for v in _FIELD_VALIDATION)
            causes.append({"reason": "FieldValueNotSupported", "field": "fieldValidation",
                           "message": f'Unsupported value: "{fv}": supported values: {supported}'})
        if causes:
            raise options_invalid(_OPTIONS_KIND[method], causes)


def parse_resource_version(rv: str | None) -> int:
    """A requested ``resourceVersion`` as the storage reads it: 0 when absent, ``""`` or ``"0"``,
    else a uint64 (``strconv.ParseUint``: digits only, so ``+5``, `` 5`` and ``5_0`` are refused).

    Raises:
        ValueError: the storage's field error, ``resourceVersion: Invalid value: "abc":
            strconv.ParseUint: parsing "abc": invalid syntax``.

    Mirrors: k8s.io/apiserver pkg/storage/api_object_versioner.go ParseResourceVersion.
    """
    if rv is None or rv in ("", "0"):
        return 0
    try:
        return parse_uint(rv)
    except ValueError as e:
        raise ValueError(f"resourceVersion: Invalid value: {quote(rv)}: {e}") from None


def object_resource_version(rv: Any) -> int:
    """An object's ``metadata.resourceVersion`` as the storage reads it on a write: 0 when unset
    or empty, else a uint64.

    Raises:
        ValueError: Go's text, ``strconv.ParseUint: parsing "abc": invalid syntax``.

    Mirrors: k8s.io/apiserver pkg/storage/api_object_versioner.go ObjectResourceVersion.
    """
    if rv is None or rv == "":
        return 0
    return parse_uint(str(rv))


def check_resource_version(query: Mapping[str, str], revision: int, *, listing: bool) -> int:
    """The ``resourceVersion`` of a read (GET of an object or its status, a list, a watch, the
    list of a DELETE of a collection), checked as the storage checks it: 0 when not given.

    Raises:
        StatusError: 400 BadRequest for a value :func:`parse_resource_version` refuses: a list's
            ``invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint:
            ...`` (the storage's ValidateListOptions); for a get or a watch the field error alone.
            504 :func:`pumice.apiserver.errors.too_large_resource_version` for a version newer
            than the store's ``revision`` (the watch cache's answer once it has waited for the
            version; pumice's store is the only source of versions, so a newer one cannot arrive
            and the answer is immediate: apiserver pkg/storage/errors.go
            NewTooLargeResourceVersionError).

    Deviates: for a get or a watch kube-apiserver passes the storage's error on as it is, so the
    client sees a 500 with no reason and the same message; pumice answers bad input with a 4xx.
    Mirrors: k8s.io/apiserver pkg/storage/interfaces.go ValidateListOptions, cacher Get and Watch.
    """
    try:
        wanted = parse_resource_version(query.get("resourceVersion"))
    except ValueError as e:
        raise errors.bad_request(f"invalid resource version: {e}" if listing else str(e)) from None
    if wanted > revision:
        raise errors.too_large_resource_version(wanted, revision)
    return wanted

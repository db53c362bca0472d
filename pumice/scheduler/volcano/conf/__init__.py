"""volcano-scheduler.conf: the scheduler configuration and its loader.

The file format is upstream's: ``actions`` (a comma-separated string run in order each cycle),
``tiers`` (each a list of ``plugins`` with ``name``, extension-point switches such as
``enablePreemptable`` and ``arguments``), ``configurations`` (per-action ``arguments``) and
``metrics``. A ConfigMap manifest whose ``data`` holds ``volcano-scheduler.conf`` is accepted too.

Loading applies upstream's defaults: every unset switch is on, except ``enableHierarchy`` and
``enabledClusterOrder``. Configurations built in code (tests) keep exactly the switches given.

Errors: :class:`ConfigError` (a ValueError) with one line naming the source and the field; an
unknown action or plugin lists the known names. A plugin or action argument no plugin reads is not
an error (upstream's ``arguments`` is a free map), nor is a value of the wrong type for an
upstream plugin or action (upstream logs it and keeps the default): each is ignored and named in
:attr:`SchedulerConfiguration.warnings`, which whoever runs or replays the configuration logs or
prints.

Mirrors: volcano pkg/scheduler/conf/scheduler_conf.go, pkg/scheduler/util.go (loader,
DefaultSchedulerConf), pkg/scheduler/plugins/defaults.go.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from pumice._util.files import InputFileError, read_text_file
from pumice.api import yamlsafe

SWITCH_KEYS: tuple[str, ...] = (
    "enableJobOrder",
    "enableHierarchy",
    "enableJobReady",
    "enableJobPipelined",
    "enableTaskOrder",
    "enablePreemptable",
    "enableReclaimable",
    "enablePreemptive",
    "enableQueueOrder",
    "enabledClusterOrder",
    "enablePredicate",
    "enableBestNode",
    "enableNodeOrder",
    "enableTargetJob",
    "enableReservedNodes",
    "enableJobEnqueued",
    "enabledVictim",
    "enableJobStarving",
    "enabledOverused",
    "enabledAllocatable",
    "enabledHyperNodeOrder",
    "enabledSubJobReady",
    "enabledSubJobPipelined",
    "enabledSubJobOrder",
    "enabledHyperNodeGradient",
)
"""Every extension-point switch key, spelled as upstream's YAML tags."""

_OFF_BY_DEFAULT = frozenset({"enableHierarchy", "enabledClusterOrder"})

DEFAULT_SCHEDULER_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""
"""The configuration compiled into the upstream binary (used when no file is given)."""

CONF_KEY = "volcano-scheduler.conf"

CONFIG_MAP_NAMESPACE = "volcano-system"
CONFIG_MAP_NAME = "volcano-scheduler-configmap"
"""Where upstream's install keeps the scheduler configuration (key :data:`CONF_KEY`); pumice's
scheduler reads it there (or publishes its ``--scheduler-conf`` file there), and ``pumice explain``
and the web UI read back what it runs (:data:`CONF_IN_USE_ANNOTATION`)."""

CONF_IN_USE_ANNOTATION = "scheduling.pumice.io/conf-in-use"
"""Annotation of that ConfigMap: the volcano-scheduler.conf text the scheduler runs now, written
by the scheduler (it differs from :data:`CONF_KEY` while an edit of the ConfigMap is not applied
yet, or was refused)."""


class ConfigError(ValueError):
    """A configuration that cannot be loaded; the message is one line naming source and field."""


@dataclass(frozen=True)
class PluginOption:
    """One plugin entry of a tier. ``switches`` holds only the keys that are set (True/False);
    :meth:`enabled` answers False for an unset key (upstream ``isEnabled(nil)``)."""

    name: str
    switches: Mapping[str, bool] = field(default_factory=dict)
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def enabled(self, key: str) -> bool:
        return bool(self.switches.get(key, False))

    @cached_property
    def parsed(self) -> Any:
        """The plugin's arguments struct, parsed once (raises ``ArgumentError``)."""
        from pumice.scheduler.volcano.plugins import PLUGINS

        return PLUGINS[self.name].parse(self.arguments)

    @classmethod
    def all_on(cls, name: str, arguments: Mapping[str, Any] | None = None, **switches: bool) -> PluginOption:
        """An option with upstream's loader defaults applied (every switch on but hierarchy)."""
        sw = {k: k not in _OFF_BY_DEFAULT for k in SWITCH_KEYS}
        sw.update(switches)
        return cls(name, sw, dict(arguments or {}))


@dataclass(frozen=True)
class Tier:
    plugins: tuple[PluginOption, ...]


@dataclass(frozen=True)
class Configuration:
    """Per-action arguments (``configurations`` entries)."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SchedulerConfiguration:
    actions: tuple[str, ...]
    tiers: tuple[Tier, ...]
    configurations: tuple[Configuration, ...] = ()
    metrics: Mapping[str, str] = field(default_factory=dict)
    warnings: tuple[str, ...] = field(default=(), compare=False)
    """One line per ignored argument (``<source>: tiers[0].plugins[1] (gang): arguments: unknown
    argument 'gang.bogus' ignored``), set by :func:`parse_conf`."""

    def action_arguments(self, name: str) -> Mapping[str, Any]:
        for c in self.configurations:
            if c.name == name:
                return c.arguments
        return {}

    @cached_property
    def parsed_action_arguments(self) -> Mapping[str, Any]:
        """Action name -> its arguments struct, for every configured action (parsed once).

        Raises:
            ArgumentError: never for an action's arguments (upstream's: a wrong type keeps the default).
        """
        from pumice.scheduler.volcano.actions import ACTIONS

        names = list(dict.fromkeys([*self.actions, *(c.name for c in self.configurations)]))
        return {n: ACTIONS[n].parse_arguments(self.action_arguments(n)) for n in names}

    def plugin_names(self) -> list[str]:
        return [p.name for t in self.tiers for p in t.plugins]


def _known(kind: str) -> list[str]:
    if kind == "action":
        from pumice.scheduler.volcano.actions import ACTIONS

        return sorted(ACTIONS)
    from pumice.scheduler.volcano.plugins import PLUGINS

    return sorted(PLUGINS)


def parse_conf(text: str, *, source: str = "<config>", apply_defaults: bool = True) -> SchedulerConfiguration:
    """Parse volcano-scheduler.conf text (or a ConfigMap carrying it).

    Raises:
        ConfigError: YAML errors, wrong shapes, unknown actions/plugins/switches, duplicate plugin
            names in one tier, drf hierarchy together with proportion in one tier, or plugin
            arguments that the plugin rejects (a wrong type for one of pumice's own plugins, a
            value its own check refuses; an unknown key, or a wrong type for an upstream plugin,
            is only a warning, see :attr:`SchedulerConfiguration.warnings`).
    """
    try:
        doc = yamlsafe.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{source}: invalid YAML: {str(e).splitlines()[0]}") from e
    if isinstance(doc, dict) and doc.get("kind") == "ConfigMap":
        data = doc.get("data") or {}
        if CONF_KEY not in data:
            raise ConfigError(f"{source}: ConfigMap has no data[{CONF_KEY!r}]")
        return parse_conf(str(data[CONF_KEY]), source=f"{source}: data[{CONF_KEY}]", apply_defaults=apply_defaults)
    if not isinstance(doc, dict):
        raise ConfigError(f"{source}: expected a mapping with 'actions' and 'tiers'")
    unknown_top = set(doc) - {"actions", "tiers", "configurations", "metrics"}
    if unknown_top:
        raise ConfigError(f"{source}: unknown field {sorted(unknown_top)[0]!r}")
    actions = _parse_actions("" if doc.get("actions") is None else doc["actions"], source)
    raw_tiers = doc.get("tiers") or []
    if not isinstance(raw_tiers, list):
        raise ConfigError(f"{source}: field 'tiers' must be a list")
    tiers = [_parse_tier(raw, f"{source}: tiers[{ti}]", apply_defaults) for ti, raw in enumerate(raw_tiers)]
    raw_confs = doc.get("configurations") or []
    if not isinstance(raw_confs, list):
        raise ConfigError(f"{source}: field 'configurations' must be a list")
    metrics = doc.get("metrics") or {}
    if not isinstance(metrics, dict):
        raise ConfigError(f"{source}: field 'metrics' must be a mapping")
    confs = [_parse_configuration(rc, f"{source}: configurations[{ci}]") for ci, rc in enumerate(raw_confs)]
    conf = SchedulerConfiguration(actions, tuple(tiers), tuple(confs), dict(metrics))
    warnings = validate_arguments(conf, source=source)
    if not warnings:
        return conf
    from pumice.scheduler.volcano.framework.arguments import ignored_arguments

    conf = replace(conf, warnings=warnings)
    with ignored_arguments():  # reported above
        conf.parsed_action_arguments  # noqa: B018 - parse once now, so sessions never do
    return conf


def _parse_actions(actions_s: Any, source: str) -> tuple[str, ...]:
    """The ``actions`` string as names, each a registered action.

    Every comma-separated item, trimmed, must name a registered action: an empty or missing
    ``actions``, and an empty item (``"enqueue,,allocate"``, a trailing comma), are errors, as in
    upstream's loader (pkg/scheduler/util.go UnmarshalSchedulerConf: ``failed to find Action``),
    since a configuration that runs no action would schedule nothing.
    """
    if not isinstance(actions_s, str):
        raise ConfigError(f"{source}: field 'actions' must be a comma-separated string")
    actions = tuple(a.strip() for a in actions_s.split(","))
    known_actions = _known("action")
    for i, a in enumerate(actions):
        if not a:
            what = "no actions" if len(actions) == 1 else f"an empty action name at item {i + 1} of {actions_s!r}"
            raise ConfigError(f"{source}: actions: {what}; give a comma-separated list of: {', '.join(known_actions)}")
        if a not in known_actions:
            raise ConfigError(f"{source}: actions: unknown action {a!r}; known actions: {', '.join(known_actions)}")
    return actions


def _parse_tier(raw: Any, where: str, apply_defaults: bool) -> Tier:
    """One tier: its plugins (unique names), and not proportion beside a hierarchical drf."""
    if not isinstance(raw, dict) or not isinstance(raw.get("plugins") or [], list):
        raise ConfigError(f"{where}: expected a mapping with a 'plugins' list")
    opts: list[PluginOption] = []
    seen: set[str] = set()
    for pi, rp in enumerate(raw.get("plugins") or []):
        name = _plugin_name(rp, f"{where}.plugins[{pi}]")
        if name in seen:
            raise ConfigError(f"{where}.plugins[{pi}]: duplicate plugin {name!r} in one tier")
        seen.add(name)
        opts.append(_parse_plugin_option(rp, name, f"{where}.plugins[{pi}]", apply_defaults))
    names = {o.name for o in opts}
    if "proportion" in names and any(o.name == "drf" and o.enabled("enableHierarchy") for o in opts):
        raise ConfigError(f"{where}: proportion and drf with enableHierarchy cannot be in one tier")
    return Tier(tuple(opts))


def _plugin_name(rp: Any, where: str) -> str:
    """A plugin entry's name, which must be registered."""
    if not isinstance(rp, dict) or not isinstance(rp.get("name"), str):
        raise ConfigError(f"{where}: expected a mapping with a 'name'")
    name: str = rp["name"]
    known_plugins = _known("plugin")
    if name not in known_plugins:
        raise ConfigError(f"{where}: unknown plugin {name!r}; known plugins: {', '.join(known_plugins)}")
    return name


def _parse_plugin_option(rp: dict[str, Any], name: str, where: str, apply_defaults: bool) -> PluginOption:
    """A plugin entry's boolean switches (defaulted unless ``apply_defaults`` is false) and its
    ``arguments`` mapping (parsed later by the plugin)."""
    sw: dict[str, bool] = {}
    for k, v in rp.items():
        if k in ("name", "arguments"):
            continue
        if k not in SWITCH_KEYS:
            raise ConfigError(f"{where} ({name}): unknown field {k!r}")
        if not isinstance(v, bool):
            raise ConfigError(f"{where} ({name}): field {k!r} must be true or false, got {v!r}")
        sw[k] = v
    if apply_defaults:
        for k in SWITCH_KEYS:
            sw.setdefault(k, k not in _OFF_BY_DEFAULT)
    args = rp.get("arguments") or {}
    if not isinstance(args, dict):
        raise ConfigError(f"{where} ({name}): field 'arguments' must be a mapping")
    return PluginOption(name, sw, dict(args))


def _parse_configuration(rc: Any, where: str) -> Configuration:
    """One ``configurations`` entry: a registered action's name and its ``arguments`` mapping."""
    if not isinstance(rc, dict) or not isinstance(rc.get("name"), str):
        raise ConfigError(f"{where}: expected a mapping with a 'name'")
    known_actions = _known("action")
    if rc["name"] not in known_actions:
        raise ConfigError(f"{where}: unknown action {rc['name']!r}; known actions: {', '.join(known_actions)}")
    cargs = rc.get("arguments") or {}
    if not isinstance(cargs, dict):
        raise ConfigError(f"{where} ({rc['name']}): field 'arguments' must be a mapping")
    return Configuration(rc["name"], dict(cargs))


def validate_arguments(conf: SchedulerConfiguration, *, source: str = "<config>") -> tuple[str, ...]:
    """Parse every plugin's and action's arguments once, so a refused one fails at load.

    Returns:
        one warning line per ignored argument: an unknown key (upstream's plugins read only the
        keys they know from the free ``arguments`` map), or a value of the wrong type of an
        upstream plugin or action, whose default is used (upstream's GetInt/GetBool log it).
    Raises:
        ConfigError: an argument of the wrong type of one of pumice's own plugins, or one a
            plugin's own check refuses (the line names source, plugin and key).
    """
    from pumice.scheduler.volcano.actions import ACTIONS
    from pumice.scheduler.volcano.framework.arguments import ArgumentError, ignored_arguments
    from pumice.scheduler.volcano.plugins import PLUGINS

    warnings: list[str] = []
    for ti, tier in enumerate(conf.tiers):
        for pi, opt in enumerate(tier.plugins):
            where = f"{source}: tiers[{ti}].plugins[{pi}] ({opt.name})"
            with ignored_arguments() as ignored:
                try:
                    PLUGINS[opt.name].build(opt.parsed)
                except ArgumentError as e:
                    raise ConfigError(f"{where}: arguments: {e}") from e
            warnings += [f"{where}: arguments: {line}" for line in ignored]
    for ci, c in enumerate(conf.configurations):
        where = f"{source}: configurations[{ci}] ({c.name})"
        with ignored_arguments() as ignored:
            try:
                ACTIONS[c.name].parse_arguments(c.arguments)
            except ArgumentError as e:
                raise ConfigError(f"{where}: arguments: {e}") from e
        warnings += [f"{where}: arguments: {line}" for line in ignored]
    with ignored_arguments():  # reported above
        conf.parsed_action_arguments  # noqa: B018 - parse once now, so sessions never do
    return tuple(warnings)


def load_conf(text_or_path: str | Path) -> SchedulerConfiguration:
    """Load a configuration from a path (when it names an existing file) or from YAML text.

    Raises:
        ConfigError: see :func:`parse_conf`; also an unreadable file.
    """
    if isinstance(text_or_path, Path) or ("\n" not in text_or_path and _is_file(text_or_path)):
        p = Path(text_or_path)
        try:
            text = read_text_file(p)
        except InputFileError as e:
            raise ConfigError(str(e)) from e
        except OSError as e:
            raise ConfigError(f"{p}: cannot read: {e.strerror}") from e
        return parse_conf(text, source=str(p))
    return parse_conf(text_or_path)


def _is_file(text: str) -> bool:
    try:
        return Path(text).is_file()
    except (OSError, ValueError):  # a one-line document too long for a file name, or with a NUL
        return False


def configmap_text(text: str) -> str:
    """The volcano-scheduler.conf text inside ``text``: ``data[CONF_KEY]`` when ``text`` is a
    ConfigMap manifest, else ``text`` itself (invalid YAML is returned as is; parse it first)."""
    try:
        doc = yamlsafe.safe_load(text)
    except yaml.YAMLError:
        return text
    if isinstance(doc, dict) and doc.get("kind") == "ConfigMap":
        return str((doc.get("data") or {}).get(CONF_KEY, ""))
    return text


def default_conf() -> SchedulerConfiguration:
    """The compiled-in default configuration, loader defaults applied."""
    return parse_conf(DEFAULT_SCHEDULER_CONF, source="<builtin default>")


def build_conf(
    actions: Iterable[str],
    tiers: Iterable[Iterable[PluginOption | str]],
    configurations: Mapping[str, Mapping[str, Any]] | None = None,
) -> SchedulerConfiguration:
    """A configuration built in code (tests): a plain name means every switch on."""
    ts = []
    for tier in tiers:
        ts.append(Tier(tuple(PluginOption.all_on(p) if isinstance(p, str) else p for p in tier)))
    confs = tuple(Configuration(k, dict(v)) for k, v in (configurations or {}).items())
    return SchedulerConfiguration(tuple(actions), tuple(ts), confs)


__all__ = [
    "CONFIG_MAP_NAME",
    "CONFIG_MAP_NAMESPACE",
    "CONF_IN_USE_ANNOTATION",
    "CONF_KEY",
    "DEFAULT_SCHEDULER_CONF",
    "SWITCH_KEYS",
    "ConfigError",
    "Configuration",
    "PluginOption",
    "SchedulerConfiguration",
    "Tier",
    "build_conf",
    "configmap_text",
    "default_conf",
    "load_conf",
    "parse_conf",
]

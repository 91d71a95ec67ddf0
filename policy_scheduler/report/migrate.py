"""The migrate report's data: how each Policy entry carries over (counted by status), and the configuration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from ..migration.migrate import refused_by_strict
from ..migration.table import STATUS_MEANINGS, entry_kind, to_text
from .common import Card, Page, extras, plural
from .tables import Column, Table

KNOWN_KEYS = ("kind", "source", "target", "configuration", "mapping")
#: A card's colour per status: what carries over as it was, and what does not.
TONES = {"exact": "good", "dropped": "bad"}


def status_counts(mapping: list[Mapping[str, Any]]) -> dict[str, int]:
    """Entries per status: the four known ones in order (zeros included), then any a newer version adds."""
    counts = dict.fromkeys(STATUS_MEANINGS, 0)
    for entry in mapping:
        status = str(entry.get("status") or "")
        counts[status] = counts.get(status, 0) + 1
    return counts


def mapping_table(mapping: list[Mapping[str, Any]]) -> Table:
    table = Table("mapping", [
        Column("From"), Column("Kind"), Column("Status", "badge"), Column("To (v1)", pooled=True, wide=True),
        Column("Note", pooled=True, wide=True), Column("", "class"),
    ], presets=[(status, status) for status in STATUS_MEANINGS], page_size=100, empty="The mapping is empty.")
    for entry in mapping:
        status = str(entry.get("status") or "")
        to = "\n".join(to_text(item) for item in entry.get("to") or ())  # one line each (pre-line cells)
        table.rows.append([str(entry.get("from") or ""), entry_kind(entry), status, table.pool.ref(to),
                           table.pool.ref(str(entry.get("note") or "")), status])
    return table


def cards(counts: dict[str, int]) -> list[Card]:
    return [Card(status.capitalize(), f"{n:,}", STATUS_MEANINGS.get(status, ""), TONES.get(status, "") if n else "")
            for status, n in counts.items()]


def configuration_yaml(configuration: Any) -> str:
    """The configuration as ``-o yaml`` prints it (keys in their order)."""
    return yaml.safe_dump(configuration, sort_keys=False, allow_unicode=True) if configuration else ""


def context(data: Mapping[str, Any]) -> dict[str, Any]:
    """Everything ``migrate.html.j2`` shows."""
    mapping = [e for e in data.get("mapping") or () if isinstance(e, Mapping)]
    counts = status_counts(mapping)
    source, target = str(data.get("source") or "the policy"), str(data.get("target") or "?")
    configuration = data.get("configuration") or {}
    profiles = [p for p in configuration.get("profiles") or () if isinstance(p, Mapping)]
    names = ", ".join(str(p.get("schedulerName", "default-scheduler")) for p in profiles)
    page = Page("migrate", f"{source} → kube-scheduler {target}",
                f"{configuration.get('apiVersion', 'kubescheduler.config.k8s.io/v1')} "
                f"{configuration.get('kind', 'KubeSchedulerConfiguration')}"
                + (f" · schedulerName {names}" if names else "") + f" · {plural(len(mapping), 'mapping entry', 'mapping entries')}",
                cards(counts))
    table = mapping_table(mapping)
    page.tables[table.id] = table
    extras(data, KNOWN_KEYS, page)
    return {
        "page": page, "source": source, "target": target, "counts": counts, "meanings": STATUS_MEANINGS,
        "strict_refuses": sum(refused_by_strict(str(e.get("status")), str(e.get("kind"))) for e in mapping),
        "configuration_yaml": configuration_yaml(configuration),
    }

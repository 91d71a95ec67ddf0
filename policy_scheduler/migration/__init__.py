"""``policy-scheduler migrate``: a 1.9 Policy (or provider) as a ``kubescheduler.config.k8s.io/v1``
KubeSchedulerConfiguration for a modern kube-scheduler (1.25 … 1.36), with a mapping entry per Policy
entry saying how faithfully it carries over (``migration.md``; ``docs/migration.md``).

``versions`` knows the targets' plugins, ``rules`` the per-name mapping, ``extenders`` the extender
fields, ``configuration`` assembles the profile, and ``migrate`` walks the algorithm.
"""

from __future__ import annotations

from .migrate import MappingEntry, Migration, migrate
from .rules import STATUSES
from .versions import SUPPORTED, Target, parse_target

__all__ = ["STATUSES", "SUPPORTED", "MappingEntry", "Migration", "Target", "migrate", "parse_target"]

"""Dynamic Resource Allocation objects (``resource.k8s.io/v1``), parsed once.

A device's attribute is one of four kinds, as ``resourceapi.DeviceAttribute`` has them (``bool``, ``int``,
``string``, ``version``: a semantic version kept as its text); CEL selectors read them through
:mod:`policy_scheduler.dra.cel`.
"""

from __future__ import annotations

from dataclasses import dataclass

#: ``DeviceAttribute``'s one-of fields, in the API's order.
ATTRIBUTE_KINDS = ("int", "bool", "string", "version")


@dataclass(frozen=True, slots=True)
class DeviceAttribute:
    """One attribute value of a device: ``kind`` is one of :data:`ATTRIBUTE_KINDS`."""

    kind: str
    value: bool | int | str

"""Storage-class lookups shared by the volume predicates (VolumeScheduling, alpha in 1.9)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..cache.cluster import ListerError
from ..errors import PredicateError

if TYPE_CHECKING:
    from ..cache.cluster import ClusterState

VOLUME_BINDING_WAIT = "WaitForFirstConsumer"


def delays_binding(cluster: ClusterState, class_name: str) -> bool:
    """True when ``class_name`` names a WaitForFirstConsumer StorageClass (``shouldDelayBinding``).

    An absent name or class binds immediately; a class without a binding mode is an error.
    """
    if not class_name:
        return False
    try:
        storage_class = cluster.get_storage_class(class_name)
    except ListerError:
        return False
    if storage_class.volume_binding_mode is None:
        raise PredicateError(f'VolumeBindingMode not set for StorageClass "{class_name}"')
    return storage_class.volume_binding_mode == VOLUME_BINDING_WAIT

"""Scheduler Policy (v1): types, loading (JSON, YAML, file, ConfigMap), validation and lint.

See ``policy_scheduler.api.loader`` for the exact decoding rules (Kubernetes 1.9, plus YAML).
"""

from .lint import GENERAL_PREDICATES_MEMBERS, lint_policy
from .loader import (
    PolicyDecodeError,
    load_policy,
    load_policy_file,
    load_policy_from_configmap,
    policy_from_dict,
    policy_schema,
)
from .names import (
    ALGORITHM_NAME_REGEXP,
    algorithm_name_message,
    is_valid_algorithm_name,
    validate_algorithm_name,
)
from .types import (
    MAX_INT,
    MAX_PRIORITY,
    MAX_TOTAL_PRIORITY,
    MAX_WEIGHT,
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
from .validation import (
    PolicyValidationError,
    aggregate_message,
    check_arguments,
    check_hard_pod_affinity_weight,
    check_policy,
    unknown_names,
    validate_policy,
)

__all__ = [
    "ALGORITHM_NAME_REGEXP",
    "GENERAL_PREDICATES_MEMBERS",
    "MAX_INT",
    "MAX_PRIORITY",
    "MAX_TOTAL_PRIORITY",
    "MAX_WEIGHT",
    "SCHEDULER_POLICY_CONFIG_MAP_KEY",
    "ExtenderConfig",
    "ExtenderManagedResource",
    "LabelPreferenceArgs",
    "LabelsPresenceArgs",
    "Policy",
    "PolicyDecodeError",
    "PolicyValidationError",
    "PredicateArgument",
    "PredicatePolicy",
    "PriorityArgument",
    "PriorityPolicy",
    "ServiceAffinityArgs",
    "ServiceAntiAffinityArgs",
    "TLSConfig",
    "aggregate_message",
    "algorithm_name_message",
    "check_arguments",
    "check_hard_pod_affinity_weight",
    "check_policy",
    "is_valid_algorithm_name",
    "lint_policy",
    "load_policy",
    "load_policy_file",
    "load_policy_from_configmap",
    "policy_from_dict",
    "policy_schema",
    "unknown_names",
    "validate_algorithm_name",
    "validate_policy",
]

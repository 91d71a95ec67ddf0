"""policy-scheduler: the Kubernetes 1.9 predicate/priority scheduling policy engine."""

__version__ = "0.1.0"

"""Dynamic Resource Allocation (``resource.k8s.io/v1``): the allocator, its CEL environment and the model.

:mod:`policy_scheduler.dra.cel` compiles and evaluates device selectors as upstream's
``k8s.io/dynamic-resource-allocation/cel`` does (docs/dra-cel.md: the library chosen and every deviation).
"""

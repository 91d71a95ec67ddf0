"""The daemon (``policy-scheduler run``) and its loop: start-up, leader election and shutdown
(:mod:`.lifecycle`, :mod:`.leaderelection`), what informer events do to the cache and the queue
(:mod:`.eventhandlers`), the scheduling loop and what it writes back: binds, volume bindings, preemption,
events and conditions, and re-queueing after back-off."""

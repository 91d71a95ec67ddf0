"""The daemon's configuration: ``run``'s flags (kube-scheduler 1.9's and upstream's serving flags), the
``--config`` file, their values checked into :class:`~.options.SchedulerConfiguration` and
:class:`~.serving_options.ServingOptions`, and the Go syntaxes and TLS names they are written in."""

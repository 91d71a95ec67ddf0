"""An example HTTP scheduler extender (see ``server.py`` and ``docs/extenders.md``)."""

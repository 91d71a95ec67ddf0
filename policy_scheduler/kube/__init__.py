"""Everything that talks to a live cluster: :mod:`.client` (the API connection and its reads), :mod:`.config`
(``run``'s flags and ``--config`` file), :mod:`.serving` (the daemon's HTTP endpoints and their security),
:mod:`.daemon` (the daemon and its scheduling loop) and :mod:`.metrics`, which all of them report to."""

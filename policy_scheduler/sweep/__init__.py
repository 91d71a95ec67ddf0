"""``policy-scheduler sweep``: many snapshots x many algorithms x many what-if scenarios, one row per cell, on
this machine's cores or on a Dask cluster (docs/sweep.md).

``spec`` reads and checks the YAML specification (``spec.schema.json``), ``scenarios`` changes a snapshot
before it is scheduled, ``metrics`` measures what ``simulate`` / ``capacity`` returned, ``cells`` plans the
cells and runs one on a worker, ``executors`` fans them out through a ``concurrent.futures.Executor`` (a local
process pool, or Dask's ``Client.get_executor()``), ``results`` prints and saves the rows, ``cli`` is the
command.
"""

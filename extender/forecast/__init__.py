"""When will my job start: the pure parts of pumice's forecast.

- :mod:`~extender.forecast.runtimes`: how long jobs run, learned from those that finished (per job name,
  namespace and queue, with its spread), and a group's expected runtime (its annotation first);
- :mod:`~extender.forecast.positions`: each waiting group's place in its queue and in the cluster, in the
  order the allocate action takes turns (the session's own order keys, lines and turns);
- :mod:`~extender.forecast.model`: what a forecast says of each group (start, range, why), and the wait
  buckets the metrics count by;
- :mod:`~extender.forecast.condition`: the ``StartEstimate`` condition the status writer keeps on a
  waiting PodGroup, written and read back (the CLI reads it), and when it changed enough to be written.

No I/O and no clock here: every time is passed in. Running the scheduler forward to find the starts is
the simulator's (``controllers/simulate/forecast.py``); running that off the scheduling path is
``controllers/forecast``.
"""

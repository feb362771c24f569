"""The forecast in ``pumice serve``: off the scheduling path, bounded, and where users read it.

- :mod:`~controllers.forecast.finished`: runtimes learned from Volcano Jobs seen completed (the jobs
  watch), into the pure :class:`~extender.forecast.runtimes.RuntimeBook`;
- :mod:`~controllers.forecast.inputs`: what a forecast starts from, taken from the cache on the event
  loop (each group's expected runtime and start);
- :mod:`~controllers.forecast.runner`: :class:`~controllers.forecast.runner.Forecaster`, which runs the
  simulator's :func:`~controllers.simulate.forecast.forecast` off the event loop at most every
  ``--forecast-interval`` seconds and only when something changed, and keeps the latest;
- :mod:`~controllers.forecast.worker`: where it runs by default, a worker process
  (:class:`~controllers.forecast.worker.ForecastProcess`: another core, its own GIL, replaced if it dies);
- :mod:`~controllers.forecast.access`: who may read which namespace's forecasts, asked of the API
  server (TokenReview, then SubjectAccessReview for ``get podgroups``).

The status writer shows the latest forecast on each waiting PodGroup (its ``StartEstimate`` condition),
the composition root serves it over HTTP and as metrics; none of them imports this package (they are
handed its callables), and nothing in the scheduling room does.
"""

"""Leader election among ``pumice serve`` replicas: one leader plans, binds and reconciles; the others stand
by warm (informers, cache, store and ledger in sync) and forward the extender verbs to it.

- :mod:`~controllers.leader.record`: the Lease as pumice reads and writes it (pure);
- :mod:`~controllers.leader.decide`: acquire, renew, stand by or step down, from the record, the local clock
  and the settings (pure, table-tested);
- :mod:`~controllers.leader.elector`: the thin async loop around the decision (the Lease's I/O, its watch)
  and :class:`~controllers.leader.elector.Leadership`, what the rest of the process asks ("do I lead?");
- :mod:`~controllers.leader.fence`: the one check every leader-only write passes (the scheduling room's
  ``Executor`` and the reconcilers' client, wrapped);
- :mod:`~controllers.leader.terms`: the leader-only tasks, started when a term begins and stopped when it
  ends.
"""

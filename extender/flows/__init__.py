"""The pure workflow core: Volcano's JobFlow, JobTemplate (``flow.volcano.sh/v1alpha1``) and CronJob
(``batch.volcano.sh/v1alpha1``). No I/O, no clock: every function takes ``now``."""

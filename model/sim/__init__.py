"""The protocol-independent simulation layer the cluster actors are built on.

* ``rng``: stable seed derivation, named random streams, delay distributions;
* ``timers``: ``Scheduler``, a SimPy environment with cancellable timers merged into its loop;
* ``network``: endpoints, per-link latency and loss, partitions, crashes, duplication, FIFO links;
* ``trace``: the event log and its trace hash (NDJSON when kept);
* ``faults``: fault plans as data, swarm generation, the injector and the shrinker.

SimPy lives here (and in the actors built on it), never in ``model.core``.
"""

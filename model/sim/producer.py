"""A simulated producer: a record rate, keys or round robin, optional transactions.

* **Rate.** From ``start_ms`` the application hands over records at
  ``rate_per_s`` (integer arithmetic: by time t, ``(t - start) * rate // 1000``
  records), until ``records`` have been handed over. Every ``linger_ms`` the
  records that arrived go to their partition's accumulator.
* **Partitioning.** With ``keys`` > 0 each record draws a key from ``keys``
  keys and goes to ``stable hash(key) % partitions`` (a blake2b-derived hash,
  never ``hash()``, so a run is the same in every process; adding partitions
  remaps keys, as in Kafka); the batch carries its records' keys (the log
  cleaner of a compacted topic keeps each key's latest). Otherwise round robin.
* **Produce.** One ProduceRequest per partition with a batch ready and none in
  flight (max.in.flight = 1 per partition keeps batches in order). A batch
  carries its producer id and a base sequence (idempotence: a leader that
  already appended it answers with the first base offset), and the time its
  first record arrived (its produce time, for end-to-end latency). Timeouts
  and retriable errors (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS …) refresh
  metadata and send the same batch again, to whichever leader metadata names.
* **Transactions.** ``records_per_transaction`` records form a transaction;
  once all of them are acknowledged the producer commits, or aborts with
  probability ``abort_rate``, by sending an EndTxnMarker to the leader of every
  partition it wrote to (it plays its own transaction coordinator). Records
  that arrive meanwhile wait for the next transaction. A record counts as
  produced when acknowledged (non-transactional) or when its transaction's
  commit markers are all written; aborted records count as aborted.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import partial

from model.core.errors import Errors
from model.core.produce_fetch import EndTxnMarkerRequest, EndTxnMarkerResponse, ProduceRequest, ProduceResponse
from model.sim.client import RETRIABLE_ERRORS, STALE_METADATA_ERRORS, Client, ClientConfig, MetadataSource
from model.sim.network import Network
from model.sim.rng import RandomStreams, derive_seed
from model.sim.timers import Scheduler
from model.sim.trace import PRODUCER_ACK, Trace


def key_partition(key: int, partitions: int) -> int:
    """The partition of key number ``key``: a stable hash modulo the partition count."""
    return derive_seed("key", key) % partitions


@dataclass(frozen=True)
class ProducerSettings:
    """What a producer does (scenario ProducerSpec)."""

    topic: str
    records: int = 1_000
    rate_per_s: int = 1_000
    keys: int = 0  # 0: round robin; otherwise key-hashed over this many keys
    records_per_transaction: int = 0  # 0: not transactional
    abort_rate: float = 0.0
    start_ms: int = 0
    linger_ms: int = 5  # linger.ms: how often arrived records are batched
    batch_size: int = 0  # batch.size in records (Kafka's is bytes): at most this many per batch; 0: no cap

    def __post_init__(self) -> None:
        if self.records < 0 or self.rate_per_s < 1 or self.keys < 0 or self.records_per_transaction < 0:
            raise ValueError(f"invalid producer settings {self}")
        if self.linger_ms < 1 or self.start_ms < 0 or not 0 <= self.abort_rate <= 1 or self.batch_size < 0:
            raise ValueError(f"invalid producer settings {self}")

    @property
    def transactional(self) -> bool:
        return self.records_per_transaction > 0


class _Batch:
    """A batch on its way (a plain class, not a dataclass: one per batch, see ``model/core/message.py``)."""

    __slots__ = ("base_sequence", "keys", "partition", "produce_time_ms", "records", "transactional")

    def __init__(self, partition: int, records: int, base_sequence: int, produce_time_ms: int,
                 transactional: bool, keys: tuple[int, ...] = ()) -> None:
        self.partition = partition
        self.records = records
        self.base_sequence = base_sequence
        self.produce_time_ms = produce_time_ms
        self.transactional = transactional
        self.keys = keys  # one per record when keyed (log compaction keeps each key's latest)


@dataclass
class _Transaction:
    capacity: int  # records it still takes
    records: int = 0  # records given to it
    acknowledged: int = 0
    partitions: set[int] = field(default_factory=set)
    ending: bool = False
    commit: bool = True
    markers_pending: int = 0


class Producer(Client):
    def __init__(
        self,
        name: str,
        producer_id: int,
        scheduler: Scheduler,
        network: Network,
        metadata_source: MetadataSource,
        streams: RandomStreams,
        *,
        settings: ProducerSettings,
        config: ClientConfig | None = None,
        trace: Trace | None = None,
    ) -> None:
        super().__init__(name, scheduler, network, metadata_source, config=config, trace=trace)
        self.producer_id = producer_id
        self.settings = settings
        self._key_rng: random.Random = streams.get("producer", name, "keys")
        self._txn_rng: random.Random = streams.get("producer", name, "transactions")
        self.handed_over = 0  # records the application has handed to the producer
        self._round_robin = 0
        self._backlog = 0  # records that arrived while a transaction was ending
        self._accumulators: dict[int, tuple[int, int]] = {}  # partition -> (records, first arrival ms)
        self._accumulated_keys: dict[int, list[int]] = {}  # partition -> the keys of those records (keyed)
        self._in_flight: dict[int, _Batch] = {}  # partition -> batch awaiting its answer
        self._sequences: dict[int, int] = {}
        self._transaction: _Transaction | None = None
        self._key_partitions: dict[int, int] = {}
        self._partition_count = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def on_start(self) -> None:
        delay = max(0, self.settings.start_ms - self.scheduler.now_ms)
        self.call_later(delay, self._tick)

    def on_metadata(self) -> None:
        self._fill()
        self._send_ready()

    @property
    def finished(self) -> bool:
        """Every record handed over and resolved (produced, aborted or given up on)."""
        return (
            self.handed_over == self.settings.records
            and not self._accumulators
            and not self._in_flight
            and not self._backlog
            and self._transaction is None
        )

    # -- handing records over ----------------------------------------------------------------

    def _tick(self) -> None:
        settings = self.settings
        elapsed = self.scheduler.now_ms - settings.start_ms
        due = min(settings.records, elapsed * settings.rate_per_s // 1000)
        arrived = due - self.handed_over
        if arrived > 0:
            self.handed_over = due
            self._backlog += arrived
        self._fill()
        self._send_ready()
        self._maybe_end_transaction()
        if self.handed_over < settings.records:
            self.call_later(self._next_tick_in_ms(), self._tick)

    def _next_tick_in_ms(self) -> int:
        """The next linger tick that has work: the first at which a record will have arrived.

        A tick with no arrival and no backlog does nothing (a slow producer would otherwise cost an
        event every ``linger_ms``), so it is skipped; the ticks that remain fall on the same
        ``linger_ms`` grid, so every record is batched at the same time as before. (Only the order
        among events due in the same millisecond may differ: a tick is set earlier.) A backlog that
        could not be filled (no metadata yet) is retried on the very next tick."""
        settings = self.settings
        linger = settings.linger_ms
        if self._backlog:
            return linger
        # The next record arrives once (t - start) * rate >= (handed_over + 1) * 1000.
        arrives_ms = settings.start_ms - (-(self.handed_over + 1) * 1000 // settings.rate_per_s)
        wait_ms = arrives_ms - self.scheduler.now_ms
        return linger * max(1, -(-wait_ms // linger))

    def _fill(self) -> None:
        """Move backlog records into partition accumulators (into the open transaction, if any)."""
        if not self._backlog:
            return
        count = self.metadata.partition_count(self.settings.topic)
        if count == 0:
            self.request_metadata_refresh()
            return
        if count != self._partition_count:
            self._partition_count = count
            self._key_partitions.clear()
        take = self._backlog
        txn = self._transaction
        if self.settings.transactional:
            if txn is None:
                txn = self._transaction = _Transaction(self.settings.records_per_transaction)
            if txn.ending:
                return
            take = min(take, txn.capacity - txn.records)
            txn.records += take
        self._backlog -= take
        now = self.scheduler.now_ms
        keys = self.settings.keys
        for _ in range(take):
            if keys:
                key = int(self._key_rng.random() * keys)
                partition = self._key_partitions.get(key)
                if partition is None:
                    partition = self._key_partitions[key] = key_partition(key, count)
                self._accumulated_keys.setdefault(partition, []).append(key)
            else:
                partition = self._round_robin % count
                self._round_robin += 1
            records, first = self._accumulators.get(partition, (0, now))
            self._accumulators[partition] = (records + 1, first)
            if txn is not None:
                txn.partitions.add(partition)

    def _send_ready(self) -> None:
        for partition in sorted(self._accumulators):
            if partition in self._in_flight:
                continue
            records, first = self._accumulators.pop(partition)
            cap = self.settings.batch_size
            keys_list = self._accumulated_keys.pop(partition, [])
            if cap and records > cap:
                # batch.size: the batch is full; the rest waits for the next send (RecordAccumulator).
                self._accumulators[partition] = (records - cap, first)
                if keys_list:
                    self._accumulated_keys[partition] = keys_list[cap:]
                    keys_list = keys_list[:cap]
                records = cap
            sequence = self._sequences.get(partition, 0)
            self._sequences[partition] = sequence + records
            keys = tuple(keys_list)
            batch = _Batch(partition, records, sequence, first, self.settings.transactional, keys)
            self._in_flight[partition] = batch
            self._produce(batch)

    def _produce(self, batch: _Batch) -> None:
        info = self.leader_of(self.settings.topic, batch.partition)
        if info is None:
            self.request_metadata_refresh()
            self.call_later(self.backoff_ms(1), self._produce, batch)
            return
        request = ProduceRequest(
            topic=self.settings.topic,
            partition=batch.partition,
            records=batch.records,
            producer_id=self.producer_id,
            transactional=batch.transactional,
            produce_time_ms=batch.produce_time_ms,
            base_sequence=batch.base_sequence,
            keys=batch.keys,
        )
        self.send_request(
            info.leader,
            "Produce",
            request,
            lambda response: self._on_produce_response(batch, response),
            lambda: self._retry(batch, Errors.REQUEST_TIMED_OUT),
        )

    def _on_produce_response(self, batch: _Batch, response: ProduceResponse) -> None:
        error = response.error_code
        if error in RETRIABLE_ERRORS:
            self._retry(batch, error)
            return
        del self._in_flight[batch.partition]
        txn = self._transaction
        if error != Errors.NONE:
            self.metrics.produce_errors += 1
            self.record("producer.error", partition=batch.partition, records=batch.records, error=int(error))
            if txn is not None and batch.transactional:
                txn.commit = False  # a transaction with a lost batch can only abort
                txn.acknowledged += batch.records
        elif txn is not None and batch.transactional:
            txn.acknowledged += batch.records
        else:
            self.metrics.records_produced += batch.records
        self.emit(PRODUCER_ACK, response.base_offset, batch.partition, batch.records)
        self._send_ready()
        self._maybe_end_transaction()

    def _retry(self, batch: _Batch, error: Errors) -> None:
        self.metrics.retries += 1
        if error in STALE_METADATA_ERRORS or error == Errors.REQUEST_TIMED_OUT:
            self.request_metadata_refresh()
        self.call_later(max(self.config.retry_backoff_ms, self.config.metadata_refresh_ms), self._produce, batch)

    # -- transactions ------------------------------------------------------------------------

    def _maybe_end_transaction(self) -> None:
        txn = self._transaction
        if txn is None or txn.ending:
            return
        full = txn.records == txn.capacity
        last = self.handed_over == self.settings.records and not self._backlog
        if not (full or last) or txn.acknowledged < txn.records:
            return
        txn.ending = True
        if txn.commit and self._txn_rng.random() < self.settings.abort_rate:
            txn.commit = False
        self.record("producer.end_txn", commit=txn.commit, records=txn.records)
        partitions = sorted(txn.partitions)
        txn.markers_pending = len(partitions)
        if not partitions:
            self._transaction_ended(txn)
            return
        topic = self.settings.topic
        for partition in partitions:
            self.call(
                partial(self._leader_id, partition),
                "EndTxnMarker",
                EndTxnMarkerRequest(topic, partition, self.producer_id, txn.commit),
                lambda response: self._on_marker(txn, response),
                error_of=lambda response: response.error_code,
                timeout_ms=0,  # markers are written in the end, however long the leader takes to come back
            )

    def _leader_id(self, partition: int) -> int | None:
        info = self.leader_of(self.settings.topic, partition)
        return info.leader if info is not None else None

    def _on_marker(self, txn: _Transaction, response: EndTxnMarkerResponse | None) -> None:
        if response is None or response.error_code != Errors.NONE:
            self.metrics.produce_errors += 1
        txn.markers_pending -= 1
        if txn.markers_pending == 0:
            self._transaction_ended(txn)

    def _transaction_ended(self, txn: _Transaction) -> None:
        if txn.commit:
            self.metrics.transactions_committed += 1
            self.metrics.records_produced += txn.records
        else:
            self.metrics.transactions_aborted += 1
            self.metrics.records_aborted += txn.records
        self._transaction = None
        self._fill()
        self._send_ready()
        self._maybe_end_transaction()

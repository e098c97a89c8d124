----------------------------- MODULE ShareGroup -----------------------------
(***************************************************************************)
(* One share-partition of a share group (KIP-932): its share-partition     *)
(* leaders, the consumers that fetch from it, and the durable state kept   *)
(* by the share coordinator.  Rule ids (SP-n, SC-n, E-n) are those of      *)
(* shared/SPEC.md.                                                         *)
(*                                                                         *)
(* What is modelled                                                        *)
(*  - A log of LogSize offsets produced one at a time up to the high-water *)
(*    mark hwm.  Offsets in Gaps have no record (compaction, SP-14; and    *)
(*    transaction markers, which Kafka's leader acquires with their batch  *)
(*    and the client acknowledges with the Gap type): they are             *)
(*    acknowledged with the Gap type.                                      *)
(*  - read_committed (SP-13): hwm stands for the last stable offset, the   *)
(*    bound such a leader reads to (an open transaction holds it back, so  *)
(*    the SPEO stops there, SP-7).  Offsets in Aborted hold records of     *)
(*    aborted transactions: never acquired; a leader about to acquire one  *)
(*    archives it instead (ArchiveAborted).  Aborted = {} is               *)
(*    read_uncommitted, or a log without aborted transactions.             *)
(*  - A leader per leader epoch e in Epochs.  A leader LOADS its state     *)
(*    from the coordinator (ReadShareGroupState, SP-10), is ACTIVE, and on *)
(*    failover becomes a ZOMBIE: it keeps its memory, its lock timers and  *)
(*    its queued and late WriteShareGroupState requests, and it still      *)
(*    takes acknowledgements from consumers that have not noticed the      *)
(*    failover; it no longer serves fetches (the replica manager refuses   *)
(*    fetches once the broker has stepped down).  At the next failover the *)
(*    zombie is DEAD: its memory is gone but its queued writes may still   *)
(*    arrive.  Leadership may also move while its leader is still LOADING; *)
(*    that leader, with no memory and no writes, is DEAD at once (SP-10).  *)
(*  - The share coordinator's durable state for the key, abstracted as the *)
(*    state the ShareSnapshot/ShareUpdate records encode (SC-2): durable   *)
(*    SPSO dSpso (-1 = not yet known), one batch per offset dBatch[o]      *)
(*    (state and delivery count, or no batch), the stored state epoch dSE  *)
(*    and the stored leader epoch dLE.  Snapshots, updates, pruning and    *)
(*    coordinator failover (SC-3, SC-6..8) are below this abstraction: by  *)
(*    SC-6/SC-7 replay yields exactly this state.                          *)
(*  - Writes travel from a leader to the coordinator over a FIFO channel   *)
(*    per leader (one connection).  The coordinator applies a write and    *)
(*    the response reaches the sender in one step; a lost or failed write  *)
(*    (WriteError) is a bounded fault, and so is a write answered with a   *)
(*    retriable error that the persister sends again, behind the writes    *)
(*    queued since (WriteRetry: a coordinator that moved, NOT_COORDINATOR).*)
(*  - Time is abstract: an acquisition lock expires by the ExpireLock      *)
(*    action at any moment (SP-4).                                         *)
(*  - Consumers crash (bounded) and restart; a down member's records are   *)
(*    released by lock expiry or by session release (SP-15).               *)
(*  - An administrator may reset the state of an empty group to any start  *)
(*    offset (AlterShareGroupOffsets, SP-12): InitializeShareGroupState    *)
(*    with a higher state epoch.                                           *)
(*                                                                         *)
(* Abstraction choices                                                     *)
(*  - One offset per acquisition and acknowledgement (batching is an      *)
(*    optimisation of the same transitions); a write carries the offsets   *)
(*    whose state changed.  Once the SPSO has passed a terminal record,    *)
(*    its delivery count is forgotten (it can never matter again).          *)
(*  - Log batches (BatchLast) matter only to the window's end: Kafka brings *)
(*    a fetched log batch into the window whole, so SP-8's bound is soft to *)
(*    a batch end (WindowEnd), and with share.acquire.mode = record_limit   *)
(*    the rest of a batch past the records acquired enters the window       *)
(*    AVAILABLE with count 0 (CacheBatchRest).  The small and nightly        *)
(*    models use one-record batches, which make both the per-offset rules.  *)
(*  - A record whose acknowledgement is being written keeps state ACQUIRED *)
(*    with pend = the target state; it cannot be acquired or acknowledged  *)
(*    again until the write answers (as Kafka's ongoing state transition). *)
(*  - A lock expiry or session release is a pending transition too (SP-9): *)
(*    the record stays ACQUIRED, lock gone, with pend = AVAILABLE or        *)
(*    ARCHIVED and by = NoMember, until its write is answered; a write that *)
(*    failed is sent again (the change already happened in the leader's     *)
(*    eyes).  Mutant timeout_before_write: memory changes at once, the      *)
(*    write follows and its failure is only logged (Kafka trunk's           *)
(*    releaseAcquisitionLockOnTimeout).                                     *)
(*  - A write carries the leader's current SPSO only while no other write *)
(*    of the leader carrying one is in flight, else -1: the durable start  *)
(*    offset stays (SP-9: the SPSO if it moved; sharesim's                 *)
(*    SharePartition._payload), so a retried write cannot move it back.    *)
(*    Mutant start_every_write: every write carries it (Kafka trunk).      *)
(*    The SPSO in memory advances eagerly over settled terminal records    *)
(*    (SP-6).                                                              *)
(*  - share.auto.offset.reset = earliest: a start offset of -1 reads as 0. *)
(*  - ZombieActs = FALSE (the small models): a deposed leader contributes  *)
(*    only the writes it had queued, which arrive late; its memory is gone. *)
(*    ZombieActs = TRUE (nightly): it also keeps taking acknowledgements   *)
(*    and expiring locks, and those writes arrive late too.  Either way    *)
(*    the coordinator must fence every write sent under an old epoch.      *)
(*  - Members and epochs are small model values; the Mutant constant turns *)
(*    on one deliberate bug so that TLC must find a counterexample.        *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC

CONSTANTS
    Members,         \* consumer member ids (a symmetry set in safety models)
    NoMember,        \* model value: "no owner"
    LogSize,         \* offsets 0..LogSize-1 are ever produced
    Gaps,            \* offsets with no record (compacted, SP-14)
    Aborted,         \* offsets of aborted transactional records a read_committed leader archives (SP-13)
    BatchLast,       \* BatchLast[o]: the last offset of the log batch holding o
    DeliveryLimit,   \* group.share.delivery.count.limit (SP-5)
    MaxInFlight,     \* group.share.partition.max.record.locks (SP-8)
    MaxFailovers,    \* leader failovers allowed in a behaviour
    MaxCrashes,      \* consumer crashes allowed in a behaviour
    MaxResets,       \* admin resets (SP-12) allowed in a behaviour
    MaxWriteErrors,  \* WriteShareGroupState failures (lost) allowed in a behaviour
    MaxWriteRetries, \* writes answered with a retriable error and sent again behind later ones
    ZombieActs,      \* TRUE: a deposed leader still takes acks and expires locks
    Mutant           \* "none" or the name of one deliberate bug (see MutantNames)

MutantNames == {"none",
                "no_leader_fence",    \* coordinator skips the leader-epoch check on write (SC-5)
                "no_state_fence",     \* coordinator skips the state-epoch check on write (SC-5)
                "spso_skip",          \* SPSO jumps past the highest terminal offset (SP-6)
                "no_delivery_limit",  \* release / expiry ignore the delivery limit (SP-5)
                "ack_any_state",      \* leader accepts an ack without checking state/owner/lock (SP-3)
                "no_inflight_bound",  \* leader acquires new offsets past the in-flight bound (SP-8)
                "no_rollback",        \* a failed ack write leaves the record ACQUIRED with no lock (SP-9, E-1)
                "start_every_write",  \* every write carries the SPSO, however many are in flight (SP-9; Kafka trunk)
                "start_every_write_max", \* a candidate fix, not a bug: trunk's payload, and a coordinator that
                                         \* never lowers the stored start offset within a state epoch
                "timeout_before_write", \* a lock expiry releases in memory before its write (SP-9, SP-11; Kafka trunk)
                "deliver_aborted"}    \* the leader acquires aborted records as any other (SP-13)

ASSUME /\ LogSize \in Nat \ {0}
       /\ Gaps \subseteq 0..(LogSize - 1)
       /\ Aborted \subseteq 0..(LogSize - 1) /\ Aborted \cap Gaps = {}
       /\ BatchLast \in [0..(LogSize - 1) -> 0..(LogSize - 1)]
       /\ \A o \in 0..(LogSize - 1) : BatchLast[o] >= o /\ (o < BatchLast[o] => BatchLast[o + 1] = BatchLast[o])
       /\ DeliveryLimit \in Nat \ {0}
       /\ MaxInFlight \in Nat \ {0}
       /\ {MaxFailovers, MaxCrashes, MaxResets, MaxWriteErrors, MaxWriteRetries} \subseteq Nat
       /\ ZombieActs \in BOOLEAN
       /\ NoMember \notin Members
       /\ Mutant \in MutantNames

Offsets == 0..(LogSize - 1)
Epochs  == 1..(MaxFailovers + 1)          \* leader epochs; leader e has epoch e

(* Log batches, for BatchLast: one record each (the per-offset models), or *)
(* two records each, {0, 1}, {2, 3}, ... (ShareGroup_batch_small).          *)
OneRecordBatches == [o \in Offsets |-> o]
TwoRecordBatches == [o \in Offsets |-> IF o % 2 = 0 /\ o + 1 < LogSize THEN o + 1 ELSE o]

(* SP-8: the end of a window starting at s (one past its last offset): up  *)
(* to MaxInFlight offsets, and on to the end of the log batch holding the   *)
(* last of them.  Kafka's bound is soft to a batch end (SharePartition.     *)
(* lastOffsetAndMaxRecordsToAcquire: whole log batches come into the        *)
(* window); with one-record batches it is s + MaxInFlight.                  *)
WindowEnd(s) == IF s + MaxInFlight > LogSize THEN s + MaxInFlight ELSE BatchLast[s + MaxInFlight - 1] + 1

(* SP-1 record states; Code is the persisted DeliveryState. *)
AVAILABLE    == "AVAILABLE"
ACQUIRED     == "ACQUIRED"
ACKNOWLEDGED == "ACKNOWLEDGED"
ARCHIVED     == "ARCHIVED"
States    == {AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED}
Terminal  == {ACKNOWLEDGED, ARCHIVED}
Code(s)   == CASE s = AVAILABLE -> 0 [] s = ACQUIRED -> 1
               [] s = ACKNOWLEDGED -> 2 [] s = ARCHIVED -> 4
NONE      == "NONE"                       \* no durable batch / no pending transition

(* SP-3 acknowledge types. *)
AckTypes(o) == IF o \in Gaps THEN {"GAP"} ELSE {"ACCEPT", "RELEASE", "REJECT"}

LeaderStatuses == {"future", "loading", "active", "zombie", "dead"}

Max(S) == CHOOSE x \in S : \A y \in S : y <= x

VARIABLES
    hwm,        \* high-water mark of the partition
    \* -- the share coordinator's durable state (SC-2) --
    dSpso,      \* durable SPSO (-1: not yet known, SP-10)
    dBatch,     \* dBatch[o] = [st, cnt]; st = NONE: no batch for o
    dSE,        \* stored state epoch
    dLE,        \* stored leader epoch
    \* -- share-partition leaders, one per leader epoch --
    lep,        \* the current leader epoch
    status,     \* status[e] \in LeaderStatuses
    lse,        \* lse[e]: the state epoch leader e loaded
    lspso,      \* lspso[e]: SPSO in leader e's memory
    lspeo,      \* lspeo[e]: SPEO in leader e's memory
    rec,        \* rec[e][o] = [st, cnt, own, live, pend, by]
    wq,         \* wq[e]: leader e's WriteShareGroupState requests in flight (FIFO)
    \* -- consumers --
    up,         \* up[m]: member m is running
    held,       \* held[m]: set of <<offset, leader epoch>> m was delivered and has not acknowledged
    \* -- fault budgets --
    failovers, crashes, resets, writeErrors, writeRetries,
    \* -- history variables, read only by the properties --
    confirmed,      \* offsets whose Accept/Reject/Gap acknowledgement was confirmed (E-2)
    zombieApplied,  \* TRUE once a write from a fenced leader or state epoch was applied (SC-5)
    dlv,            \* dlv[o]: deliveries of o in this life of the state (SP-11)
    ten             \* ten[o]: the leader epochs that delivered o in this life (SP-11)

durableVars  == <<dSpso, dBatch, dSE, dLE>>
leaderVars   == <<lep, status, lse, lspso, lspeo, rec, wq>>
consumerVars == <<up, held>>
budgetVars   == <<failovers, crashes, resets, writeErrors, writeRetries>>
ghostVars    == <<confirmed, zombieApplied, dlv, ten>>
vars == <<hwm, durableVars, leaderVars, consumerVars, budgetVars, ghostVars>>

(* A record outside the window [SPSO, SPEO): AVAILABLE with no deliveries. *)
NoRec == [st |-> AVAILABLE, cnt |-> 0, own |-> NoMember, live |-> FALSE, pend |-> NONE, by |-> NoMember]
(* A record below the durable SPSO when a leader loads: terminal by SP-6. *)
PassedRec == [NoRec EXCEPT !.st = ARCHIVED]
NoBatch == [st |-> NONE, cnt |-> 0]
EmptyMemory == [o \in Offsets |-> NoRec]

(* A WriteShareGroupState request (SP-9): the changed batches b (a function *)
(* from offsets to [st, cnt]), the sender's SPSO (-1: the stored one stays), *)
(* state epoch and leader epoch; off is the acknowledged offset of an "ack"  *)
(* write (-1 otherwise).                                                     *)
IsWrite(w) ==
    /\ DOMAIN w = {"b", "spso", "se", "le", "kind", "off"}
    /\ DOMAIN w.b \subseteq Offsets
    /\ \A o \in DOMAIN w.b : w.b[o].st \in {AVAILABLE, ACKNOWLEDGED, ARCHIVED} /\ w.b[o].cnt \in Nat
    /\ w.spso \in -1..LogSize /\ w.se \in Nat /\ w.le \in Epochs
    /\ w.kind \in {"ack", "timeout"} /\ w.off \in -1..(LogSize - 1)

TypeOK ==
    /\ hwm \in 0..LogSize
    /\ dSpso \in -1..LogSize
    /\ dBatch \in [Offsets -> [st : {NONE, AVAILABLE, ACKNOWLEDGED, ARCHIVED}, cnt : Nat]]
    /\ dSE \in Nat /\ dLE \in 0..Max(Epochs)
    /\ lep \in Epochs
    /\ status \in [Epochs -> LeaderStatuses]
    /\ lse \in [Epochs -> Nat]
    /\ lspso \in [Epochs -> 0..LogSize] /\ lspeo \in [Epochs -> 0..LogSize]
    /\ rec \in [Epochs -> [Offsets -> [st : States, cnt : Nat, own : Members \cup {NoMember},
                                       live : BOOLEAN, pend : {NONE} \cup States,
                                       by : Members \cup {NoMember}]]]
    /\ \A e \in Epochs : \A i \in 1..Len(wq[e]) : IsWrite(wq[e][i])
    /\ up \in [Members -> BOOLEAN]
    /\ held \in [Members -> SUBSET (Offsets \X Epochs)]
    /\ failovers \in 0..MaxFailovers /\ crashes \in 0..MaxCrashes
    /\ resets \in 0..MaxResets /\ writeErrors \in 0..MaxWriteErrors /\ writeRetries \in 0..MaxWriteRetries
    /\ confirmed \subseteq Offsets /\ zombieApplied \in BOOLEAN
    /\ dlv \in [Offsets -> Nat] /\ ten \in [Offsets -> SUBSET Epochs]

-----------------------------------------------------------------------------
(* Helpers *)

(* Leader e has memory and acts on it.  Without ZombieActs a deposed      *)
(* leader is only the source of its queued late writes.                    *)
Serving(e) == status[e] = "active" \/ (status[e] = "zombie" /\ ZombieActs)

(* SP-5: a move to AVAILABLE at the delivery limit archives instead. *)
ReleasedState(cnt) ==
    IF cnt >= DeliveryLimit /\ Mutant # "no_delivery_limit" THEN ARCHIVED ELSE AVAILABLE


(* SP-6: the lowest offset >= s that is not terminal, or SPEO if there is   *)
(* none.  Mutant spso_skip: one past the highest terminal offset instead.   *)
NextSpso(r, s, speo) ==
    LET honest == CHOOSE n \in s..speo :
                      /\ \A o \in s..(n - 1) : r[o].st \in Terminal
                      /\ (n = speo \/ r[n].st \notin Terminal)
        term   == {o \in s..(speo - 1) : r[o].st \in Terminal}
    IN IF Mutant = "spso_skip" /\ term # {} THEN Max({honest, Max(term) + 1}) ELSE honest

(* Memory r with SPSO s: the delivery count of a terminal record the SPSO  *)
(* has passed is forgotten (it can never matter again); only its terminal   *)
(* state is kept.  Non-terminal ones are kept as they are, so that          *)
(* SP6_SpsoBelowTerminal still sees an SPSO that skipped one.               *)
Passed(r, s) == [o \in Offsets |-> IF o < s /\ r[o].st \in Terminal
                                   THEN [NoRec EXCEPT !.st = r[o].st] ELSE r[o]]

(* SP-4, SP-15: the lock of record r is gone.  With no write pending the    *)
(* record is to be released (SP-5 applies): it waits for that write (SP-9). *)
(* With an acknowledgement being written, the release waits for the answer *)
(* to it.  Mutant timeout_before_write: released at once.                   *)
Unlock(r) ==
    IF r.pend # NONE THEN [r EXCEPT !.live = FALSE]
    ELSE IF Mutant = "timeout_before_write"
         THEN [NoRec EXCEPT !.st = ReleasedState(r.cnt), !.cnt = r.cnt]
    ELSE [r EXCEPT !.live = FALSE, !.pend = ReleasedState(r.cnt), !.by = NoMember]

(* The batches a write carries for offsets O of memory r: the state they    *)
(* move to. *)
BatchesOf(r, O) == [o \in O |-> [st |-> IF r[o].pend # NONE THEN r[o].pend ELSE r[o].st, cnt |-> r[o].cnt]]

(* The offsets leader e is releasing (a lock expiry or session release      *)
(* waiting for its write) among those write w carries.                      *)
Releasing(e, w) == {o \in DOMAIN w.b : rec[e][o].pend # NONE /\ rec[e][o].by = NoMember}

(* SP-9: the start offset a new write of leader e carries when its SPSO is *)
(* s: s, unless a write of e carrying one is still in flight (-1).           *)
StartInFlight(e) == \E i \in 1..Len(wq[e]) : wq[e][i].spso # -1
EveryWrite == Mutant \in {"start_every_write", "start_every_write_max"}
Payload(e, s) == IF EveryWrite \/ ~StartInFlight(e) THEN s ELSE -1

Write(e, b, spso, kind, off) == [b |-> b, spso |-> spso, se |-> lse[e], le |-> e, kind |-> kind, off |-> off]
MkWrite(e, b, spso, kind, off) == Write(e, b, Payload(e, spso), kind, off)

(* A release write of leader e for batches b, sent again after a failure   *)
(* (no start offset: the next write carries it).                            *)
Resent(e, b) == Write(e, b, -1, "timeout", -1)

(* SC-4: per offset, the higher delivery count wins, then the higher state. *)
Merge(old, new) ==
    IF \/ old.st = NONE
       \/ new.cnt > old.cnt
       \/ new.cnt = old.cnt /\ Code(new.st) >= Code(old.st)
    THEN new ELSE old

(* SC-4: the start offset stored after write w, and the durable batch of o: *)
(* clipped to that start offset, merged where the write carries o.           *)
NewStart(w) == IF w.spso = -1 THEN dSpso
               ELSE IF Mutant = "start_every_write_max" THEN Max({dSpso, w.spso})
               ELSE w.spso

Applied(o, w) ==
    IF o < NewStart(w) THEN NoBatch
    ELSE IF o \in DOMAIN w.b THEN Merge(dBatch[o], w.b[o])
    ELSE dBatch[o]

(* SP-10: the memory a leader rebuilds from ReadShareGroupState: the       *)
(* persisted batches with no owners, offsets in the window without a batch *)
(* AVAILABLE with count 0, a start offset of -1 read as 0 (earliest).      *)
Recovered ==
    LET s    == IF dSpso = -1 THEN 0 ELSE dSpso
        ends == {o + 1 : o \in {q \in Offsets : q >= s /\ dBatch[q].st # NONE}}
        speo == Max(ends \cup {s})
        r    == [o \in Offsets |->
                    IF o < s THEN PassedRec
                    ELSE IF dBatch[o].st # NONE
                         THEN [NoRec EXCEPT !.st = dBatch[o].st, !.cnt = dBatch[o].cnt]
                         ELSE NoRec]
        s2   == NextSpso(r, s, speo)
    IN [spso |-> s2, speo |-> speo, rec |-> Passed(r, s2)]

(* Install the recovered memory at leader e. *)
Install(e) ==
    LET R == Recovered IN
    /\ rec'   = [rec EXCEPT ![e] = R.rec]
    /\ lspso' = [lspso EXCEPT ![e] = R.spso]
    /\ lspeo' = [lspeo EXCEPT ![e] = R.speo]
    /\ lse'   = [lse EXCEPT ![e] = dSE]

(* SP-9 second phase, at the sender of write w: an acknowledgement whose    *)
(* write succeeded (ok) takes its new state and is confirmed to the         *)
(* consumer; one whose write failed returns to ACQUIRED, or, if its lock    *)
(* expired meanwhile, is to be released (SP-5), which FollowUp writes.  A   *)
(* release write that succeeded settles its records; one that failed       *)
(* leaves them waiting for FollowUp's resend.  Answers to a leader that     *)
(* reloaded or died change nothing.  Mutant timeout_before_write: a failed *)
(* acknowledgement whose lock expired is released at once, unwritten.      *)
(* A record whose pending transition's write succeeded takes its target.  *)
Settled(r) == [NoRec EXCEPT !.st = r.pend, !.cnt = r.cnt]

(* The acknowledged record r once its write is answered (ok or not).       *)
AckAnswered(r, ok) ==
    IF ok THEN Settled(r)
    ELSE IF Mutant = "no_rollback" THEN [r EXCEPT !.pend = NONE, !.by = NoMember, !.live = FALSE]
    ELSE IF r.live THEN [r EXCEPT !.pend = NONE, !.by = NoMember]
    ELSE IF Mutant = "timeout_before_write" THEN [NoRec EXCEPT !.st = ReleasedState(r.cnt), !.cnt = r.cnt]
    ELSE [r EXCEPT !.pend = ReleasedState(r.cnt), !.by = NoMember]

(* Leader e's memory becomes r, its SPSO moved past the terminal records  *)
(* at its head (SP-6).                                                      *)
Settle(e, r) ==
    LET s == NextSpso(r, lspso[e], lspeo[e]) IN
    /\ rec' = [rec EXCEPT ![e] = Passed(r, s)]
    /\ lspso' = [lspso EXCEPT ![e] = s]

Answer(w, ok) ==
    LET e == w.le
        o == w.off
    IN IF ~(Serving(e) /\ lse[e] = w.se) \/ (w.kind = "timeout" /\ ~ok)
       THEN UNCHANGED <<rec, lspso, confirmed>>
       ELSE IF w.kind = "ack"
       THEN /\ Assert(rec[e][o].pend # NONE, "an ack write answered for a record with no pending transition")
            /\ Settle(e, [rec[e] EXCEPT ![o] = AckAnswered(rec[e][o], ok)])
            /\ confirmed' = IF ok /\ rec[e][o].pend \in Terminal THEN confirmed \cup {o} ELSE confirmed
       ELSE /\ Settle(e, [q \in Offsets |-> IF q \in Releasing(e, w) THEN Settled(rec[e][q]) ELSE rec[e][q]])
            /\ UNCHANGED confirmed

(* The writes leader w.le sends after write w failed without being applied *)
(* (WriteError): the release of an acknowledged record whose lock expired   *)
(* meanwhile, or the records a failed release write carried, again.         *)
FollowUp(w) ==
    LET e == w.le IN
    IF ~(Serving(e) /\ lse[e] = w.se) \/ Mutant = "timeout_before_write" THEN <<>>
    ELSE IF w.kind = "ack"
         THEN IF rec[e][w.off].live \/ Mutant = "no_rollback" THEN <<>>
              ELSE LET c == rec[e][w.off].cnt IN
                   <<Resent(e, w.off :> [st |-> ReleasedState(c), cnt |-> c])>>
    ELSE IF Releasing(e, w) = {} THEN <<>>
    ELSE <<Resent(e, [q \in Releasing(e, w) |-> w.b[q]])>>

-----------------------------------------------------------------------------
(* Initial state: the group coordinator has initialized the state (GC-7)   *)
(* with state epoch 1 and start offset -1; leader 1 is about to load it.   *)

Init ==
    /\ hwm = 0
    /\ dSpso = -1 /\ dBatch = [o \in Offsets |-> NoBatch] /\ dSE = 1 /\ dLE = 0
    /\ lep = 1
    /\ status = [e \in Epochs |-> IF e = 1 THEN "loading" ELSE "future"]
    /\ lse = [e \in Epochs |-> 0]
    /\ lspso = [e \in Epochs |-> 0] /\ lspeo = [e \in Epochs |-> 0]
    /\ rec = [e \in Epochs |-> EmptyMemory]
    /\ wq = [e \in Epochs |-> <<>>]
    /\ up = [m \in Members |-> TRUE] /\ held = [m \in Members |-> {}]
    /\ failovers = 0 /\ crashes = 0 /\ resets = 0 /\ writeErrors = 0 /\ writeRetries = 0
    /\ confirmed = {} /\ zombieApplied = FALSE
    /\ dlv = [o \in Offsets |-> 0] /\ ten = [o \in Offsets |-> {}]

-----------------------------------------------------------------------------
(* Actions *)

(* SP-7: a record is committed; the high-water mark moves. *)
Produce ==
    /\ hwm < LogSize
    /\ hwm' = hwm + 1
    /\ UNCHANGED <<durableVars, leaderVars, consumerVars, budgetVars, ghostVars>>

(* SP-10, SC-5: the new leader reads the durable state with its leader      *)
(* epoch; the read raises the stored leader epoch, which fences every later *)
(* write of older leaders.  (A read with a lower epoch than stored would be *)
(* fenced; leader epochs only grow here.)                                   *)
LeaderLoad ==
    /\ status[lep] = "loading"
    /\ dLE <= lep
    /\ dLE' = lep
    /\ Install(lep)
    /\ status' = [status EXCEPT ![lep] = "active"]
    /\ UNCHANGED <<hwm, dSpso, dBatch, dSE, lep, wq, consumerVars, budgetVars, ghostVars>>

(* SP-12: a leader holding an old state epoch (it was fenced on write with  *)
(* FENCED_STATE_EPOCH, or found the new epoch when its share sessions went  *)
(* from 0 to 1) re-reads the state.                                          *)
LeaderReload(e) ==
    /\ status[e] = "active" /\ lse[e] < dSE
    /\ Install(e)
    /\ held' = [m \in Members |-> {h \in held[m] : h[2] # e}]
    /\ UNCHANGED <<hwm, durableVars, lep, status, wq, up, budgetVars, ghostVars>>

(* SP-2, SP-8: member m's ShareFetch acquires offset o at the current       *)
(* leader: an AVAILABLE record in the window, or the next new offset below  *)
(* the high-water mark while the window is within the in-flight bound      *)
(* (WindowEnd: soft to a log batch end).                                    *)
(* Acquiring increments the delivery count and starts the lock; nothing     *)
(* durable is written.                                                       *)
Acquire(m, o) ==
    LET e == lep IN
    /\ status[e] = "active" /\ lse[e] = dSE
    /\ up[m]
    /\ o \notin Aborted \/ Mutant = "deliver_aborted"     \* SP-13: ArchiveAborted instead
    /\ \/ /\ o >= lspso[e] /\ o < lspeo[e]
          /\ rec[e][o].st = AVAILABLE
          /\ UNCHANGED lspeo
       \/ /\ o = lspeo[e] /\ o < hwm
          /\ \/ o < WindowEnd(lspso[e])
             \/ Mutant = "no_inflight_bound"
          /\ lspeo' = [lspeo EXCEPT ![e] = o + 1]
    /\ rec' = [rec EXCEPT ![e][o] = [NoRec EXCEPT !.st = ACQUIRED, !.cnt = rec[e][o].cnt + 1,
                                                  !.own = m, !.live = TRUE]]
    /\ held' = [held EXCEPT ![m] = @ \cup {<<o, e>>}]
    /\ dlv' = [dlv EXCEPT ![o] = @ + 1]
    /\ ten' = [ten EXCEPT ![o] = @ \cup {e}]
    /\ UNCHANGED <<hwm, durableVars, lep, status, lse, lspso, wq, up, budgetVars, confirmed, zombieApplied>>

(* SP-2, SP-8: the window's end passes offset o without acquiring it: o    *)
(* stays AVAILABLE with delivery count 0, to be acquired by a later fetch.  *)
(* Kafka brings a fetched log batch into the window whole; with             *)
(* share.acquire.mode = record_limit (KIP-1206) a fetch acquires only its   *)
(* first records and caches the rest of the batch AVAILABLE                 *)
(* (SharePartition.acquireNewBatchRecords).  So o is not the first offset  *)
(* of its batch, the offset before it is in the window, and the bound is   *)
(* kept.  With one-record batches this is never enabled.                    *)
CacheBatchRest(o) ==
    LET e == lep IN
    /\ status[e] = "active" /\ lse[e] = dSE
    /\ o = lspeo[e] /\ o < hwm
    /\ o > lspso[e] /\ BatchLast[o - 1] = BatchLast[o]
    /\ o < WindowEnd(lspso[e])
    /\ lspeo' = [lspeo EXCEPT ![e] = o + 1]
    /\ UNCHANGED <<hwm, durableVars, lep, status, lse, lspso, rec, wq, consumerVars, budgetVars, ghostVars>>

(* SP-13, SP-9: a read_committed leader meets the aborted offset o where a  *)
(* fetch would acquire it (an AVAILABLE record of the window, or the next   *)
(* new offset within the bound) and archives it instead of delivering it:  *)
(* the record stays AVAILABLE, count unchanged, with a pending ARCHIVED and *)
(* no member, and the leader writes ARCHIVED; the record takes it when that *)
(* write succeeds, and a failed write is sent again (a release-like write,  *)
(* kind "timeout").  sharesim's SharePartition._tag_archived (one ARCHIVE   *)
(* write per acquisition; Kafka's filterAbortedTransactionalAcquiredRecords).*)
ArchiveAborted(o) ==
    LET e == lep IN
    /\ o \in Aborted
    /\ status[e] = "active" /\ lse[e] = dSE
    /\ \/ /\ o >= lspso[e] /\ o < lspeo[e]
          /\ rec[e][o].st = AVAILABLE /\ rec[e][o].pend = NONE
          /\ UNCHANGED lspeo
       \/ /\ o = lspeo[e] /\ o < hwm /\ o < WindowEnd(lspso[e])
          /\ lspeo' = [lspeo EXCEPT ![e] = o + 1]
    /\ rec' = [rec EXCEPT ![e][o] = [NoRec EXCEPT !.cnt = rec[e][o].cnt, !.pend = ARCHIVED]]
    /\ wq' = [wq EXCEPT ![e] = Append(@, MkWrite(e, o :> [st |-> ARCHIVED, cnt |-> rec[e][o].cnt],
                                                lspso[e], "timeout", -1))]
    /\ UNCHANGED <<hwm, durableVars, lep, status, lse, lspso, consumerVars, budgetVars, ghostVars>>

(* SP-3, SP-9 first phase, SP-14: member m acknowledges offset o, delivered *)
(* by leader e, with type t.  Valid only if o is ACQUIRED by m with a live  *)
(* lock and no transition pending; the leader then writes the new state    *)
(* and answers when the write does.  Otherwise INVALID_RECORD_STATE.       *)
Ack(m, o, e, t) ==
    /\ up[m] /\ <<o, e>> \in held[m] /\ t \in AckTypes(o)
    /\ held' = [held EXCEPT ![m] = @ \ {<<o, e>>}]
    /\ LET r      == rec[e][o]
           valid  == IF Mutant = "ack_any_state"
                     THEN r.pend = NONE /\ o >= lspso[e] /\ o < lspeo[e]
                     ELSE r.st = ACQUIRED /\ r.own = m /\ r.live /\ r.pend = NONE
           target == CASE t = "ACCEPT"  -> ACKNOWLEDGED
                       [] t = "RELEASE" -> ReleasedState(r.cnt)
                       [] OTHER         -> ARCHIVED              \* REJECT, GAP
       IN IF Serving(e) /\ valid
          THEN /\ rec' = [rec EXCEPT ![e][o].pend = target, ![e][o].by = m]
               /\ wq' = [wq EXCEPT ![e] = Append(@, MkWrite(e, o :> [st |-> target, cnt |-> r.cnt],
                                                           lspso[e], "ack", o))]
          ELSE UNCHANGED <<rec, wq>>
    /\ UNCHANGED <<hwm, durableVars, lep, status, lse, lspso, lspeo, up, budgetVars, ghostVars>>

(* SP-4, SP-5, SP-9: the acquisition lock of o at leader e expires.  The    *)
(* leader writes the record's new state, AVAILABLE (ARCHIVED at the         *)
(* delivery limit), and the record takes it when that write succeeds.       *)
ExpireLock(e, o) ==
    /\ Serving(e)
    /\ rec[e][o].st = ACQUIRED /\ rec[e][o].live
    /\ LET r  == rec[e][o]
           r2 == [rec[e] EXCEPT ![o] = Unlock(r)]
           s2 == NextSpso(r2, lspso[e], lspeo[e])
       IN /\ rec' = [rec EXCEPT ![e] = Passed(r2, s2)]
          /\ lspso' = [lspso EXCEPT ![e] = s2]
          /\ wq' = IF r.pend = NONE
                   THEN [wq EXCEPT ![e] = Append(@, MkWrite(e, BatchesOf(r2, {o}), s2, "timeout", -1))]
                   ELSE wq
    /\ UNCHANGED <<hwm, durableVars, lep, status, lse, lspeo, consumerVars, budgetVars, ghostVars>>

(* SP-15: the share session of a member that is down is closed; all its   *)
(* live acquisitions are released by one write (count unchanged, SP-5),    *)
(* when it succeeds (SP-9).                                                 *)
ReleaseMember(e, m) ==
    LET O  == {o \in Offsets : rec[e][o].st = ACQUIRED /\ rec[e][o].own = m /\ rec[e][o].live}
        F  == {o \in O : rec[e][o].pend = NONE}          \* released now, hence written
        r2 == [o \in Offsets |-> IF o \in O THEN Unlock(rec[e][o]) ELSE rec[e][o]]
        s2 == NextSpso(r2, lspso[e], lspeo[e])
    IN /\ status[e] = "active" /\ ~up[m]
       /\ O # {}
       /\ rec' = [rec EXCEPT ![e] = Passed(r2, s2)]
       /\ lspso' = [lspso EXCEPT ![e] = s2]
       /\ wq' = IF F = {} THEN wq
                ELSE [wq EXCEPT ![e] = Append(@, MkWrite(e, BatchesOf(r2, F), s2, "timeout", -1))]
       /\ UNCHANGED <<hwm, durableVars, lep, status, lse, lspeo, consumerVars, budgetVars, ghostVars>>

(* SC-4, SC-5, SC-7: the share coordinator handles the oldest write of     *)
(* leader e.  FENCED_LEADER_EPOCH if the stored leader epoch is greater,    *)
(* FENCED_STATE_EPOCH if the stored state epoch is greater; otherwise the   *)
(* state is merged and the start offset replaced.  A write never raises a   *)
(* stored epoch.  The answer reaches the leader in the same step.           *)
CoordWrite(e) ==
    /\ wq[e] # <<>>
    /\ LET w        == Head(wq[e])
           leFenced == dLE > w.le /\ Mutant # "no_leader_fence"
           seFenced == dSE > w.se /\ Mutant # "no_state_fence"
           ok       == ~leFenced /\ ~seFenced
       IN /\ wq' = [wq EXCEPT ![e] = Tail(@)]
          /\ IF ok
             THEN /\ dSpso' = NewStart(w)
                  /\ dBatch' = [o \in Offsets |-> Applied(o, w)]
                  /\ zombieApplied' = (zombieApplied \/ dLE > w.le \/ dSE > w.se)
             ELSE UNCHANGED <<dSpso, dBatch, zombieApplied>>
          /\ Answer(w, ok)
    /\ UNCHANGED <<hwm, dSE, dLE, lep, status, lse, lspeo, consumerVars, budgetVars, dlv, ten>>

(* Fault: a write fails without being applied (coordinator unavailable,    *)
(* request lost); the leader sees the failure (SP-9).                      *)
WriteError(e) ==
    /\ writeErrors < MaxWriteErrors
    /\ wq[e] # <<>>
    /\ writeErrors' = writeErrors + 1
    /\ wq' = [wq EXCEPT ![e] = Tail(@) \o FollowUp(Head(@))]
    /\ Answer(Head(wq[e]), FALSE)
    /\ UNCHANGED <<hwm, durableVars, lep, status, lse, lspeo, consumerVars,
                   failovers, crashes, resets, writeRetries, zombieApplied, dlv, ten>>

(* Fault: the oldest write of leader e is answered with a retriable error  *)
(* (NOT_COORDINATOR: its coordinator moved) without being applied, and the  *)
(* persister sends the same request again, behind the writes queued since,  *)
(* which may land first.  Only a reordering is a new behaviour.             *)
WriteRetry(e) ==
    /\ writeRetries < MaxWriteRetries
    /\ Len(wq[e]) > 1
    /\ writeRetries' = writeRetries + 1
    /\ wq' = [wq EXCEPT ![e] = Append(Tail(@), Head(@))]
    /\ UNCHANGED <<hwm, durableVars, lep, status, lse, lspso, lspeo, rec, consumerVars,
                   failovers, crashes, resets, writeErrors, ghostVars>>

(* Fault: leadership of the partition moves to a new leader epoch.  An      *)
(* active old leader lives on as a zombie; an older zombie dies (its queued *)
(* writes stay in the network).  Consumers forget deliveries of dead        *)
(* leaders.                                                                 *)
(* SP-10: leadership also moves from a leader still LOADING (its            *)
(* ReadShareGroupState unanswered): in Kafka a partition's leadership moves *)
(* whenever the controller says so, whatever its SharePartition is doing,   *)
(* and so it does in sharesim (trace validation found it: swarm seed        *)
(* 3426542257535461806).  A loading leader has no memory, no locks and no   *)
(* writes, so it is DEAD at once (a zombie with ZombieActs would serve an   *)
(* empty memory); an older zombie dies, as at every failover.  Its read may *)
(* still reach the coordinator.  After the new leader's read it is fenced   *)
(* (SC-5: a lower leader epoch than stored) and changes nothing.  Before    *)
(* it, it raises the stored leader epoch to the dead leader's: that fences  *)
(* only writes of older leaders, dead too, whose answers change nothing and *)
(* which the new leader's read fences anyway; and a read that landed while  *)
(* its leader was current, answered too late, is LeaderLoad then Failover   *)
(* of an active leader that delivered nothing.  So the spec leaves the dead *)
(* leader's read out: LeaderLoad is the current leader's (dLE <= lep        *)
(* holds).                                                                  *)
Failover ==
    /\ failovers < MaxFailovers
    /\ status[lep] \in {"active", "loading"}
    /\ failovers' = failovers + 1
    /\ lep' = lep + 1
    /\ status' = [e \in Epochs |-> IF e = lep + 1 THEN "loading"
                                   ELSE IF e = lep THEN (IF status[lep] = "active" THEN "zombie" ELSE "dead")
                                   ELSE IF status[e] = "zombie" THEN "dead"
                                   ELSE status[e]]
    /\ LET gone(e) == status'[e] = "dead" \/ (status'[e] = "zombie" /\ ~ZombieActs)
       IN /\ rec'   = [e \in Epochs |-> IF gone(e) THEN EmptyMemory ELSE rec[e]]
          /\ lspso' = [e \in Epochs |-> IF gone(e) THEN 0 ELSE lspso[e]]
          /\ lspeo' = [e \in Epochs |-> IF gone(e) THEN 0 ELSE lspeo[e]]
          /\ lse'   = [e \in Epochs |-> IF gone(e) THEN 0 ELSE lse[e]]
          /\ held'  = [m \in Members |-> {h \in held[m] : ~gone(h[2])}]
    /\ UNCHANGED <<hwm, durableVars, wq, up, crashes, resets, writeErrors, writeRetries, ghostVars>>

(* Fault: a consumer crashes; it forgets what it was delivered.  Its       *)
(* records stay ACQUIRED until their locks expire or its session is        *)
(* released (SP-4, SP-15).                                                   *)
ConsumerCrash(m) ==
    /\ crashes < MaxCrashes /\ up[m]
    /\ crashes' = crashes + 1
    /\ up' = [up EXCEPT ![m] = FALSE]
    /\ held' = [held EXCEPT ![m] = {}]
    /\ UNCHANGED <<hwm, durableVars, leaderVars, failovers, resets, writeErrors, writeRetries, ghostVars>>

ConsumerRestart(m) ==
    /\ ~up[m]
    /\ up' = [up EXCEPT ![m] = TRUE]
    /\ UNCHANGED <<hwm, durableVars, leaderVars, held, budgetVars, ghostVars>>

(* SP-12, GC-8: AlterShareGroupOffsets on an empty group re-initializes   *)
(* the state at start offset s with a higher state epoch (an               *)
(* InitializeShareGroupState: a snapshot with no batches).  Offsets at or  *)
(* above s are to be delivered again on purpose.                            *)
AdminReset(s) ==
    /\ resets < MaxResets
    /\ \A m \in Members : ~up[m]
    /\ s \in 0..hwm
    /\ resets' = resets + 1
    /\ dSE' = dSE + 1
    /\ dSpso' = s
    /\ dBatch' = [o \in Offsets |-> NoBatch]
    /\ confirmed' = {o \in confirmed : o < s}
    /\ dlv' = [o \in Offsets |-> 0]       \* a new life of the state: deliveries count afresh
    /\ ten' = [o \in Offsets |-> {}]
    /\ UNCHANGED <<hwm, dLE, leaderVars, consumerVars, failovers, crashes, writeErrors, writeRetries,
                   zombieApplied>>

Next ==
    \/ Produce
    \/ LeaderLoad
    \/ \E e \in Epochs : LeaderReload(e) \/ CoordWrite(e) \/ WriteError(e) \/ WriteRetry(e)
    \/ \E m \in Members, o \in Offsets : Acquire(m, o)
    \/ \E o \in Offsets : CacheBatchRest(o)
    \/ \E o \in Offsets : ArchiveAborted(o)
    \/ \E m \in Members, o \in Offsets, e \in Epochs, t \in {"ACCEPT", "RELEASE", "REJECT", "GAP"} :
           Ack(m, o, e, t)
    \/ \E e \in Epochs, o \in Offsets : ExpireLock(e, o)
    \/ \E e \in Epochs, m \in Members : ReleaseMember(e, m)
    \/ Failover
    \/ \E m \in Members : ConsumerCrash(m) \/ ConsumerRestart(m)
    \/ \E s \in 0..LogSize : AdminReset(s)

Spec == Init /\ [][Next]_vars

(* E-1 needs progress once the bounded faults are spent: weak fairness on  *)
(* every non-fault step.  Releases by the delivery limit and the fault     *)
(* budgets bound every cycle, so no fair behaviour loops forever.          *)
Fairness ==
    /\ WF_vars(Produce)
    /\ WF_vars(LeaderLoad)
    /\ WF_vars(\E e \in Epochs : LeaderReload(e))
    /\ \A e \in Epochs : WF_vars(CoordWrite(e))
    /\ WF_vars(\E m \in Members, o \in Offsets : Acquire(m, o))
    /\ WF_vars(\E o \in Offsets : ArchiveAborted(o))
    /\ WF_vars(\E m \in Members, o \in Offsets, e \in Epochs, t \in {"ACCEPT", "RELEASE", "REJECT", "GAP"} :
                   Ack(m, o, e, t))
    /\ WF_vars(\E o \in Offsets : ExpireLock(lep, o))
    /\ WF_vars(\E m \in Members : ConsumerRestart(m))

FairSpec == Spec /\ Fairness

Symmetry == Permutations(Members)

-----------------------------------------------------------------------------
(* Invariants, named as in sharesim's invariant catalogue *)

(* SP-1: ACQUIRED is never persisted. *)
SP1_AcquiredNeverPersisted == \A o \in Offsets : dBatch[o].st # ACQUIRED

(* SP-5: within a leader's tenure no record is delivered more than the     *)
(* limit, and an AVAILABLE record can still be delivered.                   *)
SP5_DeliveryLimit ==
    \A e \in Epochs : Serving(e) =>
        \A o \in Offsets : o >= lspso[e] /\ o < lspeo[e] =>
            /\ rec[e][o].cnt <= DeliveryLimit
            /\ rec[e][o].st = AVAILABLE => rec[e][o].cnt < DeliveryLimit

(* SP-6: every offset below a leader's SPSO is terminal, and the SPSO is   *)
(* the lowest one that is not.                                              *)
SP6_SpsoBelowTerminal ==
    \A e \in Epochs : Serving(e) =>
        /\ \A o \in Offsets : o < lspso[e] => rec[e][o].st \in Terminal
        /\ lspso[e] < lspeo[e] => rec[e][lspso[e]].st \notin Terminal

(* SP-7: SPSO <= SPEO <= high-water mark, in memory and durably. *)
SP7_SpsoLeSpeoLeBound ==
    /\ \A e \in Epochs : Serving(e) => lspso[e] <= lspeo[e] /\ lspeo[e] <= hwm
    /\ dSpso <= hwm

(* SP-8: every serving leader's window is within max.record.locks, as it   *)
(* loaded it too.  (Before lock expiries waited for their write, the SPSO  *)
(* could pass a record a timeout archived before that was durable; a lost  *)
(* write then left a new leader loading a window over the bound, TLC,       *)
(* ShareGroup_small depth 15.)                                               *)
SP8_WindowWithinBound ==
    \A e \in Epochs : Serving(e) => lspeo[e] <= WindowEnd(lspso[e])

(* SP-11: the current leader's counts never fall below the durable ones. *)
SP11_CountNotBelowDurable ==
    LET e == lep IN
    status[e] = "active" /\ lse[e] = dSE =>
        \A o \in Offsets : o >= lspso[e] /\ dBatch[o].st # NONE => rec[e][o].cnt >= dBatch[o].cnt

(* SP-11: ACQUIRED is never persisted, so a failover may lose the         *)
(* increment of the one delivery of a record in flight, and no more (a      *)
(* release is written before the record is delivered again, SP-9): in one  *)
(* life of the state a record is delivered at most the limit, plus one for  *)
(* each further leader epoch that delivered it.                             *)
SP11_DeliveryBound ==
    \A o \in Offsets : dlv[o] > 0 => dlv[o] <= DeliveryLimit + Cardinality(ten[o]) - 1

(* SC-5: no write from a fenced leader epoch or state epoch is ever applied. *)
SC5_ZombieFenced == ~zombieApplied

(* E-2: an offset whose Accept/Reject/Gap was confirmed is durably terminal *)
(* (or below the durable SPSO), and terminal at any loaded current leader, *)
(* so it is never delivered again, across any failover.                     *)
E2_NoRedeliveryAfterConfirmedAck ==
    \A o \in confirmed :
        /\ o < dSpso \/ dBatch[o].st \in Terminal
        /\ \A e \in Epochs : status[e] = "active" /\ lse[e] = dSE => rec[e][o].st \in Terminal

(* SP-9: at most one write of a leader carrying a start offset is in       *)
(* flight, so no order of arrival moves the durable start offset back.      *)
SP9_OneStartOffsetInFlight ==
    ~EveryWrite =>
        \A e \in Epochs : Cardinality({i \in 1..Len(wq[e]) : wq[e][i].spso # -1}) <= 1

(* E-3: an acknowledgement is taken only from the member holding the live  *)
(* acquisition: a record being acknowledged is ACQUIRED, by the acker (a    *)
(* record being released, by = NoMember, is ACQUIRED with its lock gone).   *)
E3_ExclusiveAcquisition ==
    \A e \in Epochs, o \in Offsets :
        /\ rec[e][o].pend # NONE => \/ rec[e][o].st = ACQUIRED
                                    \/ o \in Aborted /\ rec[e][o].st = AVAILABLE /\ rec[e][o].pend = ARCHIVED
        /\ rec[e][o].pend # NONE /\ rec[e][o].by # NoMember => rec[e][o].own = rec[e][o].by
        /\ rec[e][o].pend # NONE /\ rec[e][o].by = NoMember => ~rec[e][o].live
        /\ rec[e][o].st = ACQUIRED <=> rec[e][o].own \in Members

(* SP-13: under read_committed an aborted record is never delivered: no     *)
(* leader holds it ACQUIRED (or ACKNOWLEDGED), no consumer was handed it,  *)
(* no delivery of it is counted in this life of the state, and its durable *)
(* state is at most ARCHIVED (archived, never acknowledged).  sharesim's    *)
(* invariant no-aborted-delivery checks the same.                           *)
SP13_AbortedNeverDelivered ==
    \A o \in Aborted :
        /\ dlv[o] = 0
        /\ \A e \in Epochs : rec[e][o].st \in {AVAILABLE, ARCHIVED}
        /\ \A m \in Members : \A h \in held[m] : h[1] # o
        /\ dBatch[o].st \in {NONE, ARCHIVED}

-----------------------------------------------------------------------------
(* Action properties *)

Legal == {<<AVAILABLE, ACQUIRED>>, <<ACQUIRED, AVAILABLE>>,
          <<ACQUIRED, ACKNOWLEDGED>>, <<ACQUIRED, ARCHIVED>>}

(* SP-1, SP-13: within one loaded memory, record states move only along    *)
(* SP-1; an aborted record moves from AVAILABLE to ARCHIVED (ArchiveAborted *)
(* once its write succeeds), never through ACQUIRED.                        *)
SP1_LegalTransitions ==
    [][\A e \in Epochs :
          (Serving(e) /\ Serving(e)' /\ lse'[e] = lse[e]) =>
              \A o \in Offsets :
                  rec'[e][o].st # rec[e][o].st =>
                      IF o \in Aborted THEN <<rec[e][o].st, rec'[e][o].st>> = <<AVAILABLE, ARCHIVED>>
                      ELSE <<rec[e][o].st, rec'[e][o].st>> \in Legal]_vars

(* SP-8: within a loaded state a leader's window never grows past          *)
(* max.record.locks (soft to a log batch end, WindowEnd), and never grows  *)
(* at all while it is past it: offsets come in only within the bound.  With *)
(* SP8_WindowWithinBound (above) this says the bound is kept by the        *)
(* leader's decision, not only by the state it loads.                       *)
SP8_InFlightBound ==
    [][\A e \in Epochs :
          (Serving(e) /\ Serving(e)' /\ lse'[e] = lse[e] /\ lspeo'[e] - lspso'[e] > lspeo[e] - lspso[e]) =>
              lspeo'[e] <= WindowEnd(lspso'[e])]_vars

(* SP-6: the SPSO only moves forward, in a leader's memory and durably,    *)
(* except by an admin reset (a new state epoch).                            *)
SP6_SpsoMonotonic ==
    [][/\ \A e \in Epochs :
              (Serving(e) /\ Serving(e)' /\ lse'[e] = lse[e]) =>
                  lspso'[e] >= lspso[e]
       /\ dSE' = dSE => dSpso' >= dSpso]_vars

(* SC-5: stored epochs only grow, the state epoch only by initialize (an   *)
(* admin reset), the leader epoch only by a read (a leader loading).        *)
SC5_EpochsRaisedOnlyByInitAndRead ==
    [][/\ dLE' # dLE => dLE' > dLE /\ LeaderLoad
       /\ dSE' # dSE => dSE' > dSE /\ \E s \in 0..LogSize : AdminReset(s)]_vars

-----------------------------------------------------------------------------
(* Liveness *)

(* E-1: offset o is settled at the current, loaded leader. *)
Done(o) ==
    /\ status[lep] = "active" /\ lse[lep] = dSE
    /\ o < lspso[lep] \/ (rec[lep][o].st \in Terminal)

(* E-1: once the bounded faults are spent, every record is eventually      *)
(* acknowledged or archived, and stays so.                                  *)
E1_NoLoss == <>[](\A o \in Offsets : Done(o))

=============================================================================

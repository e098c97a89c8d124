--------------------------- MODULE ShareGroupTrace ---------------------------
(***************************************************************************)
(* Trace validation of a simulated run against ShareGroup.tla (issue 27),  *)
(* in the style of Cirstea, Kuppe, Loillier, Merz, "Validating Traces of   *)
(* Distributed Programs Against TLA+ Specifications" (2024).               *)
(*                                                                         *)
(* The trace is the generated module ShareGroupTraceData (tla/             *)
(* trace_validate.py): Lives, the lives of one share-partition's state     *)
(* (cut where its state is initialized again: a group deleted and          *)
(* re-created, an admin reset), each a sequence of events, each with the   *)
(* spec actions it stands for (acts, with their parameters) and the spec   *)
(* variables the simulator observed after it; and the sizes the constants  *)
(* take (TMembers, TLogSize, ...; TAborted, a read_committed log's aborted *)
(* offsets, and TGaps, its transaction markers, SP-13).  Each life is a   *)
(* behaviour of its own, from Init (and the start offset its               *)
(* initialization wrote): t picks it.                                       *)
(*                                                                         *)
(* t is the life, l the event being matched, k how many of its actions    *)
(* were taken.                                                              *)
(* A step takes the next action of event l (the spec's own action: it must *)
(* be enabled, and its effect is the spec's), or, once all are taken,      *)
(* checks the observed values against the state and moves to event l + 1.  *)
(* One simulator step that is several spec actions (a batch acquisition,   *)
(* an acknowledgement of a range, a write carrying several offsets) is     *)
(* thus matched by several spec steps, compared once at their end.          *)
(*                                                                         *)
(* Life t is accepted iff its behaviour reaches l = Len(Lives[t]) + 1; the *)
(* trace is accepted iff every life is.  A life TLC cannot match ends in a *)
(* state with no successor, at its first unmatched event (l, k).  The       *)
(* invariant Verdict prints which (see there).                              *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC, ShareGroupTraceData

VARIABLES
    hwm, dSpso, dBatch, dSE, dLE, lep, status, lse, lspso, lspeo, rec, wq, up, held,
    failovers, crashes, resets, writeErrors, writeRetries,
    confirmed, zombieApplied, dlv, ten,
    t,      \* the life of Lives being matched
    l,      \* the event of Lives[t] being matched
    k       \* how many of its actions were taken

SG == INSTANCE ShareGroup WITH
        Members <- TMembers, NoMember <- "none", LogSize <- TLogSize, Gaps <- TGaps, Aborted <- TAborted,
        BatchLast <- TBatchLast,
        DeliveryLimit <- TLimit, MaxInFlight <- TMaxInFlight, MaxFailovers <- TFailovers,
        MaxCrashes <- TCrashes, MaxResets <- 0, MaxWriteErrors <- TWriteErrors, MaxWriteRetries <- TWriteRetries,
        ZombieActs <- FALSE, Mutant <- "none"

specVars == <<hwm, dSpso, dBatch, dSE, dLE, lep, status, lse, lspso, lspeo, rec, wq, up, held,
              failovers, crashes, resets, writeErrors, writeRetries, confirmed, zombieApplied, dlv, ten>>

(* The life being matched. *)
Trace == Lives[t]

(* A life of the state begins with its initialization: ShareGroup's Init  *)
(* is the group coordinator's (GC-7, start offset -1); a group re-created  *)
(* after its deletion, or an admin reset (SP-12), may write a start offset *)
(* s instead.  Only as the first action of a life, before anything else.   *)
Initialize(s) ==
    /\ l = 1 /\ k = 0
    /\ dSpso' = s
    /\ UNCHANGED <<hwm, dBatch, dSE, dLE, lep, status, lse, lspso, lspeo, rec, wq, up, held,
                   failovers, crashes, resets, writeErrors, writeRetries, confirmed, zombieApplied, dlv, ten>>

(* One spec action, as an event names it. *)
Do(a) ==
    CASE a.a = "Produce"         -> SG!Produce
      [] a.a = "LeaderLoad"      -> SG!LeaderLoad
      [] a.a = "Failover"        -> SG!Failover
      [] a.a = "Acquire"         -> SG!Acquire(a.m, a.o)
      [] a.a = "CacheBatchRest"  -> SG!CacheBatchRest(a.o)
      [] a.a = "ArchiveAborted"  -> SG!ArchiveAborted(a.o)
      [] a.a = "Ack"             -> SG!Ack(a.m, a.o, a.e, a.t)
      [] a.a = "ExpireLock"      -> SG!ExpireLock(a.e, a.o)
      [] a.a = "ConsumerCrash"   -> SG!ConsumerCrash(a.m)
      [] a.a = "ReleaseMember"   -> SG!ReleaseMember(a.e, a.m)
      [] a.a = "ConsumerRestart" -> SG!ConsumerRestart(a.m)
      [] a.a = "CoordWrite"      -> SG!CoordWrite(a.e)
      [] a.a = "WriteError"      -> SG!WriteError(a.e)
      [] a.a = "WriteRetry"      -> SG!WriteRetry(a.e)
      [] a.a = "Initialize"      -> Initialize(a.o)

(* The durable state as a recovering leader reads it (SP-10, the spec's    *)
(* Recovered): its start offset, and the batches at or above it.  Writes   *)
(* carrying a start offset S, or -1 and terminal batches up to S, say the  *)
(* same to a reader (SharePartition._payload); so does the write of the    *)
(* start offset a leader resolved from -1 (auto.offset.reset), which the   *)
(* spec leaves implicit.                                                    *)
DurableView ==
    LET s == SG!Recovered.spso IN
    [spso |-> s,
     batches |-> {<<o, dBatch[o].st, dBatch[o].cnt>> : o \in {q \in SG!Offsets : q >= s /\ dBatch[q].st # "NONE"}}]

(* Leader e's window as the simulator shows it: per offset (state, count,  *)
(* pending target state or NONE).                                           *)
Window(e) == [i \in 1..(lspeo[e] - lspso[e]) |->
                 LET r == rec[e][lspso[e] + i - 1] IN <<r.st, r.cnt, r.pend>>]

(* The values event ev observed agree with the current state. *)
Observed(ev) ==
    /\ hwm = ev.hwm
    /\ ev.e # 0 => /\ lspso[ev.e] = ev.spso
                   /\ lspeo[ev.e] = ev.speo
                   /\ Window(ev.e) = ev.mem
    /\ ev.dur => DurableView = [spso |-> ev.dspso, batches |-> ev.dbatch]
    /\ ev.dle # 0 => dLE = ev.dle

TraceInit ==
    /\ t \in 1..Len(Lives)
    /\ SG!Init
    /\ l = 1
    /\ k = 0

TraceNext ==
    /\ l <= Len(Trace)
    /\ \/ /\ k < Len(Trace[l].acts)
          /\ Do(Trace[l].acts[k + 1])
          /\ k' = k + 1
          /\ UNCHANGED <<t, l>>
          /\ PrintT(<<"AT", t, l, k + 1>>)
       \/ /\ k = Len(Trace[l].acts)
          /\ Observed(Trace[l])
          /\ l' = l + 1
          /\ k' = 0
          /\ UNCHANGED <<specVars, t>>
          /\ PrintT(<<"AT", t, l + 1, 0>>)

TraceSpec == TraceInit /\ [][TraceNext]_<<specVars, t, l, k>>

(* The spec's own invariants along the matched behaviour (not in the       *)
(* default configuration: a matched behaviour is one of the spec's, which  *)
(* TLC checked at small scope; add INVARIANT SpecInvariants to check them   *)
(* at the trace's scope, at about twice the cost).                          *)
SpecInvariants ==
    /\ SG!SP1_AcquiredNeverPersisted /\ SG!SP5_DeliveryLimit /\ SG!SP6_SpsoBelowTerminal
    /\ SG!SP7_SpsoLeSpeoLeBound /\ SG!SP8_WindowWithinBound /\ SG!SP11_CountNotBelowDurable
    /\ SG!SP11_DeliveryBound /\ SG!SC5_ZombieFenced /\ SG!E2_NoRedeliveryAfterConfirmedAck
    /\ SG!E3_ExclusiveAcquisition /\ SG!SP13_AbortedNeverDelivered

(* The spec state shown beside the first unmatched event. *)
View ==
    LET e == IF l <= Len(Trace) /\ Trace[l].e # 0 THEN Trace[l].e ELSE lep IN
    [hwm |-> hwm, leader |-> e, lep |-> lep, status |-> status[e], spso |-> lspso[e], speo |-> lspeo[e],
     window |-> Window(e), durable |-> DurableView, storedLeaderEpoch |-> dLE,
     writesInFlight |-> [q \in SG!Epochs |-> Len(wq[q])]]

(* TLC 2.15 has no ALIAS and prints a whole behaviour with every error,    *)
(* thousands of large states here; and ENABLED in an invariant triples the *)
(* cost of a run.  So nothing is an error: TLC runs without deadlock        *)
(* checking, each step prints the position it reaches ("AT", t, l, k), and *)
(* Verdict prints "ACCEPTED" with the life once its last event is matched.  *)
(* Every event fixes its actions' parameters, so each life's behaviour is  *)
(* unique and the last position printed for it ends its longest matched    *)
(* prefix.  A second run with TStop = <<t, l, k>> of that position prints   *)
(* the spec state there.                                                    *)
Verdict ==
    /\ l = Len(Trace) + 1 => PrintT(<<"ACCEPTED", t, Len(Trace)>>)
    /\ <<t, l, k>> = TStop => PrintT(<<"STATE", t, l, k, ToString(View)>>)

=============================================================================

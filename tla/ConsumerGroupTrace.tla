------------------------- MODULE ConsumerGroupTrace -------------------------
(***************************************************************************)
(* Trace validation of a simulated run against ConsumerGroup.tla (issue   *)
(* 27), as ShareGroupTrace.tla does for ShareGroup.tla.                     *)
(*                                                                         *)
(* The trace is the generated module ConsumerGroupTraceData (tla/          *)
(* consumer_trace_validate.py): Trace, a sequence of events of one KIP-848 *)
(* consumer group, each with the spec actions it stands for (acts: name,   *)
(* member m, and for ComputeTarget / JoinAssign the target the simulator's *)
(* assignor computed, as a set f of <<partition, member>> pairs) and the   *)
(* values the simulator observed after it: the coordinator's (coord: group *)
(* and assignment epochs, and <<member, epoch, assigned, pending           *)
(* revocation, target>> per member) and the clients' (cli: <<member, up,   *)
(* epoch, owned>>); and the sizes the constants take.                      *)
(*                                                                         *)
(* l is the event being matched, k how many of its actions were taken.  A *)
(* step takes the next action of event l (the spec's own, which must be    *)
(* enabled), or, once all are taken, checks the observed values and moves *)
(* to event l + 1.  Accepted iff a behaviour reaches l = Len(Trace) + 1.   *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC, ConsumerGroupTraceData

VARIABLES
    ge, ae, target, memb, mep, prevEp, asg, rev, req, resp, cUp, cEp, cOwn, crashes, losses,
    l,      \* the event of Trace being matched
    k       \* how many of its actions were taken

CG == INSTANCE ConsumerGroup WITH
        Members <- TMembers, Partitions <- TPartitions, MaxCrashes <- TCrashes, MaxLosses <- TLosses,
        JoinAssigns <- TRUE, Mutant <- "none"

specVars == <<ge, ae, target, memb, mep, prevEp, asg, rev, req, resp, cUp, cEp, cOwn, crashes, losses>>

(* The assignor's choice, given as pairs <<p, m>>: a function when every   *)
(* partition appears exactly once.                                          *)
IsFunction(pairs) ==
    /\ {x[1] : x \in pairs} = TPartitions
    /\ Cardinality(pairs) = Cardinality(TPartitions)
Fn(pairs) == [p \in TPartitions |-> (CHOOSE x \in pairs : x[1] = p)[2]]

(* One spec action, as an event names it. *)
Do(a) ==
    CASE a.a = "SendHeartbeat"   -> CG!SendHeartbeat(a.m)
      [] a.a = "HandleHeartbeat" -> CG!HandleHeartbeat(a.m)
      [] a.a = "JoinAssign"      -> IsFunction(a.f) /\ CG!JoinAssign(a.m, Fn(a.f))
      [] a.a = "ComputeTarget"   -> IsFunction(a.f) /\ CG!ComputeTargetTo(Fn(a.f))
      [] a.a = "ReceiveResponse" -> CG!ReceiveResponse(a.m)
      [] a.a = "LoseRequest"     -> CG!LoseRequest(a.m)
      [] a.a = "LoseResponse"    -> CG!LoseResponse(a.m)
      [] a.a = "Crash"           -> CG!Crash(a.m)
      [] a.a = "Restart"         -> CG!Restart(a.m)
      [] a.a = "Expire"          -> CG!Expire(a.m)

CoordView == {<<n, mep[n], asg[n], rev[n], target[n]>> : n \in memb}

(* The values event ev observed agree with the current state. *)
Observed(ev) ==
    /\ ev.coord => /\ ge = ev.ge /\ ae = ev.ae
                   /\ CoordView = ev.mem
    /\ \A x \in ev.cli : <<cUp[x[1]], cEp[x[1]], cOwn[x[1]]>> = <<x[2], x[3], x[4]>>

TraceInit ==
    /\ CG!Init
    /\ l = 1
    /\ k = 0

TraceNext ==
    /\ l <= Len(Trace)
    /\ \/ /\ k < Len(Trace[l].acts)
          /\ Do(Trace[l].acts[k + 1])
          /\ k' = k + 1
          /\ UNCHANGED l
          /\ PrintT(<<"AT", 1, l, k + 1>>)
       \/ /\ k = Len(Trace[l].acts)
          /\ Observed(Trace[l])
          /\ l' = l + 1
          /\ k' = 0
          /\ UNCHANGED specVars
          /\ PrintT(<<"AT", 1, l + 1, 0>>)

TraceSpec == TraceInit /\ [][TraceNext]_<<specVars, l, k>>

(* The spec's own invariants along the matched behaviour (add INVARIANT    *)
(* SpecInvariants to the configuration to check them at the trace's scope). *)
SpecInvariants ==
    /\ CG!CG1_EpochOrder /\ CG!CG3_ExclusiveOwnership /\ CG!CG3_ClientOwnsOnlyAssigned
    /\ CG!CG7_TargetIsExclusive

(* The spec state shown beside the first unmatched event. *)
View ==
    [groupEpoch |-> ge, assignmentEpoch |-> ae, members |-> CoordView,
     clients |-> {<<n, cUp[n], cEp[n], cOwn[n]>> : n \in TMembers},
     inFlight |-> {<<n, req[n], resp[n]>> : n \in {q \in TMembers : req[q] # {} \/ resp[q] # {}}},
     crashes |-> crashes, losses |-> losses]

(* As in ShareGroupTrace.tla: nothing is an error; each step prints the    *)
(* position it reaches, Verdict prints "ACCEPTED" once the last event is   *)
(* matched, and a second run with TStop = <<1, l, k>> prints the spec     *)
(* state (one life: the positions carry its number, 1, as the share-      *)
(* partition trace's lives do).                                           *)
Verdict ==
    /\ l = Len(Trace) + 1 => PrintT(<<"ACCEPTED", 1, Len(Trace)>>)
    /\ <<1, l, k>> = TStop => PrintT(<<"STATE", 1, l, k, ToString(View)>>)

=============================================================================

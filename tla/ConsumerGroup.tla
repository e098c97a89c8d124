---------------------------- MODULE ConsumerGroup ----------------------------
(***************************************************************************)
(* The KIP-848 consumer-group protocol: one group coordinator and the      *)
(* members of one consumer group, all subscribed to the same partitions.   *)
(* Rule ids (CG-n, GC-n, E-n) are those of shared/SPEC.md; the worked case  *)
(* studies of seeds/004_32d84b698b32e157.txt are behaviours of this spec.  *)
(*                                                                         *)
(* What is modelled                                                        *)
(*  - The coordinator's group epoch ge, target assignment epoch ae and     *)
(*    target assignment, and per member: member epoch mep, previous member *)
(*    epoch prevEp, assigned partitions asg and partitions pending         *)
(*    revocation rev (the member still owns asg \cup rev).                  *)
(*  - The assignor, abstracted as ANY exclusive assignment of every        *)
(*    partition to one current member (CG-7 with one topic that every      *)
(*    member subscribes to); ComputeTarget runs whenever ge > ae (GC-3).   *)
(*    With JoinAssigns, a new member's join may also bump the group epoch,  *)
(*    compute the target and reconcile against it in one step (JoinAssign: *)
(*    Kafka's heartbeat order, which trace validation needs).              *)
(*  - Reconciliation (CG-2): a member first revokes what is not in its new *)
(*    target, then moves to the target epoch; a partition of its target   *)
(*    still owned by another member stays pending and is assigned on a    *)
(*    later heartbeat, once it is free.                                     *)
(*  - Members send one ConsumerGroupHeartbeat at a time (member epoch and  *)
(*    owned partitions); a request or response may be lost (bounded).      *)
(*    Member epoch 0 joins or rejoins.                                      *)
(*  - Fencing (CG-4): UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH make the      *)
(*    member drop all partitions and rejoin with epoch 0; the lost-response *)
(*    case (previous epoch, owned partitions a subset of the assigned ones) *)
(*    is accepted.                                                          *)
(*  - Member crash (bounded) and restart; session expiry (CG-6) removes a  *)
(*    member and bumps the group epoch.                                     *)
(*                                                                         *)
(* Abstraction choices                                                     *)
(*  - Time: a session expires only once the member owns nothing and no     *)
(*    response to it is in flight.  This encodes the timing assumption the *)
(*    protocol relies on: a member that cannot heartbeat stops consuming   *)
(*    before its session times out at the coordinator, and responses take  *)
(*    far less than a session timeout.  Expiring a member that is up is a  *)
(*    fault (lost heartbeats) and is bounded.                               *)
(*  - A member rejoining with epoch 0 declares it owns nothing; the        *)
(*    coordinator forgets its old assignment and reconciles it afresh      *)
(*    (its target is unchanged, so no new group epoch).                     *)
(*  - Static membership (CG-5), rebalance timeouts, subscriptions changes, *)
(*    offset commits and coordinator failover are not modelled.            *)
(*  - The Mutant constant turns on one deliberate bug so that TLC must     *)
(*    find a counterexample.                                                *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, TLC

CONSTANTS
    Members,      \* member ids (a symmetry set in safety models)
    Partitions,   \* the partitions of the subscribed topic (a symmetry set)
    MaxCrashes,   \* member crashes allowed in a behaviour
    MaxLosses,    \* lost requests / responses / spurious session expiries allowed
    JoinAssigns,  \* TRUE: a join that bumps the group epoch may compute the target in the same step (Kafka's order)
    Mutant        \* "none" or the name of one deliberate bug (see MutantNames)

MutantNames == {"none",
                "assign_before_revoke",  \* target partitions handed over while still owned elsewhere (CG-2)
                "keep_after_fenced",     \* a fenced member keeps its partitions (CG-4)
                "epoch_jump",            \* a member moves to the group epoch, past the assignment epoch (CG-1)
                "assign_and_revoke",     \* one heartbeat revokes and assigns at once (CG-2)
                "revoke_unacked",        \* partitions pending revocation are freed before the member revoked them (CG-2)
                "never_take_pending"}    \* a pending partition is never assigned once it is free (E-5)

ASSUME /\ {MaxCrashes, MaxLosses} \subseteq Nat
       /\ JoinAssigns \in BOOLEAN
       /\ Mutant \in MutantNames

NONE    == "NONE"
ERRORS  == {NONE, "UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH"}

VARIABLES
    \* -- the group coordinator --
    ge,        \* group epoch
    ae,        \* target assignment epoch
    target,    \* target[m]: the target assignment of member m
    memb,      \* the members of the group
    mep,       \* mep[m]: member epoch
    prevEp,    \* prevEp[m]: previous member epoch (lost-response case)
    asg,       \* asg[m]: partitions assigned to m
    rev,       \* rev[m]: partitions m must revoke (it still owns them)
    \* -- the network: at most one heartbeat exchange per member --
    req,       \* req[m]: {} or {[ep, owned]}: m's heartbeat in flight
    resp,      \* resp[m]: {} or {[err, ep, asg]}: the answer in flight
    \* -- the members (clients) --
    cUp,       \* cUp[m]: the consumer process runs
    cEp,       \* cEp[m]: the member epoch the client knows
    cOwn,      \* cOwn[m]: partitions the client owns (consumes)
    \* -- fault budgets --
    crashes, losses

coordVars  == <<ge, ae, target, memb, mep, prevEp, asg, rev>>
netVars    == <<req, resp>>
clientVars == <<cUp, cEp, cOwn>>
vars == <<coordVars, netVars, clientVars, crashes, losses>>

Owned(m) == asg[m] \cup rev[m]                          \* coordinator's view
OwnedByOthers(m) == UNION {Owned(n) : n \in Members \ {m}}

TypeOK ==
    /\ ge \in Nat /\ ae \in Nat
    /\ target \in [Members -> SUBSET Partitions]
    /\ memb \subseteq Members
    /\ mep \in [Members -> Nat] /\ prevEp \in [Members -> Nat]
    /\ asg \in [Members -> SUBSET Partitions] /\ rev \in [Members -> SUBSET Partitions]
    /\ req \in [Members -> SUBSET [ep : Nat, owned : SUBSET Partitions]]
    /\ resp \in [Members -> SUBSET [err : ERRORS, ep : Nat, asg : SUBSET Partitions]]
    /\ \A m \in Members : Cardinality(req[m]) <= 1 /\ Cardinality(resp[m]) <= 1
    /\ cUp \in [Members -> BOOLEAN] /\ cEp \in [Members -> Nat]
    /\ cOwn \in [Members -> SUBSET Partitions]
    /\ crashes \in 0..MaxCrashes /\ losses \in 0..MaxLosses

Init ==
    /\ ge = 0 /\ ae = 0
    /\ target = [m \in Members |-> {}]
    /\ memb = {}
    /\ mep = [m \in Members |-> 0] /\ prevEp = [m \in Members |-> 0]
    /\ asg = [m \in Members |-> {}] /\ rev = [m \in Members |-> {}]
    /\ req = [m \in Members |-> {}] /\ resp = [m \in Members |-> {}]
    /\ cUp = [m \in Members |-> TRUE] /\ cEp = [m \in Members |-> 0]
    /\ cOwn = [m \in Members |-> {}]
    /\ crashes = 0 /\ losses = 0

-----------------------------------------------------------------------------
(* CG-2: the coordinator's reconciliation of member m after it accepted a  *)
(* heartbeat reporting the partitions `owned`; a, r, e, pe are m's current *)
(* assigned, pending-revocation, member epoch and previous epoch; tm is m's *)
(* target, aep the target assignment epoch and gep the group epoch it      *)
(* reconciles against.  Returns m's new [asg, rev, ep, prev].              *)
ReconcileTo(m, owned, a, r, e, pe, tm, aep, gep) ==
    LET free   == IF Mutant = "assign_before_revoke" THEN tm
                  ELSE tm \ OwnedByOthers(m)               \* pending ones stay out
        newEp  == IF Mutant = "epoch_jump" THEN gep ELSE aep
        r1     == IF r \cap owned = {} \/ Mutant = "revoke_unacked"
                  THEN {} ELSE r                          \* revocation acknowledged?
        revoke == a \ tm
    IN
    IF r1 # {} THEN
        \* UNREVOKED_PARTITIONS: still waiting for the member to revoke.
        [asg |-> a, rev |-> r1, ep |-> e, prev |-> pe]
    ELSE IF e < aep THEN
        IF revoke # {} /\ Mutant # "assign_and_revoke"
        THEN \* revoke first; the epoch stays until the member has revoked
             [asg |-> a \cap tm, rev |-> revoke, ep |-> e, prev |-> pe]
        ELSE \* nothing to revoke: move to the target epoch, take what is free
             [asg |-> (a \cap tm) \cup free, rev |-> {}, ep |-> newEp, prev |-> e]
    ELSE IF Mutant = "never_take_pending" THEN [asg |-> a, rev |-> {}, ep |-> e, prev |-> pe]
    ELSE \* at the target epoch: take pending partitions freed since
        [asg |-> a \cup free, rev |-> {}, ep |-> e, prev |-> pe]

(* Reconciliation against the current target. *)
Reconcile(m, owned, a, r, e, pe) == ReconcileTo(m, owned, a, r, e, pe, target[m], ae, ge)

(* Apply the result n of Reconcile to member m and answer it. *)
Accept(m, n) ==
    /\ asg' = [asg EXCEPT ![m] = n.asg]
    /\ rev' = [rev EXCEPT ![m] = n.rev]
    /\ mep' = [mep EXCEPT ![m] = n.ep]
    /\ prevEp' = [prevEp EXCEPT ![m] = n.prev]
    /\ resp' = [resp EXCEPT ![m] = IF cUp[m] THEN {[err |-> NONE, ep |-> n.ep, asg |-> n.asg]} ELSE {}]

Reject(m, err) ==
    /\ resp' = [resp EXCEPT ![m] = IF cUp[m] THEN {[err |-> err, ep |-> 0, asg |-> {}]} ELSE {}]
    /\ UNCHANGED <<ge, memb, asg, rev, mep, prevEp>>

-----------------------------------------------------------------------------
(* Actions of the coordinator *)

(* CG-1, CG-2, CG-4, GC-1: the coordinator handles member m's heartbeat. *)
HandleHeartbeat(m) ==
    /\ req[m] # {}
    /\ LET q == CHOOSE x \in req[m] : TRUE IN
       /\ req' = [req EXCEPT ![m] = {}]
       /\ IF q.ep = 0 THEN
             \* join (a new member bumps the group epoch, GC-2) or rejoin
             \* (the member owns nothing: its old assignment is forgotten)
             /\ memb' = memb \cup {m}
             /\ ge' = IF m \in memb THEN ge ELSE ge + 1
             /\ Accept(m, Reconcile(m, q.owned, {}, {}, 0, 0))
          ELSE IF m \notin memb THEN Reject(m, "UNKNOWN_MEMBER_ID")
          ELSE IF \/ q.ep = mep[m]
                  \/ q.ep = prevEp[m] /\ q.owned \subseteq asg[m]
               THEN \* the current epoch, or the lost-response case (CG-4)
                    /\ Accept(m, Reconcile(m, q.owned, asg[m], rev[m], mep[m], prevEp[m]))
                    /\ UNCHANGED <<ge, memb>>
          ELSE Reject(m, "FENCED_MEMBER_EPOCH")
    /\ UNCHANGED <<ae, target, clientVars, crashes, losses>>

(* The target in which f : Partitions -> members gives partition p to f[p]. *)
TargetOf(f) == [m \in Members |-> {p \in Partitions : f[p] = m}]

(* GC-3, CG-7: a new target assignment for the current group epoch: any    *)
(* assignment of every partition to exactly one current member.            *)
(* ComputeTargetTo(f) is the one in which f assigns them (f is the          *)
(* assignor's choice: trace validation fixes it from the simulator's).     *)
ComputeTargetTo(f) ==
    /\ ge > ae
    /\ memb # {}
    /\ f \in [Partitions -> memb]
    /\ target' = TargetOf(f)
    /\ ae' = ge
    /\ UNCHANGED <<ge, memb, mep, prevEp, asg, rev, netVars, clientVars, crashes, losses>>

ComputeTarget == \E f \in [Partitions -> memb] : ComputeTargetTo(f)

(* GC-2, GC-3, CG-2 in Kafka's order (GroupMetadataManager's heartbeat:    *)
(* update the member, bump the group epoch, compute the target if the      *)
(* group epoch is ahead, then reconcile): the coordinator handles the join *)
(* of a new member m, bumps the group epoch, computes the target for it in *)
(* the same step (f, as in ComputeTargetTo) and reconciles m against that  *)
(* target, so m's first answer may carry the new epoch and partitions.     *)
(* HandleHeartbeat's join reconciles against the target of before (the    *)
(* ComputeTarget step comes after it).  Only with JoinAssigns.              *)
JoinAssign(m, f) ==
    /\ JoinAssigns
    /\ req[m] # {} /\ m \notin memb
    /\ (CHOOSE x \in req[m] : TRUE).ep = 0
    /\ f \in [Partitions -> memb \cup {m}]
    /\ req' = [req EXCEPT ![m] = {}]
    /\ memb' = memb \cup {m}
    /\ ge' = ge + 1
    /\ ae' = ge + 1
    /\ target' = TargetOf(f)
    /\ Accept(m, ReconcileTo(m, {}, {}, {}, 0, 0, TargetOf(f)[m], ge + 1, ge + 1))
    /\ UNCHANGED <<clientVars, crashes, losses>>

(* CG-6: the session of member m times out: it is removed and the group    *)
(* epoch bumped.  Timing assumption (see header): only once m owns nothing *)
(* and no answer to it is in flight.  Expiring a running member is a fault. *)
Expire(m) ==
    /\ m \in memb
    /\ cOwn[m] = {} /\ resp[m] = {}
    /\ cUp[m] => losses < MaxLosses
    /\ losses' = IF cUp[m] THEN losses + 1 ELSE losses
    /\ memb' = memb \ {m}
    /\ ge' = ge + 1
    /\ asg' = [asg EXCEPT ![m] = {}] /\ rev' = [rev EXCEPT ![m] = {}]
    /\ mep' = [mep EXCEPT ![m] = 0] /\ prevEp' = [prevEp EXCEPT ![m] = 0]
    /\ target' = [target EXCEPT ![m] = {}]
    /\ UNCHANGED <<ae, netVars, clientVars, crashes>>

-----------------------------------------------------------------------------
(* Actions of the members *)

(* A member heartbeats with the epoch it knows and what it owns.  It has   *)
(* already revoked what the last response told it to (CG-2).               *)
SendHeartbeat(m) ==
    /\ cUp[m] /\ req[m] = {} /\ resp[m] = {}
    /\ req' = [req EXCEPT ![m] = {[ep |-> cEp[m], owned |-> cOwn[m]]}]
    /\ UNCHANGED <<coordVars, resp, clientVars, crashes, losses>>

(* CG-2, CG-4: the member applies the answer: it revokes what is no longer *)
(* assigned and takes what is; on UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH  *)
(* it gives up all partitions and rejoins with epoch 0.                     *)
ReceiveResponse(m) ==
    /\ cUp[m] /\ resp[m] # {}
    /\ LET a == CHOOSE x \in resp[m] : TRUE IN
       IF a.err = NONE
       THEN /\ cEp' = [cEp EXCEPT ![m] = a.ep]
            /\ cOwn' = [cOwn EXCEPT ![m] = a.asg]
       ELSE /\ cEp' = [cEp EXCEPT ![m] = 0]
            /\ cOwn' = [cOwn EXCEPT ![m] = IF Mutant = "keep_after_fenced" THEN @ ELSE {}]
    /\ resp' = [resp EXCEPT ![m] = {}]
    /\ UNCHANGED <<coordVars, req, cUp, crashes, losses>>

(* Fault: a heartbeat request or its response is lost; the member will     *)
(* time out and send again.                                                 *)
LoseRequest(m) ==
    /\ losses < MaxLosses /\ req[m] # {}
    /\ losses' = losses + 1
    /\ req' = [req EXCEPT ![m] = {}]
    /\ UNCHANGED <<coordVars, resp, clientVars, crashes>>

LoseResponse(m) ==
    /\ losses < MaxLosses /\ resp[m] # {}
    /\ losses' = losses + 1
    /\ resp' = [resp EXCEPT ![m] = {}]
    /\ UNCHANGED <<coordVars, req, clientVars, crashes>>

(* Fault: the consumer process crashes; it owns nothing any more. *)
Crash(m) ==
    /\ crashes < MaxCrashes /\ cUp[m]
    /\ crashes' = crashes + 1
    /\ cUp' = [cUp EXCEPT ![m] = FALSE]
    /\ cOwn' = [cOwn EXCEPT ![m] = {}]
    /\ cEp' = [cEp EXCEPT ![m] = 0]
    /\ resp' = [resp EXCEPT ![m] = {}]
    /\ UNCHANGED <<coordVars, req, losses>>

(* The consumer restarts and will join with epoch 0. *)
Restart(m) ==
    /\ ~cUp[m]
    /\ cUp' = [cUp EXCEPT ![m] = TRUE]
    /\ UNCHANGED <<coordVars, netVars, cEp, cOwn, crashes, losses>>

Next ==
    \/ ComputeTarget
    \/ \E m \in Members :
          \/ HandleHeartbeat(m) \/ Expire(m)
          \/ JoinAssigns /\ \E f \in [Partitions -> memb \cup {m}] : JoinAssign(m, f)
          \/ SendHeartbeat(m) \/ ReceiveResponse(m)
          \/ LoseRequest(m) \/ LoseResponse(m) \/ Crash(m) \/ Restart(m)

Spec == Init /\ [][Next]_vars

(* E-5 needs progress once faults stop: weak fairness on every non-fault   *)
(* step.  Heartbeats go on for ever; that is fine.                          *)
Fairness ==
    /\ WF_vars(ComputeTarget)
    /\ \A m \in Members :
          /\ WF_vars(HandleHeartbeat(m))
          /\ WF_vars(SendHeartbeat(m))
          /\ WF_vars(ReceiveResponse(m))
          /\ WF_vars(Restart(m))

FairSpec == Spec /\ Fairness

Symmetry == Permutations(Members) \cup Permutations(Partitions)

-----------------------------------------------------------------------------
(* Invariants, named as in sharesim's invariant catalogue *)

(* CG-1: group epoch >= target assignment epoch >= every member epoch, at  *)
(* the coordinator and at the members.                                      *)
CG1_EpochOrder ==
    /\ ae <= ge
    /\ \A m \in Members : mep[m] <= ae /\ prevEp[m] <= mep[m] /\ cEp[m] <= ae

(* CG-3: a partition is owned by at most one member, in the coordinator's *)
(* view (assigned or pending revocation) and in fact (what the consumers   *)
(* consume).                                                                *)
CG3_ExclusiveOwnership ==
    \A m, n \in Members : m # n =>
        /\ Owned(m) \cap Owned(n) = {}
        /\ cOwn[m] \cap cOwn[n] = {}

(* A consumer only owns what the coordinator believes it owns. *)
CG3_ClientOwnsOnlyAssigned ==
    \A m \in Members : cOwn[m] \subseteq Owned(m)

(* CG-7: the target assigns every partition exactly once, to members only. *)
CG7_TargetIsExclusive ==
    /\ \A m, n \in Members : m # n => target[m] \cap target[n] = {}
    /\ \A m \in Members \ memb : target[m] = {}
    /\ ae > 0 /\ memb # {} /\ ge = ae => UNION {target[m] : m \in Members} = Partitions

-----------------------------------------------------------------------------
(* Action properties *)

(* CG-1: the three epochs only increase (a member epoch restarts at 0 only *)
(* when the member rejoins or is removed).                                  *)
CG1_EpochsMonotonic ==
    [][/\ ge' >= ge
       /\ ae' >= ae
       /\ \A m \in Members : mep'[m] >= mep[m] \/ mep'[m] = 0
                             \/ (req[m] # {} /\ (CHOOSE x \in req[m] : TRUE).ep = 0)]_vars

(* CG-2: no answer both revokes and assigns: the assignment a member is    *)
(* sent only shrinks (revocation) or only grows (assignment) from the last *)
(* one, except when the member rejoined with epoch 0 owning nothing.       *)
CG2_NoAssignAndRevokeInOneStep ==
    [][\A m \in Members :
          LET rejoin == req[m] # {} /\ req'[m] = {} /\ (CHOOSE x \in req[m] : TRUE).ep = 0
              before == IF rejoin THEN {} ELSE asg[m]
          IN asg'[m] \subseteq before \/ before \subseteq asg'[m]]_vars

-----------------------------------------------------------------------------
(* Liveness *)

(* E-5: every live member is in the group at the assignment epoch and owns *)
(* exactly its target; the target is that of the current group epoch.      *)
Converged ==
    /\ ae = ge
    /\ \A m \in Members :
          /\ cUp[m] /\ m \in memb
          /\ mep[m] = ae /\ cEp[m] = ae
          /\ cOwn[m] = target[m] /\ asg[m] = target[m] /\ rev[m] = {}

E5_Convergence == <>[]Converged

=============================================================================

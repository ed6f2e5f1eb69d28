// Package session is the one place to reach a Conversation's live history on this replica:
// its store handle (internal/historystore), its view folded in memory (internal/journal), the
// rewrite of its epoch, and the hand-off of the Session API's appends to the Conversation
// reconcile. The controllers, the Session API and the compaction runner import it instead of
// assembling the store, the history key, the session id and the tokenizer each by hand. It is
// named for the thing it serves, the live session a Conversation holds (the session id keys
// its history), and sits one floor above historystore and journal, one below its callers.
//
// # Opening
//
// Sessions is built once per process from the Stores and the Views. Sessions.Open returns a
// Live: the history's key, the session id and the tokenizer are derived there, once, from the
// Conversation, and every use of the view (With, Peek, Reached, Fold, Seed, Drop) goes through
// it. Sessions.Of is the same without opening the store, for what touches only the view held in
// memory.
//
// # Rewriting an epoch
//
// Compaction, reset and archive each replace the live epoch with a new one, after taking the
// Checkpoint that keeps what they remove. Live.Rewrite is their one protocol: read the view,
// plan the new epoch from a snapshot of it, swap it in by compare-and-swap (history.NewEpoch),
// re-read and re-plan when another rewrite won, and seed the view of the new epoch. Its
// documentation states the invariant they rely on: a rewrite never loses an acknowledged
// message.
//
// # The activity hand-off
//
// A Session API append must reach status (lastActivityTime, the counts, the context figures)
// within the Session API's status lag, without a second status write per append and, where it
// can, without the reconcile reading back from the store what the append just wrote. Five
// pieces do it, all in this package but the reconcile itself:
//
//  1. Fold. Live.AppendFolded appends, then folds the stored records into the shared view at
//     the head the store answered (journal.Views.FoldAt): when a view is held, in that epoch,
//     and no other writer came in between, the view now stands exactly at that head. It then
//     marks the conversation active at that head (Activity.TouchAt), whether or not the fold
//     got there: the head is where the write left the history, and step 5 trusts the view only
//     once it stands there. A write that does not say where it left the history (Live.Append,
//     a reset) marks it active without a head (Activity.Touch).
//  2. Batch. Activity keeps, per conversation, the latest activity time and the head its writes
//     left: known only while every write of the batch told one, in one epoch (writtenHead).
//     Each conversation is flushed once Interval has passed since its first unflushed write.
//  3. Hand off or patch. On the replica that runs the Conversation controller (the leader, or
//     every replica without election), the flush hands the activity to the reconcile: it queues
//     a wake (Activity.Source) and keeps the time and head until the reconcile takes them
//     (Handoff.Take). Elsewhere, or when the wake cannot be queued or is not taken within
//     handOffTimeout, a narrow merge patch writes status.lastActivityTime; that write wakes the
//     controller's watch on whatever replica leads.
//  4. Own writes. The reconcile writes status once (controller.WriteStatus). OwnWrites notes
//     each such write before it is sent and drops the watch event that is exactly that write,
//     so a reconcile does not wake itself; and it remembers the resourceVersion each object had
//     after the controller's last reconcile, so the next one can tell whether anyone else (a
//     patch from step 3 on another replica, a spec edit) has written the object since
//     (OwnWrites.UnchangedSince).
//  5. Trust the view. The reconcile that takes handed-over activity copies its time into the
//     status it is building and asks ViewHeadToTrust whether the view may stand in for a read
//     of the store: only when every write of that activity told its head, and the object is
//     unchanged since the controller's last reconcile. Then Live.Reached summarises from the
//     view if it stands at that head or past it (this replica's later appends, folded in
//     sequence); otherwise Live.With reads what the view lacks from the store. The rule is
//     safe because every append on another replica also patches lastActivityTime (step 3),
//     which changes the object, so an append this replica did not fold is never trusted away.
//
// # Waking a sleeping agent
//
// An agent suspended while idle (controller, conversation_agent_idle.go) is woken by the
// reconcile that finds a user message after its last answer; the activity hand-off is how the
// reconcile hears of it. Live.Wake, called by the Session API after appending a user message
// to such a conversation, makes that conversation's activity due now (Activity.Wake) instead
// of at the end of its interval: handed over on the replica that runs the controller (no API
// request at all), or the lastActivityTime patch elsewhere, which the append would have sent
// anyway. A wake annotation or a status field of its own would cost one more write per wake
// and, for an annotation, a change of the object a GitOps tool may own. Wakes wait in a FIFO,
// each conversation once, served by a bounded number of workers, so a thousand conversations
// woken together are neither a burst of requests nor served out of turn. The append is
// answered once the message is durable; the pod starts after.
//
// If the status write fails, the reconcile forgets its noted write (OwnWrites.Forget) and
// gives the activity back (Handoff.Restore); the next flush hands it over again or patches it.
// At shutdown every pending and handed-over activity is patched. The Session API writes no
// other status field (docs/architecture.md, "Status field ownership"); how much this saves is
// measured in docs/benchmarks.md.
package session

package engine

// Failpoint, when set (only by tests), is called at named points of the
// commit protocol so a test can kill the process exactly there, or hold a
// commit in flight while other appends queue behind it:
//
//	"tail-written"  every commit attempt, just before it moves the index: what it
//	                writes first (tail objects, a seal) is durable; an append that fits
//	                the open tail has written nothing yet
//	"sealed"        a commit sealed the tail itself (at the hard bound), the index has
//	                not moved yet
//	"queued"        an Append has queued its request for the next group commit
//	"decoding"      a read holds its part of the decode budget and starts decoding an object
//	"decoded"       that decode is done; its part of the budget is given back next
var Failpoint func(name string)

func failpoint(name string) {
	if Failpoint != nil {
		Failpoint(name)
	}
}

package engine

// Failpoint, when set (only by tests), is called at named points of the
// commit protocol so a test can kill the process exactly there, or hold a
// commit in flight while other appends queue behind it:
//
//	"tail-written"  tail objects are durable, the index has not moved yet
//	"sealed"        sealed segments are written, the index has not moved yet
//	"queued"        an Append has queued its request for the next group commit
var Failpoint func(name string)

func failpoint(name string) {
	if Failpoint != nil {
		Failpoint(name)
	}
}

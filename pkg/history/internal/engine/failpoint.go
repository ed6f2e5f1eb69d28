package engine

// Failpoint, when set (only by tests), is called at named points of the
// commit protocol so a test can kill the process exactly there:
//
//	"tail-written"  tail objects are durable, the index has not moved yet
//	"sealed"        sealed segments are written, the index has not moved yet
var Failpoint func(name string)

func failpoint(name string) {
	if Failpoint != nil {
		Failpoint(name)
	}
}

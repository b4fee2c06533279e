package coord

// SetBeforeCommit installs a hook run between taking the leader fence and
// committing a resharding (tests: depose the leader in between).
func SetBeforeCommit(j *Job, f func()) { j.beforeCommit = f }

// CleanStale runs the stale-node sweep once (tests).
var CleanStale = (*Job).cleanStale

// Package fence is a fenced store for the side effects of test jobs: an
// SQLite table that keeps, per job and sharding item, the highest fencing
// token written so far and rejects a write that carries a lower one, the
// conditional update a real job's store makes with the token ejob hands
// it. Every write attempt is logged with the run it came from, so a test
// can count stale writes (from a run that a later run of the item has
// superseded) rejected and accepted. test/recorder writes into it; the
// chaos suite (test/chaos) reads the log.
package fence

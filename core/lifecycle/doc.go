// Package lifecycle is the operations API on a registry, call for call
// upstream's lifecycle module (the APIs of its JobAPIFactory), which
// ElasticJob's console is built on: configuration (GetConfig, UpdateConfig,
// RemoveConfig), operations (TriggerAll, Disable, Enable, Shutdown,
// Remove, Dump), sharding (DisableItem, EnableItem) and statistics (Jobs,
// Job, JobsOfServer, Servers, Sharding and the totals). Each call makes
// the registry changes upstream's makes, so running instances, ejob's and
// Java ElasticJob's alike, obey it; the domain objects carry the console's
// JSON field names. Where upstream writes blindly, these calls check first
// and return ErrNotFound, ErrInvalid or ErrConflict (ErrNotRunnable for a
// trigger no instance would run) without writing anything. Besides
// upstream's statuses the briefs carry ejob's own State, which tells a job
// that has never run from one waiting for a resharding.
package lifecycle

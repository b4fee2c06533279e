package transport

import "time"

// LeasePeriod is how long after a renewal with the shortest lease ttl the
// host renews again.
func LeasePeriod(ttl time.Duration) time.Duration { return period(ttl) }

// Package joblistenerbuiltin holds the built-in job listeners: LOG, a
// common listener that logs each trigger's begin and end on every
// instance, and LOG_ONCE, a distribute-once listener that logs them once
// per cluster-wide trigger (on the last instance to start and to
// complete). It imports spi only; the mains under cmd serve each alone.
package joblistenerbuiltin

// Package metrics is ejob's Prometheus instrumentation: it implements the
// kernel's observers (core/observe, executor events) and the plugin
// supervisor's hooks with client_golang collectors on a registry of its
// own (never the global one), follows the registry session, and tells
// /readyz whether the host is ready.
package metrics

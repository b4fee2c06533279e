// Package httpapi is ejob's operations HTTP server: ElasticJob-UI's REST
// API (the console's endpoints, JSON field names and response envelope,
// backed by core/lifecycle), login with bcrypt users and server-enforced
// roles, an audit line per operation, secrets in job props masked in every
// response, plus /metrics, /healthz and /readyz. A host serves it when
// ejob.http is set; `ejob serve` serves it for a namespace without jobs.
package httpapi

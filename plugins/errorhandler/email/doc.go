// Package email implements the EMAIL error handler (upstream's
// EmailJobErrorHandler) with github.com/wneessen/go-mail: every email.* key of
// upstream with its defaults and validation messages (implicit TLS when
// email.useSsl is true, plain SMTP otherwise), plus email.startTls for port-587
// servers. Sending runs off the failing item's path through package alert
// (queue, deadline, retries, suppression, secret masking). See docs/alerting.md.
package email

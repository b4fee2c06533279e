// Package alert is what the alerting error handlers (EMAIL, WECHAT,
// DINGTALK, SLACK, WEBHOOK) share: a Handler that implements
// spi.ErrorHandler around one Channel, sending each failure off the
// caller's path (a bounded queue per handler, a deadline and retries with
// backoff per send), suppressing floods per job (alert.suppressSeconds),
// masking secrets in every log line and error, and formatting the message
// whose first line is upstream's "Job '<job>' exception occur in job
// processing, caused by ...".
//
// It imports spi (and spi/gson) only; each channel package adds its own
// protocol library. See docs/alerting.md.
package alert

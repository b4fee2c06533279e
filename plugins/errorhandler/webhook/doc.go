// Package webhook implements the WEBHOOK error handler: a JSON POST of the
// failure (a versioned schema, Payload) to any URL, with extra headers
// from webhook.headers.<Name> props and, when webhook.secret is set, an
// HMAC-SHA256 signature receivers verify with Verify. Sending runs off the
// failing item's path through package alert. See docs/alerting.md.
package webhook

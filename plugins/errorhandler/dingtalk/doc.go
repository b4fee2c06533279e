// Package dingtalk implements the DINGTALK error handler (upstream's
// DingtalkJobErrorHandler): upstream's JSON text message to a DingTalk custom
// robot, with the keyword prefix, the HMAC-SHA256 timestamp/sign query
// parameters when a secret is set, connect and read timeouts and the response
// check (HTTP 200 and errcode 0). Sending runs off the failing item's path
// through package alert. See docs/alerting.md.
package dingtalk

// Package slack implements the SLACK error handler with
// github.com/slack-go/slack: the alert as Block Kit blocks (first line,
// job, instance, item, time, error), sent to an incoming webhook
// (slack.webhook) or with a bot token to a channel (slack.token and
// slack.channel, chat.postMessage). Sending runs off the failing item's
// path through package alert. See docs/alerting.md.
package slack

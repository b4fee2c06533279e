// Package wechat implements the WECHAT error handler (upstream's
// WechatJobErrorHandler): upstream's JSON text message to a WeCom group robot
// webhook, with its connect and read timeouts and its response check (HTTP 200
// and errcode 0). Sending runs off the failing item's path through package
// alert. See docs/alerting.md.
package wechat

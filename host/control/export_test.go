package control

import "github.com/hashicorp/go-hclog"

// ListenAs is Listen admitting peers of user id uid only.
func ListenAs(configFile, path string, uid int, log hclog.Logger) (*Listener, error) {
	return listen(configFile, path, uid, log)
}

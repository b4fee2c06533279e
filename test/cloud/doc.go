// Package cloud holds the end-to-end tests of the cloud scheduler: real
// `ejob cloud` processes against a real ZooKeeper, apps and jobs
// registered over the REST API, items run by the LOCAL test launcher
// (internal/locallauncher) as local processes of an app fetched over
// HTTP.
package cloud

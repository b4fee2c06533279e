// Package cloud holds the end-to-end tests of the cloud scheduler: real
// `ejob cloud` processes against a real ZooKeeper, apps and jobs
// registered over the REST API, items run by the LOCAL test launcher
// (internal/locallauncher) as local processes of an app fetched over
// HTTP. The console's cloud pages are driven there too, in Debian's
// headless chromium through internal/browsertest (EJOB_SCREENSHOTS=1
// writes docs/console/cloud-*.png).
package cloud

// Package locallauncher is a test launcher (spi.Launcher, type LOCAL): it
// runs each item of a cloud fire as a process on this machine, with the
// app fetched from its appURL and its bootstrapScript run by sh in the
// item's own directory, and holds items as ready while the CPU and memory
// it is given (Config cpu, memory) have no room. Its state lives in files
// under Config dir, so launchers of several schedulers sharing a dir see
// the same items and an item outlives the launcher that started it, as a
// pod outlives its scheduler.
//
// A DAEMON item gets EJOB_FIRE_LOG, a file of its directory where it
// appends a line BEGIN when a fire starts and COMPLETE when it ends; the
// launcher reports it idle between the two (spi.ItemStatus.Idle) and
// counts its COMPLETE lines (Fires).
//
// An item whose wrapper process dies without recording an exit status
// (killed with SIGKILL, as when a node dies) is reported lost. It is a test
// component, not a product: the scheduler's end-to-end tests run on it.
package locallauncher

// Command silent never answers: it blocks forever without printing
// anything, as a program that waits for input or serves something else
// would when run as a plugin.
package main

import "time"

func main() { time.Sleep(365 * 24 * time.Hour) }

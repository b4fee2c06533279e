// Package archtest checks the import rules of ARCHITECTURE.md: which
// packages may import which. It has only tests; `make test` runs them first.
package archtest

// Package jsonhttp holds what ejob's small JSON-over-HTTP protocols share
// (the registry and the execution history a standalone host serves on its
// control socket): a handler's bounds on each request (a slot among a few,
// a deadline, a body cap), strict decoding of one JSON value, and a
// client's bounded read of an answer, with errors that carry a sentinel
// across by a code.
package jsonhttp

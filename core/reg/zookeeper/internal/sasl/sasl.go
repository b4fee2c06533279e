package sasl

import "errors"

// Mechanism is one SASL client exchange, used by one goroutine. Start
// returns the initial response (empty when the server speaks first, as in
// DIGEST-MD5); Step answers each server challenge. The exchange is over
// once Complete reports true: a response returned with it is still sent,
// and the server's answer to it only needs to say OK.
type Mechanism interface {
	// Name is the mechanism's SASL name ("DIGEST-MD5", "GSSAPI").
	Name() string
	// Start begins the exchange.
	Start() ([]byte, error)
	// Step evaluates a server challenge. A nil response with Complete
	// means nothing more is sent.
	Step(challenge []byte) ([]byte, error)
	// Complete reports whether the client side has finished.
	Complete() bool
}

// ErrRejected marks a mechanism's refusal of what the server sent: a
// wrong proof of the server's identity, an unusable challenge. It is
// final: retrying cannot change the answer. Errors without it (a local
// I/O failure, a KDC out of reach) may pass on a retry.
var ErrRejected = errors.New("rejected")

// ErrNoChallenge is the error of a mechanism that expected a challenge and
// got an empty one: the ZooKeeper server answers a SASL request with
// nothing when it has no SASL configured (no JAAS Server section).
var ErrNoChallenge = errors.New("the server sent an empty SASL challenge: it has no SASL configured (a JAAS Server section and authProvider SASLAuthenticationProvider)")

// ErrCredentials marks a mechanism's failure to obtain credentials that
// retrying cannot mend: a keytab without the principal's key, a principal
// the KDC does not know, a wrong password at the KDC, an expired ticket
// cache.
var ErrCredentials = errors.New("no usable credentials")

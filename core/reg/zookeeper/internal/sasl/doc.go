// Package sasl holds the SASL client mechanisms ejob speaks to ZooKeeper:
// DIGEST-MD5 (RFC 2831, as ZooKeeper's DigestLoginModule serves it) and
// GSSAPI (RFC 4752, Kerberos V5 through gokrb5). Each Mechanism runs one
// exchange; the ZooKeeper framing of the tokens is core/reg/zookeeper's.
//
// DIGEST-MD5 is written here because no maintained Go SASL library has it
// (emersion/go-sasl has PLAIN, LOGIN, EXTERNAL, ANONYMOUS and OAUTHBEARER
// only); it is small, and RFC 2831's own examples test it.
package sasl

package hostconfig

import (
	"fmt"
	"strings"

	"github.com/ejob-io/ejob/core/config"
)

// Keys of each section, in their camelCase spelling. Spring's relaxed
// binding makes shardingTotalCount, sharding-total-count and
// sharding_total_count (any case) the same key; see relaxed.
const (
	keyElasticjob = "elasticjob"
	keyEjob       = "ejob"

	keyEnabled   = "enabled"
	keyRegCenter = "regCenter"
	keyJobs      = "jobs"
	keyTracing   = "tracing"
	keyDump      = "dump"

	keyServerLists                   = "serverLists"
	keyNamespace                     = "namespace"
	keyBaseSleepTimeMilliseconds     = "baseSleepTimeMilliseconds"
	keyMaxSleepTimeMilliseconds      = "maxSleepTimeMilliseconds"
	keyMaxRetries                    = "maxRetries"
	keySessionTimeoutMilliseconds    = "sessionTimeoutMilliseconds"
	keyConnectionTimeoutMilliseconds = "connectionTimeoutMilliseconds"
	keyDigest                        = "digest"
	keySASL                          = "sasl"

	keyMechanism   = "mechanism"
	keyUsername    = "username"
	keyPassword    = "password"
	keyPrincipal   = "principal"
	keyKeytab      = "keytab"
	keyTicketCache = "ticketCache"
	keyKrb5Conf    = "krb5Conf"
	keyServiceName = "serviceName"
	keyServiceHost = "serviceHost"
	keyJAASFile    = "jaasFile"
	keyACL         = "acl"

	keyPort    = "port"
	keyAddress = "address"

	keyElasticJobClass      = "elasticJobClass"
	keyElasticJobType       = "elasticJobType"
	keyJobBootstrapBeanName = "jobBootstrapBeanName"

	keyPluginsDir                = "pluginsDir"
	keyLockFile                  = "lockFile"
	keyDrainTimeout              = "drainTimeout"
	keyPluginStopGrace           = "pluginStopGrace"
	keyLogLevel                  = "logLevel"
	keyPreferredNetworkInterface = "preferredNetworkInterface"
	keyPreferredNetworkIP        = "preferredNetworkIp"
	keyJavaPeers                 = "javaPeers"
	keyTracingRetention          = "tracingRetention"
	keyControlSocket             = "controlSocket"
)

// The keys of each section. Functions, not variables: there is no
// package-level mutable state.
func topKeys() []string {
	return []string{keyElasticjob, keyEjob}
}

func elasticjobKeys() []string {
	return []string{keyEnabled, keyRegCenter, keyJobs, keyTracing, keyDump}
}

func dumpKeys() []string { return []string{keyPort, keyEnabled, keyAddress} }

func regCenterKeys() []string {
	return []string{
		keyServerLists, keyNamespace, keyBaseSleepTimeMilliseconds, keyMaxSleepTimeMilliseconds,
		keyMaxRetries, keySessionTimeoutMilliseconds, keyConnectionTimeoutMilliseconds, keyDigest, keySASL,
	}
}

func saslKeys() []string {
	return []string{
		keyMechanism, keyUsername, keyPassword, keyPrincipal, keyKeytab, keyTicketCache,
		keyKrb5Conf, keyServiceName, keyServiceHost, keyJAASFile, keyACL,
	}
}

// fileOnlyJobKey is a key of a job in the file that is not a key of the
// registry's config node (core/config's JobKeys): it configures the host
// and is never written to the registry. Its type, default and doc are
// those of docs/configuration.md's job-key table.
type fileOnlyJobKey struct {
	name, typ, def, doc string
}

// fileOnlyJobKeys lists the starter's job keys that core/config's JobKeys
// does not have. They come first in a job's keys and in the doc's table.
func fileOnlyJobKeys() []fileOnlyJobKey {
	return []fileOnlyJobKey{
		{keyElasticJobClass, "string", "—", "**refused**; see below"},
		{keyElasticJobType, "string", "required", "the job type: `SCRIPT`, `HTTP`, or a type served by a plugin in `pluginsDir`. " +
			"Matched case-insensitively. Written to the job's root node."},
		{keyJobBootstrapBeanName, "string", "none", "the starter's bean name. Accepted for compatibility and kept, " +
			"but ejob does not need it: a one-off job is triggered by its name."},
	}
}

// fileJobKeys returns the keys of core/config's JobKeys that a job of the
// file may set.
func fileJobKeys() []config.JobKey {
	var out []config.JobKey
	for _, k := range config.JobKeys() {
		if k.InFile {
			out = append(out, k)
		}
	}
	return out
}

// jobKeys returns every spelling a job of the file accepts.
func jobKeys() []string {
	var out []string
	for _, k := range fileOnlyJobKeys() {
		out = append(out, k.name)
	}
	for _, k := range fileJobKeys() {
		out = append(out, k.Name)
		if k.Legacy != "" {
			out = append(out, k.Legacy)
		}
	}
	return out
}

func ejobKeys() []string {
	return []string{
		keyPluginsDir, keyLockFile, keyDrainTimeout, keyPluginStopGrace, keyLogLevel,
		keyPreferredNetworkInterface, keyPreferredNetworkIP, keyJavaPeers, keyTracingRetention, keyHTTP,
		keyControlSocket,
	}
}

// sectionOf tells, for a misplaced key, the section it belongs to.
func sectionOf(relaxedKey string) string {
	for _, s := range []struct {
		path string
		keys []string
	}{
		{"elasticjob", elasticjobKeys()},
		{"elasticjob.regCenter", regCenterKeys()},
		{"elasticjob.dump", dumpKeys()},
		{"elasticjob.regCenter.sasl", saslKeys()},
		{"elasticjob.jobs.<name>", jobKeys()},
		{"ejob", ejobKeys()},
		{"ejob.http", httpKeys()},
		{"ejob.http.oidc", oidcKeys()},
	} {
		for _, k := range s.keys {
			if k != keyEnabled && relaxed(k) == relaxedKey {
				return s.path
			}
		}
	}
	return ""
}

// relaxed is Spring's relaxed-binding form of a key: lower case, without
// '-' and '_'.
func relaxed(key string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '-' || r == '_':
			return -1
		case 'A' <= r && r <= 'Z':
			return r + 'a' - 'A'
		}
		return r
	}, key)
}

// unknownKeyHint returns the end of an "unknown key" message: the closest
// known key (also returned as suggested), the section the key belongs to,
// or the known keys.
func unknownKeyHint(key string, known []string, inJob bool) (hint, suggested string) {
	rk := relaxed(key)
	if inJob {
		switch rk {
		case "type", "jobtype", "class", "jobclass":
			return fmt.Sprintf(" (did you mean %q?)", keyElasticJobType), keyElasticJobType
		}
	}
	best, bestDist := "", 0
	for _, k := range known {
		d := levenshtein(rk, relaxed(k))
		if best == "" || d < bestDist {
			best, bestDist = k, d
		}
	}
	if best != "" && (bestDist <= 2 || bestDist*4 <= len(rk)) {
		return fmt.Sprintf(" (did you mean %q?)", best), best
	}
	// A known key that starts with the unknown one (password, passwordHash)
	// is a better hint than another section that has the key.
	for _, k := range known {
		if len(rk) >= 4 && strings.HasPrefix(relaxed(k), rk) {
			return fmt.Sprintf(" (did you mean %q?)", k), k
		}
	}
	if inJob && strings.Contains(key, ".") {
		return " (job-type and error-handler properties go under props)", ""
	}
	if s := sectionOf(rk); s != "" {
		return fmt.Sprintf(" (it belongs under %s)", s), ""
	}
	if len(known) <= 8 {
		return fmt.Sprintf(" (known keys: %s)", strings.Join(known, ", ")), ""
	}
	return "", ""
}

// levenshtein is the edit distance between two strings, by bytes.
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

package hostconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ejob-io/ejob/core/reg/zookeeper"
)

// CloudFile is the configuration file of the cloud scheduler (`ejob cloud
// -c FILE`). Every field is complete and validated.
type CloudFile struct {
	Name string
	// Registry is elasticjob.regCenter (required: the scheduler's state and
	// its election live in ZooKeeper).
	Registry *zookeeper.Config
	// PluginsDir and LockFile are as in HostSettings; the launcher named by
	// Cloud.LauncherType is looked up there.
	PluginsDir string
	LockFile   string
	// LogLevel is as in HostSettings.
	LogLevel string
	// HTTP is ejob.http: the REST API (required).
	HTTP *HTTPSettings
	// Cloud is ejob.cloud.
	Cloud CloudSettings
	// Tracing is elasticjob.tracing: where the items' status and
	// execution events are recorded (its dataSource is required); nil
	// records none.
	Tracing *Tracing
}

// CloudSettings is ejob.cloud.
type CloudSettings struct {
	// LauncherType is ejob.cloud.launcher.type: the launcher plugin type
	// (spi.KindLauncher) that runs the items.
	LauncherType string
	// LauncherProps is ejob.cloud.launcher.props, passed to the launcher
	// with every call, with the Kubernetes settings added as kubeconfig,
	// context and namespace (see LauncherConfig).
	LauncherProps map[string]string
	// Kubernetes is ejob.cloud.kubernetes.
	Kubernetes KubernetesSettings
	// JobStateQueueSize bounds the jobs in each of the ready and
	// failover queues and the disabled apps and jobs (upstream's
	// job_state_queue_size; default DefaultJobStateQueueSize).
	JobStateQueueSize int
	// PollInterval is how often the leader asks the launcher what runs
	// (default DefaultPollInterval).
	PollInterval time.Duration
	// FailureBackoff is the pause before a job whose item failed is
	// launched again, doubling with each further fire that has a failed
	// item (0: the scheduler's default).
	FailureBackoff time.Duration
}

// KubernetesSettings is ejob.cloud.kubernetes: the cluster connection of
// a Kubernetes launcher.
type KubernetesSettings struct {
	// Kubeconfig is a kubeconfig file ("": in-cluster). A relative path is
	// relative to the file's directory.
	Kubeconfig string
	Context    string
	Namespace  string
}

// Cloud defaults.
const (
	DefaultJobStateQueueSize = 10000
	DefaultPollInterval      = time.Second
)

// LauncherConfig is the Config the launcher gets: the props plus the
// Kubernetes settings that are set.
func (c CloudSettings) LauncherConfig() map[string]string {
	out := make(map[string]string, len(c.LauncherProps)+3)
	for k, v := range c.LauncherProps {
		out[k] = v
	}
	for k, v := range map[string]string{"kubeconfig": c.Kubernetes.Kubeconfig, "context": c.Kubernetes.Context, "namespace": c.Kubernetes.Namespace} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

const (
	keyCloud             = "cloud"
	keyLauncher          = "launcher"
	keyKubernetes        = "kubernetes"
	keyKubeconfig        = "kubeconfig"
	keyContext           = "context"
	keyJobStateQueueSize = "jobStateQueueSize"
	keyPollInterval      = "pollInterval"
	keyFailureBackoff    = "failureBackoff"
	keyProps             = "props"
	keyType              = "type"
)

func cloudEjobKeys() []string {
	return []string{keyPluginsDir, keyLockFile, keyLogLevel, keyHTTP, keyCloud}
}
func cloudKeys() []string {
	return []string{keyLauncher, keyKubernetes, keyJobStateQueueSize, keyPollInterval, keyFailureBackoff}
}
func launcherKeys() []string   { return []string{keyType, keyProps} }
func kubernetesKeys() []string { return []string{keyKubeconfig, keyContext, keyNamespace} }

// LoadCloud reads and checks the cloud scheduler's configuration file at
// path; getenv looks up ${NAME} placeholders (nil: os.LookupEnv). Its
// error is the read error or a *FileError listing every problem as
// FILE:LINE: reason.
func LoadCloud(path string, getenv func(string) (string, bool)) (*CloudFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("configuration file: %w", err)
	}
	return parseCloud(path, data, getenv, filepath.Dir(path))
}

// ParseCloud is LoadCloud on data; name is used in messages, paths are
// kept as written.
func ParseCloud(name string, data []byte, getenv func(string) (string, bool)) (*CloudFile, error) {
	return parseCloud(name, data, getenv, "")
}

func parseCloud(name string, data []byte, getenv func(string) (string, bool), baseDir string) (*CloudFile, error) {
	d := newDecoder(name, LoadOptions{Getenv: getenv})
	f := &CloudFile{Name: name, Cloud: CloudSettings{JobStateQueueSize: DefaultJobStateQueueSize, PollInterval: DefaultPollInterval}}
	root, ok := d.document(data)
	if ok {
		d.cloudFile(root, f, baseDir)
	}
	if len(d.problems) > 0 {
		return nil, d.fileError(d.problems)
	}
	return f, nil
}

func (d *decoder) cloudFile(root *yaml.Node, f *CloudFile, baseDir string) {
	top, ok := d.section(root, "", topKeys(), false)
	if !ok {
		return
	}
	if e, ok := top[keyElasticjob]; !ok {
		d.report(1, nil, "no elasticjob section: the cloud scheduler needs elasticjob.regCenter (its state lives in ZooKeeper)")
	} else if ej, ok := d.section(e.value, e.path, []string{keyRegCenter, keyTracing}, false); ok {
		if rc, ok := ej[keyRegCenter]; ok {
			f.Registry = d.regCenter(rc, baseDir)
		} else {
			d.missing(e.line(), e.path, keyRegCenter, " (the cloud scheduler's state lives in ZooKeeper)")
		}
		if te, ok := ej[keyTracing]; ok {
			f.Tracing = d.tracing(te, LoadOptions{}, false, baseDir)
		}
	}
	e, ok := top[keyEjob]
	if !ok {
		d.report(1, nil, "no ejob section: the cloud scheduler needs ejob.http (its REST API) and ejob.cloud.launcher")
		return
	}
	fs, ok := d.section(e.value, e.path, cloudEjobKeys(), false)
	if !ok {
		return
	}
	for _, k := range []struct {
		key string
		dst *string
	}{{keyPluginsDir, &f.PluginsDir}, {keyLockFile, &f.LockFile}} {
		if fe, ok := fs[k.key]; ok {
			if s, ok := d.str(fe); ok {
				*k.dst = relativeTo(baseDir, s)
			}
		}
	}
	if fe, ok := fs[keyLogLevel]; ok {
		f.LogLevel = d.logLevel(fe)
	}
	if fe, ok := fs[keyHTTP]; ok {
		f.HTTP = d.http(fe, baseDir)
	} else {
		d.missing(e.line(), e.path, keyHTTP, " (the cloud scheduler's REST API, e.g. http: {listen: 127.0.0.1:8899})")
	}
	ce, ok := fs[keyCloud]
	if !ok {
		d.missing(e.line(), e.path, keyCloud, " (ejob.cloud.launcher.type names the launcher that runs the items)")
		return
	}
	d.cloud(ce, &f.Cloud, baseDir)
}

func (d *decoder) cloud(e entry, c *CloudSettings, baseDir string) {
	fs, ok := d.section(e.value, e.path, cloudKeys(), false)
	if !ok {
		return
	}
	if le, ok := fs[keyLauncher]; !ok {
		d.missing(e.line(), e.path, keyLauncher, " (launcher: {type: KUBERNETES})")
	} else if ls, ok := d.section(le.value, le.path, launcherKeys(), false); ok {
		if te, ok := ls[keyType]; ok {
			c.LauncherType, _ = d.nonEmptyStr(te)
		} else {
			d.missing(le.line(), le.path, keyType, " (the launcher plugin type, e.g. KUBERNETES)")
		}
		if pe, ok := ls[keyProps]; ok {
			c.LauncherProps, _, _ = d.stringMap(pe, func(s string) string { return s })
		}
	}
	if ke, ok := fs[keyKubernetes]; ok {
		if ks, ok := d.section(ke.value, ke.path, kubernetesKeys(), false); ok {
			for _, k := range []struct {
				key  string
				dst  *string
				path bool
			}{{keyKubeconfig, &c.Kubernetes.Kubeconfig, true}, {keyContext, &c.Kubernetes.Context, false}, {keyNamespace, &c.Kubernetes.Namespace, false}} {
				if fe, ok := ks[k.key]; ok {
					if s, ok := d.str(fe); ok {
						if k.path {
							s = relativeTo(baseDir, s)
						}
						*k.dst = s
					}
				}
			}
		}
	}
	if fe, ok := fs[keyJobStateQueueSize]; ok {
		if n, ok := d.integer(fe); ok {
			if n < 1 {
				d.report(fe.value.Line, nil, "%s: %d: want at least 1", fe.path, n)
			} else {
				c.JobStateQueueSize = n
			}
		}
	}
	if fe, ok := fs[keyPollInterval]; ok {
		if v, ok := d.duration(fe); ok {
			if v < 10*time.Millisecond || v > time.Minute {
				d.report(fe.value.Line, nil, "%s: %s: want 10ms to 1m", fe.path, v)
			} else {
				c.PollInterval = v
			}
		}
	}
	if fe, ok := fs[keyFailureBackoff]; ok {
		if v, ok := d.duration(fe); ok {
			if v < 100*time.Millisecond || v > 10*time.Minute {
				d.report(fe.value.Line, nil, "%s: %s: want 100ms to 10m", fe.path, v)
			} else {
				c.FailureBackoff = v
			}
		}
	}
}

// relativeTo makes a relative, non-empty path relative to baseDir (when
// known).
func relativeTo(baseDir, p string) string {
	if p != "" && baseDir != "" && !filepath.IsAbs(p) {
		return filepath.Join(baseDir, p)
	}
	return p
}

// logLevel reads a log level (trace, debug, info, warn or error).
func (d *decoder) logLevel(fe entry) string {
	s, ok := d.str(fe)
	if !ok {
		return ""
	}
	switch l := strings.ToLower(strings.TrimSpace(s)); l {
	case "", "trace", "debug", "info", "warn", "error":
		return l
	}
	d.report(fe.value.Line, nil, "%s: want trace, debug, info, warn or error, got %q", fe.path, s)
	return ""
}

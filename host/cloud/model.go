package cloud

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/cron"
)

// ErrInvalid marks a refused app or job body; ErrNotFound an app or job
// that is not there; ErrConflict one that is there already (or disabled).
// ErrNoStatistics marks a statistics path that needs the statistics
// tables when the scheduler keeps none; ErrStandby an answer only the
// leader has; ErrTooSoon a reconciliation asked for within
// ReconcileGuard of the last one.
var (
	ErrInvalid      = errors.New("invalid")
	ErrNotFound     = errors.New("not found")
	ErrConflict     = errors.New("conflict")
	ErrNoStatistics = errors.New("no statistics tables")
	ErrStandby      = errors.New("standby")
	ErrTooSoon      = errors.New("too soon")
)

// App is an ElasticJob-Cloud app (upstream's CloudAppConfigurationPOJO),
// with ejob's image alternative to appURL.
type App struct {
	AppName         string  `json:"appName" yaml:"appName"`
	AppURL          string  `json:"appURL,omitempty" yaml:"appURL,omitempty"`
	Image           string  `json:"image,omitempty" yaml:"image,omitempty"`
	BootstrapScript string  `json:"bootstrapScript" yaml:"bootstrapScript"`
	CPUCount        float64 `json:"cpuCount" yaml:"cpuCount"`
	MemoryMB        float64 `json:"memoryMB" yaml:"memoryMB"`
	AppCacheEnable  bool    `json:"appCacheEnable" yaml:"appCacheEnable"`
	// EventTraceSamplingCount is kept for upstream's clients; ejob does not
	// sample.
	EventTraceSamplingCount int `json:"eventTraceSamplingCount" yaml:"eventTraceSamplingCount"`
}

// Job is an ElasticJob-Cloud job (upstream's CloudJobConfigurationPOJO).
type Job struct {
	AppName                       string            `json:"appName" yaml:"appName"`
	CPUCount                      float64           `json:"cpuCount" yaml:"cpuCount"`
	MemoryMB                      float64           `json:"memoryMB" yaml:"memoryMB"`
	JobExecutionType              string            `json:"jobExecutionType" yaml:"jobExecutionType"`
	JobName                       string            `json:"jobName" yaml:"jobName"`
	Cron                          string            `json:"cron,omitempty" yaml:"cron,omitempty"`
	ShardingTotalCount            int               `json:"shardingTotalCount" yaml:"shardingTotalCount"`
	ShardingItemParameters        string            `json:"shardingItemParameters,omitempty" yaml:"shardingItemParameters,omitempty"`
	JobParameter                  string            `json:"jobParameter,omitempty" yaml:"jobParameter,omitempty"`
	Failover                      bool              `json:"failover" yaml:"failover"`
	Misfire                       bool              `json:"misfire" yaml:"misfire"`
	MonitorExecution              bool              `json:"monitorExecution" yaml:"monitorExecution"`
	MaxTimeDiffSeconds            int               `json:"maxTimeDiffSeconds" yaml:"maxTimeDiffSeconds"`
	ReconcileIntervalMinutes      int               `json:"reconcileIntervalMinutes" yaml:"reconcileIntervalMinutes"`
	JobShardingStrategyType       string            `json:"jobShardingStrategyType,omitempty" yaml:"jobShardingStrategyType,omitempty"`
	JobExecutorServiceHandlerType string            `json:"jobExecutorServiceHandlerType,omitempty" yaml:"jobExecutorServiceHandlerType,omitempty"`
	JobErrorHandlerType           string            `json:"jobErrorHandlerType,omitempty" yaml:"jobErrorHandlerType,omitempty"`
	Description                   string            `json:"description,omitempty" yaml:"description,omitempty"`
	Props                         map[string]string `json:"props,omitempty" yaml:"props,omitempty"`
	Disabled                      bool              `json:"disabled" yaml:"disabled"`
	Overwrite                     bool              `json:"overwrite" yaml:"overwrite"`
}

// The execution types.
const (
	Transient = "TRANSIENT"
	Daemon    = "DAEMON"
)

// MaxShardingTotalCount bounds a job's items.
const MaxShardingTotalCount = 10000

// decodeStrict decodes one JSON object into v, refusing unknown fields
// and trailing data.
func decodeStrict(data []byte, v any, what string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %s body: %v", ErrInvalid, what, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: %s body: data after the JSON object", ErrInvalid, what)
	}
	return nil
}

// DecodeApp reads an app body: upstream's defaults for absent fields
// (cpuCount 1, memoryMB 128, appCacheEnable true), then Validate.
func DecodeApp(data []byte) (App, error) {
	a := App{CPUCount: 1, MemoryMB: 128, AppCacheEnable: true}
	if err := decodeStrict(data, &a, "app"); err != nil {
		return App{}, err
	}
	return a, a.Validate()
}

// Validate lists every problem of a.
func (a App) Validate() error {
	var p []string
	if err := config.CheckJobName(a.AppName); err != nil {
		p = append(p, "appName: "+strings.TrimPrefix(err.Error(), config.ErrInvalidJobName.Error()+": "))
	}
	switch {
	case a.AppURL == "" && a.Image == "":
		p = append(p, "appURL: required (or image)")
	case a.AppURL != "" && a.Image != "":
		p = append(p, "appURL and image: give one of them")
	case a.AppURL != "" && !strings.HasPrefix(a.AppURL, "http://") && !strings.HasPrefix(a.AppURL, "https://"):
		p = append(p, fmt.Sprintf("appURL: %q: want an http:// or https:// URL", a.AppURL))
	}
	if a.AppURL != "" && strings.TrimSpace(a.BootstrapScript) == "" {
		p = append(p, "bootstrapScript: required with appURL")
	}
	if a.CPUCount < 0 || a.CPUCount > 1024 {
		p = append(p, fmt.Sprintf("cpuCount: %g: want 0 to 1024", a.CPUCount))
	}
	if a.MemoryMB < 0 || a.MemoryMB > 1<<22 {
		p = append(p, fmt.Sprintf("memoryMB: %g: want 0 to %d", a.MemoryMB, 1<<22))
	}
	if a.EventTraceSamplingCount < 0 {
		p = append(p, fmt.Sprintf("eventTraceSamplingCount: %d: want 0 or more", a.EventTraceSamplingCount))
	}
	return problems("app", p)
}

func problems(what string, p []string) error {
	if len(p) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s: %s", ErrInvalid, what, strings.Join(p, "; "))
}

// DecodeJob reads a job body, then Validate.
func DecodeJob(data []byte) (Job, error) {
	var j Job
	if err := decodeStrict(data, &j, "job"); err != nil {
		return Job{}, err
	}
	return j, j.Validate()
}

// Validate lists every problem of j. The execution type alone decides
// whether the scheduler (TRANSIENT) or the item (DAEMON) owns the cron.
func (j Job) Validate() error {
	var p []string
	if err := config.CheckJobName(j.JobName); err != nil {
		p = append(p, "jobName: "+strings.TrimPrefix(err.Error(), config.ErrInvalidJobName.Error()+": "))
	}
	if err := config.CheckJobName(j.AppName); err != nil {
		p = append(p, "appName: "+strings.TrimPrefix(err.Error(), config.ErrInvalidJobName.Error()+": "))
	}
	switch j.JobExecutionType {
	case Transient:
		if j.Cron != "" {
			if _, err := cron.Parse(j.Cron); err != nil {
				p = append(p, fmt.Sprintf("cron: %q: %v", j.Cron, err))
			}
		}
	case Daemon:
		if j.Cron == "" {
			p = append(p, "cron: required for a DAEMON job (each item fires on it)")
		} else if _, err := cron.Parse(j.Cron); err != nil {
			p = append(p, fmt.Sprintf("cron: %q: %v", j.Cron, err))
		}
	default:
		p = append(p, fmt.Sprintf("jobExecutionType: %q: want TRANSIENT or DAEMON", j.JobExecutionType))
	}
	if j.ShardingTotalCount < 1 || j.ShardingTotalCount > MaxShardingTotalCount {
		p = append(p, fmt.Sprintf("shardingTotalCount: %d: want 1 to %d", j.ShardingTotalCount, MaxShardingTotalCount))
	}
	if j.CPUCount < 0.001 || j.CPUCount > 1024 {
		p = append(p, fmt.Sprintf("cpuCount: %g: want 0.001 to 1024 (CPUs per item)", j.CPUCount))
	}
	if j.MemoryMB < 1 || j.MemoryMB > 1<<22 {
		p = append(p, fmt.Sprintf("memoryMB: %g: want 1 to %d (MB per item)", j.MemoryMB, 1<<22))
	}
	if _, err := j.ItemParameters(); err != nil {
		p = append(p, err.Error())
	}
	return problems("job", p)
}

// ItemParameters parses shardingItemParameters ("0=a,1=b").
func (j Job) ItemParameters() (map[int]string, error) {
	out := map[int]string{}
	if strings.TrimSpace(j.ShardingItemParameters) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(j.ShardingItemParameters, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		n, err := strconv.Atoi(strings.TrimSpace(k))
		if !ok || err != nil || n < 0 {
			return nil, fmt.Errorf("shardingItemParameters: %q: want item=parameter pairs separated by commas, e.g. 0=a,1=b", kv)
		}
		if n >= j.ShardingTotalCount && j.ShardingTotalCount > 0 {
			return nil, fmt.Errorf("shardingItemParameters: item %d: the job has %d items (0 to %d)", n, j.ShardingTotalCount, j.ShardingTotalCount-1)
		}
		out[n] = strings.TrimSpace(v)
	}
	return out, nil
}

// marshalYAML is the form stored in ZooKeeper.
func marshalYAML(v any) []byte {
	b, err := yaml.Marshal(v)
	if err != nil {
		panic(err) // the structs above always marshal
	}
	return b
}

func unmarshalYAML(b []byte, v any) error { return yaml.Unmarshal(b, v) }

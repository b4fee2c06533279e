package lifecycle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/spi/redact"
)

// ConfigJSON is a job configuration as ElasticJob-UI's REST API carries it
// (GET /api/jobs/config/{jobName}, PUT /api/jobs/config): upstream's
// JobConfigurationPOJO as Jackson writes it, field for field, without
// jobExtraConfigurations (the console nulls them out on reads and copies
// the stored ones on writes). The thread-pool type is under the console's
// name, jobExecutorServiceHandlerType; DecodeConfigJSON also accepts
// 3.0.5's jobExecutorThreadPoolSizeProviderType. Strings Java keeps as
// null are "" here.
type ConfigJSON struct {
	JobName                       string   `json:"jobName"`
	Cron                          string   `json:"cron"`
	TimeZone                      string   `json:"timeZone"`
	ShardingTotalCount            int      `json:"shardingTotalCount"`
	ShardingItemParameters        string   `json:"shardingItemParameters"`
	JobParameter                  string   `json:"jobParameter"`
	MonitorExecution              bool     `json:"monitorExecution"`
	Failover                      bool     `json:"failover"`
	Misfire                       bool     `json:"misfire"`
	MaxTimeDiffSeconds            int      `json:"maxTimeDiffSeconds"`
	ReconcileIntervalMinutes      int      `json:"reconcileIntervalMinutes"`
	JobShardingStrategyType       string   `json:"jobShardingStrategyType"`
	JobExecutorServiceHandlerType string   `json:"jobExecutorServiceHandlerType"`
	JobErrorHandlerType           string   `json:"jobErrorHandlerType"`
	JobListenerTypes              []string `json:"jobListenerTypes"`
	// JobExtraConfigurations is always null, as the console sends it;
	// Apply ignores it.
	JobExtraConfigurations any               `json:"jobExtraConfigurations"`
	Description            string            `json:"description"`
	Props                  map[string]string `json:"props"`
	Disabled               bool              `json:"disabled"`
	Overwrite              bool              `json:"overwrite"`
	Label                  string            `json:"label"`
	StaticSharding         bool              `json:"staticSharding"`
}

// ToConfigJSON returns cfg as the console shows it, the secrets of its
// props masked (redact.Props; a console that writes the masked values
// back keeps the stored ones, see redact.Unmask).
func ToConfigJSON(cfg *config.JobConfiguration) ConfigJSON {
	out := ConfigJSON{
		JobName: cfg.JobName, Cron: cfg.Cron, TimeZone: cfg.TimeZone, ShardingTotalCount: cfg.ShardingTotalCount,
		ShardingItemParameters: cfg.ShardingItemParameters, JobParameter: cfg.JobParameter,
		MonitorExecution: cfg.MonitorExecution, Failover: cfg.Failover, Misfire: cfg.Misfire,
		MaxTimeDiffSeconds: cfg.MaxTimeDiffSeconds, ReconcileIntervalMinutes: cfg.ReconcileIntervalMinutes,
		JobShardingStrategyType:       cfg.JobShardingStrategyType,
		JobExecutorServiceHandlerType: cfg.JobExecutorThreadPoolSizeProviderType,
		JobErrorHandlerType:           cfg.JobErrorHandlerType, JobListenerTypes: slices.Clone(cfg.JobListenerTypes),
		Description: cfg.Description, Props: redact.Props(cfg.Props), Disabled: cfg.Disabled, Overwrite: cfg.Overwrite,
		Label: cfg.Label, StaticSharding: cfg.StaticSharding,
	}
	if out.JobListenerTypes == nil {
		out.JobListenerTypes = []string{}
	}
	if out.Props == nil {
		out.Props = map[string]string{}
	}
	return out
}

// DecodeConfigJSON reads a configuration sent by a console. Absent fields
// take the POJO's defaults (maxTimeDiffSeconds -1, everything else empty,
// 0 or false), as Jackson leaves them; unknown fields are ignored, as by
// Spring's Jackson (the console sends its own form fields along). Malformed
// JSON is ErrInvalid.
func DecodeConfigJSON(data []byte) (ConfigJSON, error) {
	var in struct {
		ConfigJSON
		ThreadPool *string `json:"jobExecutorThreadPoolSizeProviderType"`
	}
	in.MaxTimeDiffSeconds = -1
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&in); err != nil {
		return ConfigJSON{}, fmt.Errorf("%w: job configuration JSON: %v", ErrInvalid, err)
	}
	if dec.More() {
		return ConfigJSON{}, fmt.Errorf("%w: job configuration JSON: data after the object", ErrInvalid)
	}
	if in.ThreadPool != nil && in.JobExecutorServiceHandlerType == "" {
		in.JobExecutorServiceHandlerType = *in.ThreadPool
	}
	in.JobExtraConfigurations = nil
	return in.ConfigJSON, nil
}

// Apply returns stored with every field of j written over it, as the
// console's PUT replaces the whole POJO but keeps the stored
// jobExtraConfigurations. What stored remembers beyond its fields (keys
// this version does not know, the spelling of the thread-pool key) is
// kept. The result is not validated (UpdateConfig does).
func (j ConfigJSON) Apply(stored *config.JobConfiguration) *config.JobConfiguration {
	cfg := stored.Clone()
	cfg.JobName, cfg.Cron, cfg.TimeZone, cfg.ShardingTotalCount = j.JobName, j.Cron, j.TimeZone, j.ShardingTotalCount
	cfg.ShardingItemParameters, cfg.JobParameter = j.ShardingItemParameters, j.JobParameter
	cfg.MonitorExecution, cfg.Failover, cfg.Misfire = j.MonitorExecution, j.Failover, j.Misfire
	cfg.MaxTimeDiffSeconds, cfg.ReconcileIntervalMinutes = j.MaxTimeDiffSeconds, j.ReconcileIntervalMinutes
	cfg.JobShardingStrategyType = j.JobShardingStrategyType
	cfg.JobExecutorThreadPoolSizeProviderType = j.JobExecutorServiceHandlerType
	cfg.JobErrorHandlerType, cfg.JobListenerTypes = j.JobErrorHandlerType, slices.Clone(j.JobListenerTypes)
	cfg.Description, cfg.Props = j.Description, maps.Clone(j.Props)
	cfg.Disabled, cfg.Overwrite, cfg.Label, cfg.StaticSharding = j.Disabled, j.Overwrite, j.Label, j.StaticSharding
	return cfg
}

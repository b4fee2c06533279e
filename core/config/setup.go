package config

import (
	"fmt"
	"strings"
)

// RegistryState is what the registry holds for a job when it starts: the
// job root node `/{job}` and its `config` child.
type RegistryState struct {
	RootExists   bool
	Root         []byte // job class name, when RootExists
	ConfigExists bool
	Config       []byte // config YAML, when ConfigExists
}

// SetUpResult is the outcome of the startup overwrite rule.
type SetUpResult struct {
	// Write is true when the caller must persist ConfigData to `config`
	// and then the job class name to the root node `/{job}`, in that order
	// (as upstream does).
	Write bool
	// ConfigData is Marshal(local) when Write.
	ConfigData []byte
	// Config is the configuration the job runs with: the registry's, or
	// when Write the local one as ConfigData reads back (Unmarshal's
	// result, as Equal compares it: a thread-pool type that Marshal
	// omits, CPU, is empty), so that a caller can take it for what the
	// node parses to instead of parsing ConfigData again.
	Config *JobConfiguration
}

// SetUp applies upstream's ConfigurationService.setUpJobConfiguration
// as a pure function:
//
//  1. If the root node exists and holds a non-blank job class name other
//     than jobClassName, it fails with ErrJobConflict and upstream's text.
//  2. If `config` does not exist, or local.Overwrite: write the local
//     configuration (Write=true) and run with it.
//  3. Otherwise the registry's configuration wins and local is ignored;
//     a registry config that does not parse or breaks a bound (Decode) is
//     an error wrapping ErrRegistryConfig and ErrMalformed or ErrInvalid.
//
// It does not validate local; do that first.
func SetUp(jobClassName string, local *JobConfiguration, reg RegistryState) (SetUpResult, error) {
	return (*Marshaller)(nil).SetUp(jobClassName, local, reg)
}

// SetUp is the package's SetUp, marshalling with m.
func (m *Marshaller) SetUp(jobClassName string, local *JobConfiguration, reg RegistryState) (SetUpResult, error) {
	if local == nil {
		return SetUpResult{}, fmt.Errorf("set up job configuration: nil local configuration")
	}
	if reg.RootExists {
		if existing := string(reg.Root); strings.TrimSpace(existing) != "" && existing != jobClassName {
			return SetUpResult{}, fmt.Errorf("%w: The job '%s' in register center's class is '%s', your job class is '%s'",
				ErrJobConflict, local.JobName, existing, jobClassName)
		}
	}
	if !reg.ConfigExists || local.Overwrite {
		data, err := m.Marshal(local)
		if err != nil {
			return SetUpResult{}, fmt.Errorf("set up job configuration %q: %w", local.JobName, err)
		}
		return SetUpResult{Write: true, ConfigData: data, Config: readBack(local)}, nil
	}
	remote, err := Decode(reg.Config)
	if err != nil {
		return SetUpResult{}, fmt.Errorf("set up job configuration %q: %w: %w", local.JobName, ErrRegistryConfig, err)
	}
	return SetUpResult{Config: remote}, nil
}

// readBack returns c as Unmarshal reads Marshal(c) back, as Equal compares
// them: c itself, or a copy without the thread-pool type when Marshal
// omits it (CPU: see LegacyThreadPoolKey).
func readBack(c *JobConfiguration) *JobConfiguration {
	if _, written := poolKeyWritten(c); written || c.JobExecutorThreadPoolSizeProviderType == "" {
		return c
	}
	c = c.Clone()
	c.JobExecutorThreadPoolSizeProviderType = ""
	return c
}

package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/cron"
	"github.com/ejob-io/ejob/core/node"
	"github.com/ejob-io/ejob/core/reg"
)

// StoredConfig is a job's configuration as read from its config node.
type StoredConfig struct {
	Config *config.JobConfiguration
	// Version is the config node's data version: pass it to UpdateConfig
	// with IfVersion to write only if nobody changed the node meanwhile.
	Version int32
}

// GetConfig is upstream's getJobConfiguration: the job's config node
// parsed; ErrJobNotFound when it is absent (upstream returns null).
func GetConfig(ctx context.Context, c Reader, jobName string) (StoredConfig, error) {
	cfg, st, err := readConfig(ctx, c, node.New(jobName))
	if err != nil {
		return StoredConfig{}, err
	}
	return StoredConfig{Config: cfg, Version: st.Version}, nil
}

// GetConfigToReplace is GetConfig for a caller about to write a whole
// configuration over the stored one (the REST API's update): a config
// node that does not parse (config.ErrMalformed) gives config.New(jobName,
// 1) with the node's version instead of an error, so that a valid
// configuration can replace it.
func GetConfigToReplace(ctx context.Context, c Reader, jobName string) (StoredConfig, error) {
	sc, err := GetConfig(ctx, c, jobName)
	if !errors.Is(err, config.ErrMalformed) {
		return sc, err
	}
	_, st, gerr := c.Get(ctx, node.New(jobName).Config())
	if gerr != nil {
		return StoredConfig{}, fmt.Errorf("job %q: read config: %w", jobName, gerr)
	}
	return StoredConfig{Config: config.New(jobName, 1), Version: st.Version}, nil
}

// UpdateOption modifies UpdateConfig.
type UpdateOption func(*updateOptions)

type updateOptions struct{ version int32 }

// IfVersion makes UpdateConfig write only if the config node's version is
// still v (from GetConfig); otherwise it returns ErrConflict.
func IfVersion(v int32) UpdateOption { return func(o *updateOptions) { o.version = v } }

// UpdateConfig is upstream's updateJobConfiguration: it writes cfg to
// /{cfg.JobName}/config in one transaction that checks the node exists, so
// the running instances pick it up (a new cron reschedules them, a new
// shardingTotalCount reshards, new props apply from the next fire).
//
// Unlike upstream, which checks only jobName and shardingTotalCount, it
// validates the whole configuration first, cron included (any syntax of
// core/cron, in the configured time zone), and returns ErrInvalid (wrapping
// the config.FieldError values) without writing when it does not validate.
// Plugin types are not checked: the namespace may hold Java jobs whose
// types ejob does not serve. A missing config node is ErrJobNotFound
// (upstream's update silently does nothing); IfVersion makes a changed node
// ErrConflict.
func UpdateConfig(ctx context.Context, c reg.Client, cfg *config.JobConfiguration, opts ...UpdateOption) error {
	o := updateOptions{version: reg.AnyVersion}
	for _, f := range opts {
		f(&o)
	}
	if cfg == nil {
		return fmt.Errorf("update config: %w", invalidf("no configuration"))
	}
	if err := ValidateConfig(cfg); err != nil {
		return fmt.Errorf("update config of job %q: %w", cfg.JobName, err)
	}
	data, err := config.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("update config of job %q: %w", cfg.JobName, err)
	}
	j := node.New(cfg.JobName)
	_, err = c.Multi(ctx, reg.CheckOp(j.Config(), reg.AnyVersion), reg.SetOp(j.Config(), data, o.version))
	switch {
	case errors.Is(err, reg.ErrNoNode):
		return fmt.Errorf("update config: %w: %q in namespace %q", ErrJobNotFound, cfg.JobName, c.Namespace())
	case errors.Is(err, reg.ErrBadVersion):
		return fmt.Errorf("update config of job %q: %w (read version %d); read it again", cfg.JobName, ErrConflict, o.version)
	case err != nil:
		return fmt.Errorf("update config of job %q: %w", cfg.JobName, err)
	}
	return nil
}

// ValidateConfig checks cfg as UpdateConfig does before writing: every key
// (config.Validate) and the cron in its time zone. The error wraps
// ErrInvalid and each config.FieldError.
func ValidateConfig(cfg *config.JobConfiguration) error {
	err := cfg.Validate(config.ValidateOptions{CheckCron: func(expr, tz string) error {
		loc, err := cron.LoadZone(tz)
		if err != nil {
			return err
		}
		_, err = cron.ParseSchedule(expr, loc)
		return err
	}})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// RemoveConfig is upstream's removeJobConfiguration: it deletes /{jobName}
// and everything under it. Instances still running the job lose their
// nodes as after a shutdown. ErrJobNotFound when /{jobName} does not exist.
func RemoveConfig(ctx context.Context, c reg.Client, jobName string) error {
	j := node.New(jobName)
	if jobName == "" {
		return fmt.Errorf("remove config: %w", invalidf("no job name"))
	}
	ok, err := exists(ctx, c, j.Root())
	if err != nil {
		return fmt.Errorf("remove job %q: %w", jobName, err)
	}
	if !ok {
		return fmt.Errorf("remove config: %w: %q in namespace %q", ErrJobNotFound, jobName, c.Namespace())
	}
	if err := reg.DeleteRecursive(ctx, c, j.Root()); err != nil {
		return fmt.Errorf("remove job %q: %w", jobName, err)
	}
	return nil
}

// SetConfigKeys applies settings to cfg, each "key=value" for a key of the
// config node (config.JobKeys, either spelling of the thread-pool key), or
// "props.NAME=value" to set one prop and "props.NAME-" to remove it. Values
// are typed by the key: an int, true or false, a comma-separated list for
// jobListenerTypes, text for strings (empty clears). jobName and
// jobExtraConfigurations cannot be set. It does not validate the result
// (UpdateConfig does); a malformed setting is ErrInvalid.
func SetConfigKeys(cfg *config.JobConfiguration, settings ...string) error {
	for _, s := range settings {
		if err := setConfigKey(cfg, s); err != nil {
			return fmt.Errorf("%w: %q: %v", ErrInvalid, s, err)
		}
	}
	return nil
}

func setConfigKey(cfg *config.JobConfiguration, s string) error {
	if name, ok := strings.CutPrefix(s, config.KeyProps+"."); ok {
		if k, v, ok := strings.Cut(name, "="); ok {
			if k == "" {
				return errors.New("no property name")
			}
			cfg.Props = maps.Clone(cfg.Props)
			if cfg.Props == nil {
				cfg.Props = map[string]string{}
			}
			cfg.Props[k] = v
			return nil
		}
		if k, ok := strings.CutSuffix(name, "-"); ok && k != "" {
			cfg.Props = maps.Clone(cfg.Props)
			delete(cfg.Props, k)
			return nil
		}
		return errors.New("want props.NAME=value to set a property or props.NAME- to remove it")
	}
	key, value, ok := strings.Cut(s, "=")
	if !ok {
		return errors.New("want key=value")
	}
	var k *config.JobKey
	var known []string
	for _, jk := range config.JobKeys() {
		if jk.Name == key || (jk.Legacy != "" && jk.Legacy == key) {
			k = &jk
		}
		known = append(known, jk.Name)
	}
	if k == nil {
		return fmt.Errorf("unknown key %q (keys: %s; props.NAME for a property)", key, strings.Join(known, ", "))
	}
	switch k.Name {
	case config.KeyJobName:
		return errors.New("the job name cannot be changed")
	case config.KeyJobExtraConfigurations, config.KeyProps:
		return fmt.Errorf("%s cannot be set here (use props.NAME=value for a property)", k.Name)
	}
	switch p := k.Field(cfg).(type) {
	case *string:
		*p = value
	case *int:
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil {
			return fmt.Errorf("%s takes an integer", k.Name)
		}
		*p = n
	case *bool:
		switch strings.TrimSpace(value) {
		case "true":
			*p = true
		case "false":
			*p = false
		default:
			return fmt.Errorf("%s takes true or false", k.Name)
		}
	case *[]string:
		var list []string
		for item := range strings.SplitSeq(value, ",") {
			if item = strings.TrimSpace(item); item != "" {
				list = append(list, item)
			}
		}
		*p = list
	default:
		return fmt.Errorf("%s cannot be set here", k.Name)
	}
	return nil
}

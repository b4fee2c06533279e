package cli

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ejob-io/ejob/core/sharding"
	"github.com/ejob-io/ejob/host/pluginhost"
	"github.com/ejob-io/ejob/spi"
)

func newShardingCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sharding",
		Short: "Inspect sharding strategies",
	}
	cmd.AddCommand(newShardingPreviewCmd(e))
	return cmd
}

func newShardingPreviewCmd(e *env) *cobra.Command {
	var (
		f         catalogFlags
		strategy  string
		job       string
		total     int
		instances []string
	)
	cmd := &cobra.Command{
		Use:   "preview",
		Short: "Show how a strategy would assign a job's items to instances",
		Long: `Orders the instance ids as the runtime does (descending string order of the
ids, so 192.168.1.2@-@200 comes before 192.168.1.10@-@50), calls the strategy
through the plugin runtime exactly as the leader would, and prints one JSON
object mapping every instance id to its items, in that order. An instance
that gets no items maps to [].`,
		Example: `  ejob sharding preview --strategy ROUND_ROBIN --job javaSimpleJob --total 2 \
      --instances 192.168.1.2@-@200,192.168.1.1@-@100,192.168.1.10@-@50
  {"192.168.1.2@-@200":[1],"192.168.1.1@-@100":[],"192.168.1.10@-@50":[0]}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case strategy == "":
				return usagef(cmd, "--strategy is required")
			case job == "":
				return usagef(cmd, "--job is required")
			case total <= 0:
				return usagef(cmd, "--total must be > 0, got %d", total)
			case len(instances) == 0:
				return usagef(cmd, "--instances is required")
			}
			for _, id := range instances {
				if strings.TrimSpace(id) == "" {
					return usagef(cmd, "--instances: empty instance id in %q", strings.Join(instances, ","))
				}
			}
			cfg, err := f.config(e)
			if err != nil {
				return err
			}
			cat, err := pluginhost.Open(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer cat.Close()
			s, err := spi.Resolve[spi.ShardingStrategy](cat, strategy)
			if err != nil {
				return err
			}
			assignments, err := sharding.Shard(cmd.Context(), s, job, total, instances)
			if err != nil {
				return err
			}
			out, err := assignmentsJSON(assignments)
			if err != nil {
				return err
			}
			_, err = e.stdout.Write(append(out, '\n'))
			return err
		},
	}
	f.register(cmd, false)
	cmd.Flags().StringVar(&strategy, "strategy", "AVG_ALLOCATION", "sharding strategy type (case-insensitive)")
	cmd.Flags().StringVar(&job, "job", "", "job name (name-based strategies hash it)")
	cmd.Flags().IntVar(&total, "total", 0, "shardingTotalCount: number of items")
	cmd.Flags().StringSliceVar(&instances, "instances", nil, "comma-separated instance ids (ip@-@pid)")
	return cmd
}

// assignmentsJSON renders the assignments as one JSON object whose keys keep
// the runtime instance order (encoding/json would sort map keys).
func assignmentsJSON(as []spi.Assignment) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, a := range as {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, err := json.Marshal(a.InstanceID)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(a.Items)
		if err != nil {
			return nil, err
		}
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

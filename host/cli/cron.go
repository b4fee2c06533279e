package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ejob-io/ejob/core/cron"
)

func newCronCmd(e *env) *cobra.Command {
	var (
		tz   string
		from string
		n    int
	)
	cmd := &cobra.Command{
		Use:   "cron EXPR",
		Short: "Print the next fire times of a cron expression (Quartz, crontab or @descriptor)",
		Long: `Parses EXPR as a job's cron is parsed and prints its next fire times, one RFC 3339
timestamp per line. The syntax follows from the shape:

  6 or 7 fields       Quartz, as ElasticJob jobs write it (seconds field, optional
                      year, ?, L, W, LW, #, names); the times equal Quartz's, DST
                      transitions included
  5 fields            a standard crontab (minute hour day-of-month month
                      day-of-week), parsed by robfig/cron/v3
  starts with @       a descriptor: @yearly @annually @monthly @weekly @daily
                      @midnight @hourly, or @every <Go duration> (whole seconds)

Only Quartz expressions can be read by Java ElasticJob instances. An invalid
expression exits non-zero with an error saying which syntax was assumed and naming
the field. @every counts from --from (default: now).`,
		Example: `  ejob cron '0 0/15 9-17 ? * MON-FRI'
  ejob cron '0 30 2 L * ?' --tz GMT+08:00 -n 3
  ejob cron '0 0 12 ? * 6#3' --tz Europe/London --from 2026-01-01T00:00:00Z
  ejob cron '*/5 * * * *' --tz America/New_York
  ejob cron '@every 90s' -n 5`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef(cmd, "want exactly one cron expression (quote it), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if n <= 0 {
				return usagef(cmd, "-n must be > 0, got %d", n)
			}
			start := time.Now()
			if from != "" {
				t, err := time.Parse(time.RFC3339, from)
				if err != nil {
					return usagef(cmd, "--from %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", from)
				}
				start = t
			}
			times, err := cron.Preview(args[0], tz, start, n)
			if err != nil {
				return err
			}
			for _, t := range times {
				fmt.Fprintln(e.stdout, t.Format(time.RFC3339))
			}
			if len(times) < n {
				fmt.Fprintf(e.stderr, "the expression fires only %d more time(s)\n", len(times))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&tz, "tz", "", "time zone: an IANA name (Asia/Shanghai), GMT+08:00 style, or UTC; default: local")
	cmd.Flags().StringVar(&from, "from", "", "start after this RFC 3339 time (default: now)")
	cmd.Flags().IntVarP(&n, "count", "n", 5, "how many fire times to print")
	return cmd
}

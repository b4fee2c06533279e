package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/reg"
)

// newSwitchCmd is `ejob disable` (enable false) or `ejob enable`.
func newSwitchCmd(e *env, enable bool) *cobra.Command {
	var (
		f      opsFlags
		server string
		item   int
	)
	verb, value := "disable", "DISABLED"
	if enable {
		verb, value = "enable", "ENABLED"
	}
	cmd := &cobra.Command{
		Use:   verb + " [JOB] [--item N | --server IP]",
		Short: strings.ToUpper(verb[:1]) + verb[1:] + " a job, one of its items, or a server",
		Long: fmt.Sprintf(`As the ElasticJob console's %[1]s buttons (upstream's lifecycle API):

  ejob %[1]s JOB               every server of JOB: servers/{ip} = %[2]s
  ejob %[1]s JOB --server IP   JOB on that server only
  ejob %[1]s --server IP       that server in every job that has it
  ejob %[1]s JOB --item N      sharding item N of JOB (sharding/N/disabled)

A disabled server takes no items: they move to the enabled servers at the next
resharding, and when every server of a job is disabled the job stops firing
(its status is DISABLED). A disabled item is skipped by its owner from the
next fire on. Every running instance, ejob's or Java ElasticJob's, obeys at
once; nothing restarts.

An unknown job or server, or an item outside [0, shardingTotalCount), is
refused and nothing is written (exit status 3 or 4; see docs/cli.md).`, verb, value),
		Example: fmt.Sprintf(`  ejob %[1]s myJob -c ejob.yaml
  ejob %[1]s myJob --server 192.168.1.10 -c ejob.yaml
  ejob %[1]s myJob --item 2 --zk 127.0.0.1:2181 --namespace demo`, verb),
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("item") && (len(args) == 0 || server != "") {
				return usagef(cmd, "--item needs a job and goes without --server")
			}
			return jobOrServer(cmd, args, server)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			job := optionalJob(args)
			return f.run(cmd, e, func(ctx context.Context, c reg.Client) error {
				if cmd.Flags().Changed("item") {
					op := lifecycle.DisableItem
					if enable {
						op = lifecycle.EnableItem
					}
					if err := op(ctx, c, job, item); err != nil {
						return err
					}
					return f.print(e, map[string]any{"jobName": job, "item": item, "disabled": !enable}, func(w io.Writer) error {
						_, err := fmt.Fprintf(w, "%sd item %d of %s\n", verb, item, job)
						return err
					})
				}
				op := lifecycle.Disable
				if enable {
					op = lifecycle.Enable
				}
				targets, err := op(ctx, c, job, server)
				if err != nil {
					return err
				}
				return f.print(e, targets, func(w io.Writer) error {
					if len(targets) == 0 {
						_, err := fmt.Fprintf(w, "job %s has no server yet: nothing to %s\n", job, verb)
						return err
					}
					for _, t := range targets {
						fmt.Fprintf(w, "%sd %s on server %s\n", verb, t.JobName, t.ServerIP)
					}
					return nil
				})
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&server, "server", "", "the server IP (as in the job's servers/ node)")
	cmd.Flags().IntVar(&item, "item", 0, "a sharding item of the job")
	return cmd
}

// jobOrServer checks the arguments of `CMD [JOB] [--server IP]`.
func jobOrServer(cmd *cobra.Command, args []string, server string) error {
	switch {
	case len(args) > 1:
		return usagef(cmd, "want at most one job name, got %d arguments", len(args))
	case len(args) == 0 && server == "":
		return usagef(cmd, "give a job, --server IP, or both")
	}
	return nil
}

// optionalJob is the job argument of `CMD [JOB]`, or "".
func optionalJob(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	return ""
}

// newShutdownCmd is `ejob shutdown` (remove false) or `ejob remove`.
func newShutdownCmd(e *env, remove bool) *cobra.Command {
	var (
		f      opsFlags
		server string
	)
	verb, long := "shutdown", `Shuts the job's scheduler down on the instances named, as the ElasticJob
console's shutdown button: their instance nodes are deleted, and each owning
process (ejob or Java) stops firing the job and hands its items over at the
next resharding. The process keeps running, with its other jobs; the job
starts again there only when the process restarts.`
	if remove {
		verb, long = "remove", `Shuts the job down on the instances named (as 'ejob shutdown'), then deletes
their server nodes, as upstream's lifecycle API remove does: the server no
longer appears in the job. The job's configuration and sharding stay; 'ejob
job delete JOB' removes the whole job.`
	}
	cmd := &cobra.Command{
		Use:   verb + " [JOB] [--server IP]",
		Short: map[bool]string{false: "Stop a job on every instance, on one server, or every job on a server", true: "Shut a job down and delete its server nodes"}[remove],
		Long: long + fmt.Sprintf(`

  ejob %[1]s JOB               every instance of JOB
  ejob %[1]s JOB --server IP   JOB on that server only
  ejob %[1]s --server IP       every job on that server

An unknown job or server is refused and nothing is written (exit status 3).`, verb),
		Example: fmt.Sprintf(`  ejob %[1]s myJob --server 192.168.1.10 -c ejob.yaml
  ejob %[1]s --server 192.168.1.10 --zk 127.0.0.1:2181 --namespace demo`, verb),
		Args: func(cmd *cobra.Command, args []string) error { return jobOrServer(cmd, args, server) },
		RunE: func(cmd *cobra.Command, args []string) error {
			job := optionalJob(args)
			return f.run(cmd, e, func(ctx context.Context, c reg.Client) error {
				op := lifecycle.Shutdown
				if remove {
					op = lifecycle.Remove
				}
				targets, err := op(ctx, c, job, server)
				if err != nil {
					return err
				}
				return f.print(e, targets, func(w io.Writer) error {
					if len(targets) == 0 {
						_, err := fmt.Fprintln(w, "no live instance there: nothing to shut down")
						return err
					}
					for _, t := range targets {
						if t.InstanceID != "" {
							fmt.Fprintf(w, "shut %s down on instance %s\n", t.JobName, t.InstanceID)
						} else {
							fmt.Fprintf(w, "removed server %s from %s\n", t.ServerIP, t.JobName)
						}
					}
					return nil
				})
			})
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&server, "server", "", "the server IP (as in the job's servers/ node)")
	return cmd
}

func newServersCmd(e *env) *cobra.Command {
	var f opsFlags
	cmd := &cobra.Command{
		Use:   "servers [IP]",
		Short: "List the servers of a namespace, or the jobs of one server",
		Long: `Without IP, lists every server (an IP with a servers/ node in some job) with its
live instances, its jobs and how many of them are disabled there, as the
ElasticJob console's server page. With IP, lists that server's jobs with
their status there (DISABLED or OK) and instance count.`,
		Example: `  ejob servers -c ejob.yaml
  ejob servers 192.168.1.10 --zk 127.0.0.1:2181 --namespace demo --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef(cmd, "want at most one server IP, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, e, func(ctx context.Context, c reg.Client) error {
				if len(args) == 1 {
					briefs, err := lifecycle.JobsOfServer(ctx, c, args[0])
					if err != nil {
						return err
					}
					return f.print(e, briefs, func(w io.Writer) error {
						rows := make([][]string, len(briefs))
						for i, b := range briefs {
							rows[i] = []string{b.JobName, strconv.Itoa(b.InstanceCount), string(b.Status)}
						}
						return table(w, "JOB\tINSTANCES\tSTATUS", rows)
					})
				}
				servers, err := lifecycle.Servers(ctx, c)
				if err != nil {
					return err
				}
				return f.print(e, servers, func(w io.Writer) error {
					rows := make([][]string, len(servers))
					for i, s := range servers {
						rows[i] = []string{s.ServerIP, strconv.Itoa(s.InstancesNum), strconv.Itoa(s.JobsNum), strconv.Itoa(s.DisabledJobsNum)}
					}
					return table(w, "SERVER\tINSTANCES\tJOBS\tDISABLED JOBS", rows)
				})
			})
		},
	}
	f.register(cmd)
	return cmd
}

func newDumpCmd(e *env) *cobra.Command {
	var (
		server  string
		port    int
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "dump JOB --server HOST --port PORT",
		Short: "Dump a job's registry tree as a host sees it (the host's dump port)",
		Long: `Asks the dump port of the host at HOST:PORT (elasticjob.dump.port of that host's
config) for JOB, exactly as the ElasticJob console and 'echo dump@JOB | nc HOST
PORT' do, and prints the reply: every node under /JOB with its value, a line
with two more columns for a node the host's cache does not hold, IP addresses
masked as ip1, ip2, ... It needs no registry connection.

A host answers only for a job it runs: an empty reply exits with status 3.`,
		Example: `  ejob dump myJob --server 192.168.1.10 --port 9888`,
		Args:    exactArgs(1, "one job name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if server == "" || port == 0 {
				return usagef(cmd, "--server and --port are required")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			text, err := lifecycle.Dump(ctx, args[0], server, port)
			if err != nil {
				return err
			}
			if text == "" {
				return fmt.Errorf("%w: %s:%d answered nothing for %q: that host does not run the job (or is not ejob's or ElasticJob's dump port)",
					lifecycle.ErrJobNotFound, server, port, args[0])
			}
			_, err = io.WriteString(e.stdout, text)
			return err
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "the host's IP or name")
	cmd.Flags().IntVar(&port, "port", 0, "the host's dump port (elasticjob.dump.port; the console's default is 9888)")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "give up after this long")
	return cmd
}

package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ejob-io/ejob/host/cloud"
	"github.com/ejob-io/ejob/host/hostconfig"
	"github.com/ejob-io/ejob/host/httpapi"
)

// DefaultCloudURL is the cloud scheduler's API without --url or
// EJOB_CLOUD_URL.
const DefaultCloudURL = "http://127.0.0.1:8899"

func newCloudCmd(e *env) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "cloud -c FILE | cloud app|job|tasks|stats|operate ...",
		Short: "Run the ElasticJob-Cloud scheduler, or operate its apps, jobs and tasks over its REST API",
		Long: `With -c FILE, runs the cloud scheduler until SIGTERM or SIGINT: apps and jobs
registered over its REST API (upstream ElasticJob-Cloud's paths), its state in
ZooKeeper (elasticjob.regCenter), each fire's items run by the launcher plugin
named by ejob.cloud.launcher.type. Several schedulers may run on one
namespace: one leads, the others take over within a session timeout. See
docs/cloud.md.

The app, job, tasks, stats and operate subcommands call a scheduler's REST API: --url (or
EJOB_CLOUD_URL; default ` + DefaultCloudURL + `), --user (default admin) and the
password from EJOB_CLOUD_PASSWORD or --password-file.`,
		Example: `  ejob cloud -c cloud.yaml
  ejob cloud app register app.json
  ejob cloud job trigger my-job
  ejob cloud tasks running`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usagef(cmd, "-c FILE is required to run the scheduler (or give a subcommand: app, job, tasks, stats, operate)")
			}
			f, err := hostconfig.LoadCloud(file, nil)
			if err != nil {
				return err
			}
			b, err := builtinSource()
			if err != nil {
				return err
			}
			return cloud.Run(cmd.Context(), cloud.RunOptions{File: f, Builtin: b, Logger: e.log})
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "the scheduler's config file (YAML)")
	c := &cloudClient{e: e}
	c.register(cmd)
	cmd.AddCommand(c.appCmd(), c.jobCmd(), c.tasksCmd(), c.statsCmd(), c.operateCmd())
	return cmd
}

// cloudClient calls a cloud scheduler's REST API.
type cloudClient struct {
	e                       *env
	url, user, passwordFile string
	insecureSkipVerify      bool
	token                   string
	http                    *http.Client
}

func (c *cloudClient) register(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&c.url, "url", "", "the scheduler's REST API (default: EJOB_CLOUD_URL, else "+DefaultCloudURL+")")
	f.StringVar(&c.user, "user", "admin", "user to log in as")
	f.StringVar(&c.passwordFile, "password-file", "", "file holding the password (default: EJOB_CLOUD_PASSWORD)")
	f.BoolVar(&c.insecureSkipVerify, "insecure-skip-verify", false, "accept any TLS certificate (testing only)")
}

func (c *cloudClient) base() string {
	switch {
	case c.url != "":
		return strings.TrimRight(c.url, "/")
	case os.Getenv("EJOB_CLOUD_URL") != "":
		return strings.TrimRight(os.Getenv("EJOB_CLOUD_URL"), "/")
	}
	return DefaultCloudURL
}

// call logs in (once) and sends method path with body, returning the
// envelope's model.
func (c *cloudClient) call(ctx context.Context, method, path string, body []byte) (json.RawMessage, error) {
	if c.http == nil {
		c.http = &http.Client{Timeout: time.Minute,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: c.insecureSkipVerify}}} //nolint:gosec // the operator's choice
	}
	if c.token == "" {
		pw := os.Getenv("EJOB_CLOUD_PASSWORD")
		if c.passwordFile != "" {
			b, err := os.ReadFile(c.passwordFile)
			if err != nil {
				return nil, fmt.Errorf("--password-file: %w", err)
			}
			pw = strings.TrimRight(string(b), "\r\n")
		}
		login, _ := json.Marshal(map[string]string{"username": c.user, "password": pw})
		m, err := c.send(ctx, http.MethodPost, "/api/login", login)
		if err != nil {
			return nil, fmt.Errorf("login as %s: %w", c.user, err)
		}
		var lm httpapi.LoginModel
		if err := json.Unmarshal(m, &lm); err != nil || lm.AccessToken == "" {
			return nil, fmt.Errorf("login as %s: no token in the answer", c.user)
		}
		c.token = lm.AccessToken
	}
	return c.send(ctx, method, path, body)
}

func (c *cloudClient) send(ctx context.Context, method, path string, body []byte) (json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base()+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set(httpapi.TokenHeader, c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	var env struct {
		Success   bool            `json:"success"`
		ErrorCode int             `json:"errorCode"`
		ErrorMsg  *string         `json:"errorMsg"`
		Model     json.RawMessage `json:"model"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("%s %s: HTTP %s: %s", method, path, resp.Status, strings.TrimSpace(string(data)))
	}
	if !env.Success {
		msg := ""
		if env.ErrorMsg != nil {
			msg = *env.ErrorMsg
		}
		return nil, fmt.Errorf("%s %s: %d: %s", method, path, env.ErrorCode, msg)
	}
	return env.Model, nil
}

// print writes a model as indented JSON.
func (c *cloudClient) print(m json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, m, "", "  "); err != nil {
		_, err = fmt.Fprintln(c.e.stdout, string(m))
		return err
	}
	_, err := fmt.Fprintln(c.e.stdout, buf.String())
	return err
}

// readBody reads a JSON body from a file ("-": standard input).
func readBody(cmd *cobra.Command, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(io.LimitReader(cmd.InOrStdin(), httpapi.DefaultMaxBody+1))
	}
	return os.ReadFile(name)
}

// sub is one subcommand: use, short, args count, and how it calls.
type sub struct {
	use, short string
	args       int
	run        func(cmd *cobra.Command, args []string) (string, string, []byte, error)
}

func (c *cloudClient) group(use, short string, subs []sub) *cobra.Command {
	g := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		return usagef(cmd, "give a subcommand")
	}}
	for _, s := range subs {
		g.AddCommand(&cobra.Command{Use: s.use, Short: s.short, Args: cobra.ExactArgs(s.args),
			RunE: func(cmd *cobra.Command, args []string) error {
				method, path, body, err := s.run(cmd, args)
				if err != nil {
					return err
				}
				m, err := c.call(cmd.Context(), method, path, body)
				if err != nil {
					return err
				}
				return c.print(m)
			}})
	}
	return g
}

func fixed(method, path string) func(*cobra.Command, []string) (string, string, []byte, error) {
	return func(_ *cobra.Command, args []string) (string, string, []byte, error) {
		p := path
		if len(args) > 0 {
			p = strings.ReplaceAll(p, "NAME", args[0])
		}
		return method, p, nil, nil
	}
}

func withBody(method, path string) func(*cobra.Command, []string) (string, string, []byte, error) {
	return func(cmd *cobra.Command, args []string) (string, string, []byte, error) {
		b, err := readBody(cmd, args[0])
		return method, path, b, err
	}
}

func (c *cloudClient) appCmd() *cobra.Command {
	return c.group("app", "Register, update, show, enable, disable and delete apps", []sub{
		{"list", "List the apps", 0, fixed(http.MethodGet, "/api/app/list")},
		{"get NAME", "Show an app", 1, fixed(http.MethodGet, "/api/app/NAME")},
		{"register FILE", "Register the app in FILE (JSON; - for standard input)", 1, withBody(http.MethodPost, "/api/app")},
		{"update FILE", "Replace an app with the one in FILE (JSON; - for standard input)", 1, withBody(http.MethodPut, "/api/app")},
		{"enable NAME", "Enable an app (its jobs fire again)", 1, fixed(http.MethodPost, "/api/app/NAME/enable")},
		{"disable NAME", "Disable an app (its jobs stop)", 1, fixed(http.MethodPost, "/api/app/NAME/disable")},
		{"delete NAME", "Delete an app and deregister its jobs", 1, fixed(http.MethodDelete, "/api/app/NAME")},
	})
}

func (c *cloudClient) jobCmd() *cobra.Command {
	return c.group("job", "Register, update, deregister, trigger, show, enable and disable cloud jobs", []sub{
		{"list", "List the jobs", 0, fixed(http.MethodGet, "/api/job/jobs")},
		{"get NAME", "Show a job", 1, fixed(http.MethodGet, "/api/job/jobs/NAME")},
		{"register FILE", "Register the job in FILE (JSON; - for standard input)", 1, withBody(http.MethodPost, "/api/job/register")},
		{"update FILE", "Replace a job with the one in FILE (JSON; - for standard input)", 1, withBody(http.MethodPut, "/api/job/update")},
		{"deregister NAME", "Deregister a job (what runs of it is stopped)", 1, fixed(http.MethodDelete, "/api/job/NAME/deregister")},
		{"trigger NAME", "Queue one round of a TRANSIENT job now", 1, func(_ *cobra.Command, args []string) (string, string, []byte, error) {
			return http.MethodPost, "/api/job/trigger", []byte(args[0]), nil
		}},
		{"enable NAME", "Enable a job", 1, fixed(http.MethodPost, "/api/job/NAME/enable")},
		{"disable NAME", "Disable a job (what runs of it is stopped)", 1, fixed(http.MethodPost, "/api/job/NAME/disable")},
	})
}

func (c *cloudClient) tasksCmd() *cobra.Command {
	return c.group("tasks", "Show the running, ready and failover tasks", []sub{
		{"running", "Items launched and not ended", 0, fixed(http.MethodGet, "/api/job/tasks/running")},
		{"ready", "Jobs with rounds waiting to launch", 0, fixed(http.MethodGet, "/api/job/tasks/ready")},
		{"failover", "Items queued to run again", 0, fixed(http.MethodGet, "/api/job/tasks/failover")},
	})
}

func (c *cloudClient) statsCmd() *cobra.Command {
	return c.group("stats", "Show the statistics: task results, running items and jobs, registered jobs, execution types", []sub{
		{"results PERIOD", "Task results of online, lastWeek, lastHour or lastMinute", 1, func(_ *cobra.Command, args []string) (string, string, []byte, error) {
			return http.MethodGet, "/api/job/statistics/tasks/results/" + url.PathEscape(args[0]), nil, nil
		}},
		{"minutes", "Task results of each minute of the last 24 hours", 0, fixed(http.MethodGet, "/api/job/statistics/tasks/results?since=last24hours")},
		{"running-tasks", "Running items, each minute of the last week", 0, fixed(http.MethodGet, "/api/job/statistics/tasks/running?since=lastWeek")},
		{"running-jobs", "Jobs with a running item, each minute of the last week", 0, fixed(http.MethodGet, "/api/job/statistics/jobs/running?since=lastWeek")},
		{"registered", "Registered jobs, each day", 0, fixed(http.MethodGet, "/api/job/statistics/jobs/register")},
		{"types", "TRANSIENT and DAEMON jobs registered", 0, fixed(http.MethodGet, "/api/job/statistics/jobs/executionType")},
	})
}

func (c *cloudClient) operateCmd() *cobra.Command {
	return c.group("operate", "Reconcile the running items with the launcher; show where an app's items run", []sub{
		{"reconcile explicit|implicit", "Compare the running items (explicit) or all the launcher holds (implicit)", 1, func(_ *cobra.Command, args []string) (string, string, []byte, error) {
			if args[0] != "explicit" && args[0] != "implicit" {
				return "", "", nil, fmt.Errorf("reconcile %q: want explicit or implicit", args[0])
			}
			return http.MethodPost, "/api/operate/reconcile/" + args[0], nil, nil
		}},
		{"sandbox APP", "Where the app's running items run (node, pod)", 1, func(_ *cobra.Command, args []string) (string, string, []byte, error) {
			return http.MethodGet, "/api/operate/sandbox?appName=" + url.QueryEscape(args[0]), nil, nil
		}},
	})
}

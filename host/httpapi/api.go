package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/ejob-io/ejob/core/config"
	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/spi"
	"github.com/ejob-io/ejob/spi/redact"
	"github.com/hashicorp/go-hclog"
)

// dumpTimeout bounds one dump request to a host's dump port.
const dumpTimeout = 30 * time.Second

// routes registers ElasticJob-UI's REST endpoints on mux.
func (s *Server) routes(mux *Mux) {
	// Jobs.
	mux.HandleFunc("GET /api/jobs/count", s.jobsCount)
	mux.HandleFunc("GET /api/jobs/getAllJobsBriefInfo", s.jobs)
	for _, op := range []string{"trigger", "disable", "enable", "shutdown"} {
		mux.HandleFunc("POST /api/jobs/{jobName}/"+op, func(w http.ResponseWriter, r *http.Request) { s.operate(w, r, op, r.PathValue("jobName"), "") })
	}
	// GET /api/jobs/config/{jobName} and GET /api/jobs/{jobName}/sharding
	// overlap as patterns: one handler tells them apart.
	mux.HandleFunc("GET /api/jobs/{a}/{b}", func(w http.ResponseWriter, r *http.Request) {
		switch a, b := r.PathValue("a"), r.PathValue("b"); {
		case a == "config":
			s.getConfig(w, r, b)
		case b == "sharding":
			s.sharding(w, r, a)
		default:
			notFound(w, r)
		}
	})
	for _, op := range []string{"disable", "enable"} {
		mux.HandleFunc("POST /api/jobs/{jobName}/sharding/{item}/"+op, func(w http.ResponseWriter, r *http.Request) { s.item(w, r, op) })
	}
	mux.HandleFunc("PUT /api/jobs/config", s.putConfig)
	mux.HandleFunc("DELETE /api/jobs/config/{jobName}", s.removeConfig)

	// Servers.
	mux.HandleFunc("GET /api/servers/count", s.serversCount)
	mux.HandleFunc("GET /api/servers/getAllServersBriefInfo", s.servers)
	for _, op := range []string{"disable", "enable", "shutdown"} {
		mux.HandleFunc("POST /api/servers/{ip}/"+op, func(w http.ResponseWriter, r *http.Request) { s.operate(w, r, op, "", r.PathValue("ip")) })
		mux.HandleFunc("POST /api/servers/{ip}/jobs/{jobName}/"+op, func(w http.ResponseWriter, r *http.Request) {
			s.operate(w, r, op, r.PathValue("jobName"), r.PathValue("ip"))
		})
	}
	mux.HandleFunc("DELETE /api/servers/{ip}", func(w http.ResponseWriter, r *http.Request) { s.operate(w, r, "remove", "", r.PathValue("ip")) })
	mux.HandleFunc("DELETE /api/servers/{ip}/jobs/{jobName}", func(w http.ResponseWriter, r *http.Request) {
		s.operate(w, r, "remove", r.PathValue("jobName"), r.PathValue("ip"))
	})
	mux.HandleFunc("GET /api/servers/{ip}/jobs", s.jobsOfServer)
	mux.HandleFunc("POST /api/servers/{ip}/{dumpPort}/jobs/{jobName}/dump", s.dump)

	// Registry centers and data sources (namespaces.go).
	s.namespaceRoutes(mux)
	// Event trace (the host's tracing sink).
	mux.HandleFunc("POST /api/event-trace/execution", s.executions)
	mux.HandleFunc("POST /api/event-trace/status", s.statuses)
	for path, field := range map[string]spi.DistinctField{"execution/jobNames": spi.ExecutionJobNames,
		"execution/ip": spi.ExecutionIPs, "status/jobNames": spi.StatusJobNames} {
		// ElasticJob-UI asks .../jobNames/ for an empty prefix.
		mux.HandleFunc("GET /api/event-trace/"+path, s.distinct(field))
		mux.HandleFunc("GET /api/event-trace/"+path+"/{$}", s.distinct(field))
		mux.HandleFunc("GET /api/event-trace/"+path+"/{prefix}", s.distinct(field))
	}
	mux.HandleFunc("/api/", notFound)
}

func notFound(w http.ResponseWriter, r *http.Request) {
	fail(w, http.StatusNotFound, fmt.Sprintf("no endpoint %s %s", r.Method, r.URL.Path))
}

// status maps lifecycle's sentinels to HTTP statuses.
func status(err error) int {
	switch {
	case errors.Is(err, lifecycle.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, lifecycle.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, lifecycle.ErrConflict):
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

// Answer writes model in a success envelope, or err's status (lifecycle's
// sentinels mapped: not found 404, invalid 400, conflict 409, else 500)
// and message.
func Answer(w http.ResponseWriter, model any, err error) { answer(w, model, err) }

// Status is the HTTP status of a lifecycle error.
func Status(err error) int { return status(err) }

// answer writes model, or err's status and message.
func answer(w http.ResponseWriter, model any, err error) {
	if err != nil {
		fail(w, status(err), err.Error())
		return
	}
	ok(w, model)
}

// audit logs one operation: who, what, on which job, server or item, and
// how it ended.
func (s *Server) audit(r *http.Request, op, job, server string, item *int, err error) {
	args := []any{"user", UserOf(r), "op", op}
	if job != "" {
		args = append(args, "job", job)
	}
	if server != "" {
		args = append(args, "server", server)
	}
	if item != nil {
		args = append(args, "item", *item)
	}
	if err != nil {
		s.Audit(hclog.Warn, append(args, "result", "error", "error", err)...)
		return
	}
	s.Audit(hclog.Info, append(args, "result", "ok")...)
}

// ReadBody reads a non-empty request body of at most MaxBody bytes; on
// failure it has answered 400 or 413.
func (s *Server) ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", tooBig.Limit))
		return nil, false
	case err != nil:
		fail(w, http.StatusBadRequest, "read request body: "+err.Error())
		return nil, false
	case len(data) == 0:
		fail(w, http.StatusBadRequest, "empty request body: want a JSON object")
		return nil, false
	}
	return data, true
}

// decode reads a JSON body of at most MaxBody bytes into v; on failure it
// has answered 400 or 413.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	data, ok := s.ReadBody(w, r)
	if !ok {
		return false
	}
	if err := json.Unmarshal(data, v); err != nil {
		fail(w, http.StatusBadRequest, "malformed JSON body: "+err.Error())
		return false
	}
	return true
}

func (s *Server) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), time.Minute)
}

func (s *Server) jobsCount(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	n, err := lifecycle.JobsTotalCount(ctx, s.reader())
	if err != nil {
		fail(w, status(err), err.Error())
		return
	}
	write(w, http.StatusOK, n)
}

func (s *Server) serversCount(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	n, err := lifecycle.ServersTotalCount(ctx, s.reader())
	if err != nil {
		fail(w, status(err), err.Error())
		return
	}
	write(w, http.StatusOK, n)
}

func (s *Server) jobs(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	briefs, err := lifecycle.Jobs(ctx, s.reader())
	answer(w, briefs, err)
}

func (s *Server) servers(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	briefs, err := lifecycle.Servers(ctx, s.reader())
	answer(w, briefs, err)
}

func (s *Server) jobsOfServer(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	briefs, err := lifecycle.JobsOfServer(ctx, s.reader(), r.PathValue("ip"))
	answer(w, briefs, err)
}

func (s *Server) sharding(w http.ResponseWriter, r *http.Request, job string) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	items, err := lifecycle.Sharding(ctx, s.reader(), job)
	answer(w, items, err)
}

func (s *Server) getConfig(w http.ResponseWriter, r *http.Request, job string) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	st, err := lifecycle.GetConfig(ctx, s.reader(), job)
	if err != nil {
		fail(w, status(err), err.Error())
		return
	}
	ok(w, lifecycle.ToConfigJSON(st.Config))
}

// operate runs one of JobOperateAPI's calls on (job, server).
func (s *Server) operate(w http.ResponseWriter, r *http.Request, op, job, server string) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	c := s.client()
	var err error
	switch op {
	case "trigger":
		_, err = lifecycle.TriggerAll(ctx, c, job)
	case "disable":
		_, err = lifecycle.Disable(ctx, c, job, server)
	case "enable":
		_, err = lifecycle.Enable(ctx, c, job, server)
	case "shutdown":
		_, err = lifecycle.Shutdown(ctx, c, job, server)
	case "remove":
		_, err = lifecycle.Remove(ctx, c, job, server)
	}
	s.audit(r, op, job, server, nil, err)
	answer(w, nil, err)
}

func (s *Server) item(w http.ResponseWriter, r *http.Request, op string) {
	job := r.PathValue("jobName")
	item, perr := strconv.Atoi(r.PathValue("item"))
	if perr != nil {
		err := fmt.Errorf("%w: item %q is not a number", lifecycle.ErrInvalid, r.PathValue("item"))
		s.audit(r, op+" item", job, "", nil, err)
		answer(w, nil, err)
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	var err error
	if op == "disable" {
		err = lifecycle.DisableItem(ctx, s.client(), job, item)
	} else {
		err = lifecycle.EnableItem(ctx, s.client(), job, item)
	}
	s.audit(r, op+" item", job, "", &item, err)
	answer(w, nil, err)
}

// putConfig is PUT /api/jobs/config: the console's whole configuration
// over the stored one (its jobExtraConfigurations kept), validated, then
// written only if nobody changed it since it was read. A prop sent back
// exactly as this server masked it keeps its stored value.
func (s *Server) putConfig(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBody))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		s.audit(r, "update config", "", "", nil, err)
		fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", tooBig.Limit))
		return
	}
	if err != nil {
		fail(w, http.StatusBadRequest, "read request body: "+err.Error())
		return
	}
	cj, err := lifecycle.DecodeConfigJSON(data)
	if err == nil {
		// The name addresses the config node: checked as a path parameter is.
		if nerr := config.CheckJobName(cj.JobName); nerr != nil {
			err = fmt.Errorf("%w: jobName: %w", lifecycle.ErrInvalid, nerr)
		}
	}
	if err != nil {
		s.audit(r, "update config", "", "", nil, err)
		answer(w, nil, err)
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	err = func() error {
		stored, err := lifecycle.GetConfigToReplace(ctx, s.client(), cj.JobName)
		if err != nil {
			return err
		}
		if cj.Props, err = redact.Unmask(cj.Props, stored.Config.Props); err != nil {
			return fmt.Errorf("%w: %w", lifecycle.ErrInvalid, err)
		}
		return lifecycle.UpdateConfig(ctx, s.client(), cj.Apply(stored.Config), lifecycle.IfVersion(stored.Version))
	}()
	s.audit(r, "update config", cj.JobName, "", nil, err)
	answer(w, nil, err)
}

func (s *Server) removeConfig(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	job := r.PathValue("jobName")
	err := lifecycle.RemoveConfig(ctx, s.client(), job)
	s.audit(r, "remove config", job, "", nil, err)
	answer(w, nil, err)
}

// dump asks a host's dump port for its view of a job. As upstream, the
// model is the dump text, or the error's message. Only a host the
// registry knows as a live instance of the job is dialed; any other
// address is refused (404) before a dial, and a known host's failure
// reads the same whatever the port did (lifecycle.DumpError, whose cause
// goes to the audit line only). The dump's secrets are masked
// (lifecycle.Dump).
func (s *Server) dump(w http.ResponseWriter, r *http.Request) {
	job, ip := r.PathValue("jobName"), r.PathValue("ip")
	port, err := strconv.Atoi(r.PathValue("dumpPort"))
	if err != nil {
		err = fmt.Errorf("%w: dump port %q is not a number", lifecycle.ErrInvalid, r.PathValue("dumpPort"))
		s.audit(r, "dump", job, ip, nil, err)
		answer(w, nil, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), dumpTimeout)
	defer cancel()
	text, err := lifecycle.DumpInstance(ctx, s.reader(), job, ip, port)
	var failed *lifecycle.DumpError
	if errors.As(err, &failed) {
		s.audit(r, "dump", job, ip, nil, fmt.Errorf("%w: %w", err, failed.Err))
		ok(w, err.Error())
		return
	}
	s.audit(r, "dump", job, ip, nil, err)
	if err != nil {
		answer(w, nil, err)
		return
	}
	ok(w, text)
}

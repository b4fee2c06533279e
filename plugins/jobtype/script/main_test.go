package script_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejob-io/ejob/plugins/jobtype/script"
	"github.com/ejob-io/ejob/spi"
)

// helperEnv, when set to "1", makes the test binary act as a helper
// program instead of running tests. TestMain sets it for the test process,
// so every script the tests start inherits it and can be the test binary
// itself: a real program, no shell.
const helperEnv = "EJOB_SCRIPT_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperMain(os.Args[1:]))
	}
	// Under -race a binary sleeps a second at exit unless told not to;
	// the helpers are the (race-built) test binary.
	gorace := strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")
	for k, v := range map[string]string{helperEnv: "1", "GORACE": gorace} {
		if err := os.Setenv(k, v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

// helperMain runs one helper command:
//
//	argv FILE ...          write the whole argv as a JSON array to FILE
//	print                  write two stdout lines, one stderr line, then an unterminated stdout line
//	exit CODE              write 30 numbered stderr lines, then exit with CODE
//	runexec COMMANDLINE    run COMMANDLINE through script.Executor logging JSON to stderr
func helperMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "helper: no command")
		return 2
	}
	switch args[0] {
	case "argv":
		b, err := json.Marshal(os.Args)
		if err == nil {
			err = os.WriteFile(args[1], b, 0o600)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		return 0
	case "print":
		fmt.Fprint(os.Stdout, "out 1\nout 2\r\n")
		fmt.Fprint(os.Stderr, "err 1\n")
		fmt.Fprint(os.Stdout, "out tail")
		return 0
	case "flood":
		n, err := strconv.Atoi(args[1])
		if err != nil {
			return 2
		}
		for i := 1; i <= n; i++ {
			fmt.Fprintf(os.Stdout, "line %d of %d\n", i, n)
		}
		fmt.Fprint(os.Stderr, "cannot reach db\n")
		return 1
	case "linger":
		fmt.Fprintln(os.Stdout, "step 1 done")
		fmt.Fprintln(os.Stderr, "waiting for step 2")
		time.Sleep(time.Minute) // until the test cancels the item
		return 0
	case "exit":
		code, err := strconv.Atoi(args[1])
		if err != nil {
			return 2
		}
		for i := 1; i <= 30; i++ {
			fmt.Fprintf(os.Stderr, "line %d\n", i)
		}
		return code
	case "runexec":
		logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
		_, err := script.New(logger).Execute(context.Background(), spi.ExecuteRequest{
			Context: spi.ShardingContext{JobName: "log_job", ShardingTotalCount: 1},
			Props:   map[string]string{script.PropCommandLine: args[1]},
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "helper: unknown command", args[0])
	return 2
}

// helperPath returns the test binary's path, quoted for a command line.
func helperPath(t *testing.T) (path, quoted string) {
	t.Helper()
	path, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(path, `'"`) {
		t.Skipf("test binary path %q contains a quote", path)
	}
	return path, "'" + path + "'"
}

func ptr(s string) *string { return &s }

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// record is one logged line.
type record struct {
	level, msg string
	fields     map[string]any
}

// recLogger records what it is given; safe for concurrent use.
type recLogger struct {
	mu      sync.Mutex
	records []record
}

func (l *recLogger) add(level, msg string, args []any) {
	f := map[string]any{}
	for i := 0; i+1 < len(args); i += 2 {
		f[fmt.Sprint(args[i])] = args[i+1]
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, record{level: level, msg: msg, fields: f})
}

func (l *recLogger) Info(msg string, args ...any) { l.add("info", msg, args) }
func (l *recLogger) Warn(msg string, args ...any) { l.add("warn", msg, args) }

func (l *recLogger) all() []record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.records)
}

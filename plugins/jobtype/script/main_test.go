package script_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"

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
	if err := os.Setenv(helperEnv, "1"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
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

package testkit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Script returns the path of the project script scripts/name: $env when
// that environment variable is set, else scripts/name under the ejob
// module root found by walking up from the working directory.
func Script(name, env string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/ejob-io/ejob")) {
			p := filepath.Join(dir, "scripts", name)
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("%s not found at %s: %w", name, p, err)
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("scripts/%s not found: no ejob module root above the working directory (set %s)", name, env)
		}
		dir = parent
	}
}

// RunScript runs a project script with bash (5 minutes at most: it may
// install a Debian package) and returns its trimmed stdout; a failure
// carries its stderr.
func RunScript(script string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	// The servers the scripts start outlive the script (setsid); with
	// this they stop once this process is gone (scripts/owner.sh), even
	// when it is killed before its cleanups run.
	cmd.Env = append(os.Environ(), "EJOB_OWNER_PID="+strconv.Itoa(os.Getpid()))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", filepath.Base(script), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

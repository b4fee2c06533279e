package cloud

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/ejob-io/ejob/core/reg/zktest"
	"github.com/ejob-io/ejob/internal/proctest"
	"github.com/ejob-io/ejob/internal/testkit"
)

// Built and started once in TestMain.
var (
	ejobBin    string
	pluginsDir string
	zk         *zktest.Server
	// adminHash is the bcrypt hash of adminPassword.
	adminHash string
)

const adminPassword = "cloud-test-password"

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "ejob-cloud-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ejobBin = filepath.Join(dir, "ejob")
	pluginsDir = filepath.Join(dir, "plugins")
	if err := os.Mkdir(pluginsDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for out, pkg := range map[string]string{
		ejobBin: "github.com/ejob-io/ejob/cmd/ejob",
		filepath.Join(pluginsDir, "ejob-launcher-local"): "github.com/ejob-io/ejob/internal/locallauncher/ejob-launcher-local",
	} {
		if err := proctest.GoBuild(out, pkg, false); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	h, err := bcrypt.GenerateFromPassword([]byte(adminPassword), 10)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	adminHash = string(h)
	zk, err = zktest.Launch(zktest.Options{Tick: zktest.DefaultTick})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer zk.Close()
	return testkit.Run(m)
}

package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ejob-io/ejob"

type pkg struct {
	ImportPath string
	Name       string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list returned no packages")
	}
	return pkgs
}

func rel(importPath string) string {
	if importPath == module {
		return ""
	}
	return strings.TrimPrefix(importPath, module+"/")
}

func under(p, prefix string) bool { return p == prefix || strings.HasPrefix(p, prefix+"/") }

func isStdlib(importPath string) bool {
	first, _, _ := strings.Cut(importPath, "/")
	return !strings.Contains(first, ".")
}

// rule reports a violation message for a package's direct import, or "".
type rule func(p pkg, imp string) string

// sharedPluginLibs are the libraries the plugins of one kind share; a plugin
// library under the same kind directory may import them. They are plugin
// libraries themselves, so they import spi only.
var sharedPluginLibs = []string{"plugins/errorhandler/alert"}

func rules() []rule {
	forbiddenInCore := []string{
		"github.com/hashicorp/go-plugin",
		"google.golang.org/grpc",
		"google.golang.org/protobuf",
		"github.com/go-zookeeper/zk",
		// Metrics are the host's: the kernel reports through observers.
		"github.com/prometheus",
	}
	return []rule{
		func(p pkg, imp string) string { // spi and its sub-packages: standard library and spi only
			r := rel(p.ImportPath)
			if !under(r, "spi") || isStdlib(imp) {
				return ""
			}
			if strings.HasPrefix(imp, module) && under(rel(imp), "spi") && r != "spi" {
				return ""
			}
			return "spi imports the standard library only (its sub-packages may also import spi)"
		},
		func(p pkg, imp string) string { // core never imports host, transport, plugin machinery
			r := rel(p.ImportPath)
			if !under(r, "core") {
				return ""
			}
			if strings.HasPrefix(imp, module) && (under(rel(imp), "host") || under(rel(imp), "internal/transport") || under(rel(imp), "sdk")) {
				return "core never imports host, sdk or internal/transport"
			}
			for _, f := range forbiddenInCore {
				if under(imp, f) {
					if f == "github.com/go-zookeeper/zk" && under(r, "core/reg/zookeeper") {
						return ""
					}
					return "core never imports " + f + " (only core/reg/zookeeper may import go-zookeeper)"
				}
			}
			return ""
		},
		func(p pkg, imp string) string { // only core/reg/zookeeper imports go-zookeeper
			if under(imp, "github.com/go-zookeeper/zk") && !under(rel(p.ImportPath), "core/reg/zookeeper") {
				return "only core/reg/zookeeper imports go-zookeeper"
			}
			return ""
		},
		func(p pkg, imp string) string { // the ZooKeeper adapter's bottom floor: standard library and the reg contract only
			if rel(p.ImportPath) != "core/reg/zookeeper/internal/zkwire" || isStdlib(imp) || imp == module+"/core/reg" {
				return ""
			}
			return "core/reg/zookeeper/internal/zkwire (framing, jute records, codes) imports the standard library and core/reg only, never the connection or the features above it"
		},
		func(p pkg, imp string) string { // sdk: never core or host
			if under(rel(p.ImportPath), "sdk") && strings.HasPrefix(imp, module) && (under(rel(imp), "core") || under(rel(imp), "host")) {
				return "sdk never imports core or host"
			}
			return ""
		},
		func(p pkg, imp string) string { // plugin libraries import spi (and their kind's shared library); mains and the built-in aggregator may also import sdk / plugins
			r := rel(p.ImportPath)
			if !under(r, "plugins") || !strings.HasPrefix(imp, module) {
				return ""
			}
			ri := rel(imp)
			switch {
			case under(ri, "spi"):
				return ""
			case slices.Contains(sharedPluginLibs, ri) && under(r, path.Dir(ri)) && !under(r, ri):
				return ""
			case p.Name == "main" && (under(ri, "sdk") || under(ri, "plugins")):
				return ""
			case under(r, "plugins/builtin") && under(ri, "plugins"):
				return ""
			}
			return "plugin libraries import spi only, plus their kind's shared library (mains may import sdk)"
		},
		func(p pkg, imp string) string { // the core module stays free of cluster client libraries
			if under(imp, "k8s.io") || under(imp, "sigs.k8s.io") {
				return "the core module never imports a Kubernetes client (a launcher that needs one is its own Go module)"
			}
			return ""
		},
		func(p pkg, imp string) string { // the cloud scheduler reaches a cluster through the launcher kind only
			r := rel(p.ImportPath)
			if under(r, "host/cloud") && strings.HasPrefix(imp, module) && (under(rel(imp), "internal/transport") || under(rel(imp), "plugins")) {
				return "host/cloud sees launchers as spi.Launcher (through host/pluginhost), never a transport or a plugin library"
			}
			return ""
		},
		func(p pkg, imp string) string { // examples use public packages only
			if under(rel(p.ImportPath), "examples") && strings.HasPrefix(imp, module) && under(rel(imp), "internal") {
				return "examples use only public packages"
			}
			return ""
		},
		func(p pkg, imp string) string { // no util/common/helper packages
			switch p.Name {
			case "util", "utils", "common", "helper", "helpers":
				return "no package named util/common/helper"
			}
			return ""
		},
	}
}

func TestImportRules(t *testing.T) {
	var violations []string
	for _, p := range listPackages(t) {
		for _, imp := range p.Imports {
			for _, r := range rules() {
				if msg := r(p, imp); msg != "" {
					violations = append(violations, fmt.Sprintf("%s imports %s: %s", p.ImportPath, imp, msg))
				}
			}
		}
	}
	if len(violations) > 0 {
		t.Fatalf("import rules broken:\n%s", strings.Join(violations, "\n"))
	}
}

// TestRulesCatchViolations proves each rule fires on a known-bad edge, so a
// rule that silently stops matching is noticed.
func TestRulesCatchViolations(t *testing.T) {
	bad := []struct {
		pkg pkg
		imp string
	}{
		{pkg{ImportPath: module + "/spi", Name: "spi"}, "google.golang.org/grpc"},
		{pkg{ImportPath: module + "/spi/spitest", Name: "spitest"}, module + "/core/reg"},
		{pkg{ImportPath: module + "/core/sharding", Name: "sharding"}, module + "/host"},
		{pkg{ImportPath: module + "/core/exec", Name: "exec"}, "github.com/hashicorp/go-plugin"},
		{pkg{ImportPath: module + "/core/reg", Name: "reg"}, "github.com/go-zookeeper/zk"},
		{pkg{ImportPath: module + "/host", Name: "host"}, "github.com/go-zookeeper/zk"},
		{pkg{ImportPath: module + "/sdk", Name: "sdk"}, module + "/core/reg"},
		{pkg{ImportPath: module + "/plugins/sharding/avg", Name: "avg"}, module + "/sdk"},
		{pkg{ImportPath: module + "/examples/x", Name: "main"}, module + "/internal/transport"},
		{pkg{ImportPath: module + "/core/util", Name: "util"}, "fmt"},
		{pkg{ImportPath: module + "/plugins/errorhandler/email", Name: "email"}, module + "/plugins/errorhandler/webhook"},
		{pkg{ImportPath: module + "/plugins/jobtype/http", Name: "httpjob"}, module + "/plugins/errorhandler/alert"},
		{pkg{ImportPath: module + "/plugins/errorhandler/alert", Name: "alert"}, module + "/plugins/errorhandler/builtin"},
		{pkg{ImportPath: module + "/plugins/errorhandler/alert", Name: "alert"}, module + "/sdk"},
		{pkg{ImportPath: module + "/host/cloud", Name: "cloud"}, "k8s.io/client-go/kubernetes"},
		{pkg{ImportPath: module + "/host/cloud", Name: "cloud"}, module + "/internal/transport"},
		{pkg{ImportPath: module + "/core/reg/zookeeper/internal/zkwire", Name: "zkwire"}, module + "/core/reg/zookeeper"},
		{pkg{ImportPath: module + "/core/reg/zookeeper/internal/zkwire", Name: "zkwire"}, module + "/core/reg/zookeeper/internal/sasl"},
		{pkg{ImportPath: module + "/core/reg/zookeeper/internal/zkwire", Name: "zkwire"}, "github.com/go-zookeeper/zk"},
	}
	for _, b := range bad {
		fired := false
		for _, r := range rules() {
			if r(b.pkg, b.imp) != "" {
				fired = true
			}
		}
		if !fired {
			t.Errorf("no rule rejects %s importing %s", b.pkg.ImportPath, b.imp)
		}
	}
	good := []struct {
		pkg pkg
		imp string
	}{
		{pkg{ImportPath: module + "/core/reg/zookeeper", Name: "zookeeper"}, "github.com/go-zookeeper/zk"},
		{pkg{ImportPath: module + "/plugins/sharding/avg/cmd/ejob-x", Name: "main"}, module + "/sdk"},
		{pkg{ImportPath: module + "/sdk", Name: "sdk"}, module + "/internal/transport"},
		{pkg{ImportPath: module + "/host", Name: "host"}, module + "/core/reg"},
		{pkg{ImportPath: module + "/plugins/errorhandler/email", Name: "email"}, module + "/plugins/errorhandler/alert"},
		{pkg{ImportPath: module + "/core/reg/zookeeper/internal/zkwire", Name: "zkwire"}, module + "/core/reg"},
		{pkg{ImportPath: module + "/core/reg/zookeeper", Name: "zookeeper"}, module + "/core/reg/zookeeper/internal/zkwire"},
	}
	for _, g := range good {
		for _, r := range rules() {
			if msg := r(g.pkg, g.imp); msg != "" {
				t.Errorf("rule wrongly rejects %s importing %s: %s", g.pkg.ImportPath, g.imp, msg)
			}
		}
	}
}

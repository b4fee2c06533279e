package hostconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/spi"
)

const tracingJob = "  jobs:\n    j: {elasticJobType: SCRIPT, shardingTotalCount: 1}\n"

func TestTracingSection(t *testing.T) {
	t.Parallel()
	data := "elasticjob:\n  regCenter: {serverLists: 'h:1', namespace: n}\n  tracing:\n    type: rdb\n" +
		"    exclude-job-names: noisy, chatty\n    dataSource:\n      url: jdbc:postgresql://db:5432/ejob\n" +
		"      username: ejob\n      password: ${DB_PASSWORD}\n      maximum-pool-size: 4\n" + tracingJob
	opts := catalog()
	var validated map[string]string
	opts.ValidateProps = func(kind spi.Kind, typ, job string, props map[string]string) error {
		if kind == spi.KindTracing {
			validated = props
		}
		return nil
	}
	f, err := Parse("f.yaml", []byte(data), opts)
	if err != nil {
		t.Fatal(err)
	}
	want := &Tracing{Type: "rdb", Exclude: []string{"noisy", "chatty"}, Line: 3, DataSource: map[string]string{
		"url": "jdbc:postgresql://db:5432/ejob", "username": "ejob", "password": "dbpw", "maximum-pool-size": "4"}}
	if !reflect.DeepEqual(f.Tracing, want) {
		t.Errorf("tracing = %+v\nwant      %+v", f.Tracing, want)
	}
	if !reflect.DeepEqual(validated, want.DataSource) {
		t.Errorf("validated %v", validated)
	}
	if !f.Tracing.Traced("j") || f.Tracing.Traced("noisy") {
		t.Error("the exclude list is not applied")
	}
}

func TestTracingStandaloneDefault(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "ejob.yaml")
	writeFile(t, path, "elasticjob:\n  tracing: {type: RDB, includeJobNames: [j]}\n"+tracingJob)
	f, err := Load(path, catalog())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"driver": "sqlite", "url": filepath.Join(dir, DefaultTracingFile)}
	if !reflect.DeepEqual(f.Tracing.DataSource, want) || !f.Tracing.DefaultDataSource {
		t.Errorf("data source = %v (default %v), want %v", f.Tracing.DataSource, f.Tracing.DefaultDataSource, want)
	}
}

// TestTracingDataSourceRejected: the sink's Validate runs at load time and
// its error is reported at the line of the setting it names.
func TestTracingDataSourceRejected(t *testing.T) {
	t.Parallel()
	data := "elasticjob:\n  tracing:\n    type: RDB\n    dataSource:\n      url: x\n      driver: oracle\n" + tracingJob
	opts := catalog()
	opts.ValidateProps = func(kind spi.Kind, typ, job string, props map[string]string) error {
		if kind == spi.KindTracing && props["driver"] == "oracle" {
			return fmt.Errorf("%w: rdb tracing: driver: unknown driver %q", spi.ErrInvalidConfig, "oracle")
		}
		return nil
	}
	_, err := Parse("f.yaml", []byte(data), opts)
	want := `f.yaml:6: elasticjob.tracing.dataSource: invalid config: rdb tracing: driver: unknown driver "oracle"`
	if err == nil || err.Error() != want || !errors.Is(err, spi.ErrInvalidConfig) {
		t.Errorf("err = %v\nwant  %s", err, want)
	}
	if err != nil && strings.Contains(err.Error(), "not supported") {
		t.Error(err)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

package config

import (
	"errors"
	"strings"
	"testing"
)

// Ported from upstream's ConfigurationServiceTest.assertSetUpJobConfiguration*.
func TestSetUp(t *testing.T) {
	t.Parallel()
	local := New("test_job", 3)
	local.Cron = "0/1 * * * * ?"
	overwriting := local.Clone()
	overwriting.Overwrite = true
	registryYAML := []byte("cron: 0/5 * * * * ?\njobName: test_job\nshardingTotalCount: 5\n")
	const class = "com.example.TestJob"

	tests := map[string]struct {
		local     *JobConfiguration
		reg       RegistryState
		wantWrite bool
		wantTotal int
		wantErr   error
	}{
		"JobConflict":                            {local, RegistryState{RootExists: true, Root: []byte("com.example.Other"), ConfigExists: true, Config: registryYAML}, false, 0, ErrJobConflict},
		"blank root is no conflict (3.0.3+)":     {local, RegistryState{RootExists: true, Root: []byte(" "), ConfigExists: true, Config: registryYAML}, false, 5, nil},
		"NewJobConfiguration":                    {local, RegistryState{}, true, 3, nil},
		"root without config":                    {local, RegistryState{RootExists: true, Root: []byte(class)}, true, 3, nil},
		"ExistedJobConfigurationAndOverwrite":    {overwriting, RegistryState{RootExists: true, Root: []byte(class), ConfigExists: true, Config: registryYAML}, true, 3, nil},
		"ExistedJobConfigurationAndNotOverwrite": {local, RegistryState{RootExists: true, Root: []byte(class), ConfigExists: true, Config: registryYAML}, false, 5, nil},
		"malformed registry config":              {local, RegistryState{RootExists: true, Root: []byte(class), ConfigExists: true, Config: []byte("shardingTotalCount: x\n")}, false, 0, ErrMalformed},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := SetUp(class, tc.local, tc.reg)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Write != tc.wantWrite || got.Config.ShardingTotalCount != tc.wantTotal {
				t.Errorf("SetUp = write %v total %d, want %v %d", got.Write, got.Config.ShardingTotalCount, tc.wantWrite, tc.wantTotal)
			}
			if got.Write {
				want, _ := Marshal(tc.local)
				if string(got.ConfigData) != string(want) {
					t.Errorf("ConfigData = %q, want %q", got.ConfigData, want)
				}
			}
		})
	}
	_, err := SetUp(class, local, RegistryState{RootExists: true, Root: []byte("com.example.Other")})
	want := "The job 'test_job' in register center's class is 'com.example.Other', your job class is 'com.example.TestJob'"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("conflict error %v does not carry upstream's text", err)
	}
}

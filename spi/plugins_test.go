package spi_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/spi"
)

type nopStrategy struct{ name string }

func (nopStrategy) Sharding(context.Context, spi.ShardingRequest) (spi.ShardingResponse, error) {
	return spi.ShardingResponse{}, nil
}

type nopPool struct{}

func (nopPool) PoolSize(context.Context, spi.PoolSizeRequest) (spi.PoolSizeResponse, error) {
	return spi.PoolSizeResponse{Size: 1}, nil
}

func TestPluginsInfo(t *testing.T) {
	t.Parallel()
	p := spi.Plugins{
		Version:     "v",
		Sharding:    map[string]spi.ShardingStrategy{"b": nopStrategy{}, "A": nopStrategy{}, "ROUND_ROBIN": nopStrategy{}},
		ThreadPools: map[string]spi.ThreadPoolSizeProvider{"CPU": nopPool{}},
	}
	want := spi.Info{PluginVersion: "v", APIVersion: spi.APIVersion, Types: []spi.TypeKey{
		{Kind: spi.KindSharding, Type: "A"},
		{Kind: spi.KindSharding, Type: "b"},
		{Kind: spi.KindSharding, Type: "ROUND_ROBIN"},
		{Kind: spi.KindThreadPool, Type: "CPU"},
	}}
	if got := p.Info(); !reflect.DeepEqual(got, want) {
		t.Errorf("Info() = %+v\nwant %+v", got, want)
	}
}

func TestPluginsValidate(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		p    spi.Plugins
		want string // "" for valid
	}{
		"one type": {spi.Plugins{ThreadPools: map[string]spi.ThreadPoolSizeProvider{"CPU": nopPool{}}}, ""},
		"same name in two kinds": {spi.Plugins{
			Sharding:    map[string]spi.ShardingStrategy{"X": nopStrategy{}},
			ThreadPools: map[string]spi.ThreadPoolSizeProvider{"x": nopPool{}},
		}, ""},
		"nothing":   {spi.Plugins{Version: "v"}, "no implementation to serve"},
		"empty map": {spi.Plugins{Sharding: map[string]spi.ShardingStrategy{}}, "no implementation to serve"},
		"duplicate": {spi.Plugins{Sharding: map[string]spi.ShardingStrategy{"avg": nopStrategy{}, " AVG": nopStrategy{}}},
			`sharding: type names " AVG" and "avg" are the same ignoring case`},
		"blank name": {spi.Plugins{Sharding: map[string]spi.ShardingStrategy{"  ": nopStrategy{}}}, `sharding: empty type name "  "`},
		"nil impl":   {spi.Plugins{Sharding: map[string]spi.ShardingStrategy{"AVG": nil}}, `sharding "AVG": nil implementation`},
		"nil listener": {spi.Plugins{JobListeners: map[string]spi.JobListener{"LOG": nil}},
			`joblistener "LOG": nil implementation`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := tt.p.Validate()
			if tt.want == "" {
				if err != nil {
					t.Errorf("Validate() = %v", err)
				}
				return
			}
			if !errors.Is(err, spi.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want ErrInvalidConfig mentioning %q", err, tt.want)
			}
		})
	}
}

func TestPluginsLookup(t *testing.T) {
	t.Parallel()
	avg, rr := nopStrategy{"avg"}, nopStrategy{"rr"}
	p := spi.Plugins{Sharding: map[string]spi.ShardingStrategy{"Avg_Allocation": avg, "ROUND_ROBIN": rr}}
	for _, name := range []string{"Avg_Allocation", "AVG_ALLOCATION", " avg_allocation "} {
		got, err := p.Lookup(spi.KindSharding, name)
		if err != nil || got != spi.ShardingStrategy(avg) {
			t.Errorf("Lookup(sharding, %q) = %v, %v; want the AVG_ALLOCATION strategy", name, got, err)
		}
	}
	got, err := spi.Resolve[spi.ShardingStrategy](p, "round_robin")
	if err != nil || got != spi.ShardingStrategy(rr) {
		t.Errorf("Resolve(round_robin) = %v, %v", got, err)
	}

	tests := map[string]struct {
		kind spi.Kind
		name string
		want string
	}{
		"unknown name":         {spi.KindSharding, "ODEVITY", `unknown type: no sharding type "ODEVITY" (available: Avg_Allocation, ROUND_ROBIN)`},
		"name of another kind": {spi.KindThreadPool, "ROUND_ROBIN", `unknown type: no threadpool type "ROUND_ROBIN" (available: none)`},
		"unknown kind":         {spi.Kind("nosuchkind"), "X", `unknown type: no kind "nosuchkind"`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			impl, err := p.Lookup(tt.kind, tt.name)
			if !errors.Is(err, spi.ErrUnknownType) || err.Error() != tt.want {
				t.Errorf("Lookup(%s, %q) = %v, %v; want error %q", tt.kind, tt.name, impl, err, tt.want)
			}
		})
	}
	if _, err := spi.Resolve[spi.JobExecutor](p, "ROUND_ROBIN"); !errors.Is(err, spi.ErrUnknownType) || !strings.Contains(err.Error(), "jobtype") {
		t.Errorf("Resolve[JobExecutor](ROUND_ROBIN) = %v, want ErrUnknownType for kind jobtype", err)
	}
	if _, err := spi.Resolve[context.Context](p, "X"); err == nil || !strings.Contains(err.Error(), "not the interface of a kind") {
		t.Errorf("Resolve[context.Context] = %v, want an error", err)
	}
}

// wrongKind answers every lookup with a thread-pool provider.
type wrongKind struct{}

func (wrongKind) Lookup(spi.Kind, string) (any, error) { return nopPool{}, nil }

func TestResolveWrongImplementation(t *testing.T) {
	t.Parallel()
	if _, err := spi.Resolve[spi.ShardingStrategy](wrongKind{}, "X"); err == nil || !strings.Contains(err.Error(), "does not implement") {
		t.Errorf("Resolve = %v, want an error saying the implementation does not fit", err)
	}
}

func TestKinds(t *testing.T) {
	t.Parallel()
	want := []spi.Kind{spi.KindSharding, spi.KindErrorHandler, spi.KindJobType, spi.KindThreadPool, spi.KindJobListener, spi.KindTracing, spi.KindLauncher}
	if got := spi.Kinds(); !reflect.DeepEqual(got, want) {
		t.Errorf("Kinds() = %v, want %v", got, want)
	}
	for _, k := range want {
		if !k.Valid() {
			t.Errorf("%s not Valid", k)
		}
	}
	if spi.Kind("nosuchkind").Valid() {
		t.Error("an unknown kind is Valid")
	}
}

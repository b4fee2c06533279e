package transport

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/spi"
)

type nopStrategy struct{}

func (nopStrategy) Sharding(context.Context, spi.ShardingRequest) (spi.ShardingResponse, error) {
	return spi.ShardingResponse{}, nil
}

type nopPool struct{}

func (nopPool) PoolSize(context.Context, spi.PoolSizeRequest) (spi.PoolSizeResponse, error) {
	return spi.PoolSizeResponse{Size: 1}, nil
}

func TestImplementationsInfo(t *testing.T) {
	t.Parallel()
	impls := Implementations{
		PluginVersion: "v",
		Sharding:      map[string]spi.ShardingStrategy{"b": nopStrategy{}, "A": nopStrategy{}, "ROUND_ROBIN": nopStrategy{}},
		ThreadPools:   map[string]spi.ThreadPoolSizeProvider{"CPU": nopPool{}},
	}
	want := spi.Info{PluginVersion: "v", APIVersion: spi.APIVersion, Types: []spi.TypeKey{
		{Kind: spi.KindSharding, Type: "A"},
		{Kind: spi.KindSharding, Type: "b"},
		{Kind: spi.KindSharding, Type: "ROUND_ROBIN"},
		{Kind: spi.KindThreadPool, Type: "CPU"},
	}}
	if got := impls.Info(); !reflect.DeepEqual(got, want) {
		t.Errorf("Info() = %+v\nwant %+v", got, want)
	}
}

func TestImplementationsValidate(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		impls Implementations
		want  string // "" for valid
	}{
		"one type": {Implementations{ThreadPools: map[string]spi.ThreadPoolSizeProvider{"CPU": nopPool{}}}, ""},
		"same name in two kinds": {Implementations{
			Sharding:    map[string]spi.ShardingStrategy{"X": nopStrategy{}},
			ThreadPools: map[string]spi.ThreadPoolSizeProvider{"x": nopPool{}},
		}, ""},
		"nothing":   {Implementations{PluginVersion: "v"}, "no implementation to serve"},
		"empty map": {Implementations{Sharding: map[string]spi.ShardingStrategy{}}, "no implementation to serve"},
		"duplicate": {Implementations{Sharding: map[string]spi.ShardingStrategy{"avg": nopStrategy{}, " AVG": nopStrategy{}}},
			`sharding: type names " AVG" and "avg" are the same ignoring case`},
		"blank name": {Implementations{Sharding: map[string]spi.ShardingStrategy{"  ": nopStrategy{}}}, `sharding: empty type name "  "`},
		"nil impl":   {Implementations{Sharding: map[string]spi.ShardingStrategy{"AVG": nil}}, `sharding "AVG": nil implementation`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := tt.impls.Validate()
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

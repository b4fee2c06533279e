package lifecycle_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ejob-io/ejob/core/lifecycle"
	"github.com/ejob-io/ejob/core/reg"
)

// nilLists returns the JSON paths of v's lists and maps that encode as
// null: fields with a JSON name (not "-") of slice or map type that are
// nil, at any depth.
func nilLists(v any) []string {
	var out []string
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(path, v.Elem())
			}
		case reflect.Slice:
			if v.IsNil() {
				out = append(out, path)
				return
			}
			for i := range v.Len() {
				walk(path+"[]", v.Index(i))
			}
		case reflect.Map:
			if v.IsNil() {
				out = append(out, path)
			}
		case reflect.Struct:
			for i := range v.NumField() {
				f := v.Type().Field(i)
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				switch {
				case name == "-" || !f.IsExported():
				case f.Anonymous && name == "":
					walk(path, v.Field(i))
				default:
					walk(path+"."+name, v.Field(i))
				}
			}
		}
	}
	walk("", reflect.ValueOf(v))
	return out
}

// TestNoNullLists: a server whose hosts all stopped cleanly keeps its
// servers/{ip} node and has no instance; getAllServersBriefInfo answered
// "instances": null for it (upstream: []), and the console's Servers page
// threw and hid the live servers too. Every read model answers an empty
// list, never null, in a namespace with such a server, a job without
// instances and one without items.
func TestNoNullLists(t *testing.T) {
	registries(t, func(t *testing.T, c reg.Client) {
		// 10.0.0.9's host stopped: its server node stays, its instance
		// went with its session. Job "idle" has no instance at all.
		job(t, c, "live", []string{"10.0.0.1@-@1"}, map[string]string{"10.0.0.1": "ENABLED", "10.0.0.9": "ENABLED"}, map[int]string{0: "10.0.0.1@-@1"})
		job(t, c, "idle", nil, map[string]string{"10.0.0.9": "ENABLED"}, nil)
		ctx := ctxOf(t)
		models := map[string]func() (any, error){
			"Servers": func() (any, error) { return lifecycle.Servers(ctx, c) },
			"Jobs":    func() (any, error) { return lifecycle.Jobs(ctx, c) },
			"Job":     func() (any, error) { return lifecycle.Job(ctx, c, "idle") },
			"JobsOfServer": func() (any, error) {
				return lifecycle.JobsOfServer(ctx, c, "10.0.0.9")
			},
			"Sharding":   func() (any, error) { return lifecycle.Sharding(ctx, c, "idle") },
			"JobServers": func() (any, error) { return lifecycle.JobServers(ctx, c, "idle") },
			"Detail":     func() (any, error) { return lifecycle.Detail(ctx, c, "idle") },
			"DetailLive": func() (any, error) { return lifecycle.Detail(ctx, c, "live") },
			"Config": func() (any, error) {
				st, err := lifecycle.GetConfig(ctx, c, "idle")
				if err != nil {
					return nil, err
				}
				return lifecycle.ToConfigJSON(st.Config), nil
			},
		}
		for name, read := range models {
			m, err := read()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if nils := nilLists(m); len(nils) > 0 {
				data, _ := json.Marshal(m)
				t.Errorf("%s: null at %v in %s", name, nils, data)
			}
		}
		servers, err := lifecycle.Servers(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(servers)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), `"serverIp":"10.0.0.9","instances":[],"jobNames":["idle","live"],"instancesNum":0`) ||
			!strings.Contains(string(data), `"serverIp":"10.0.0.1","instances":["10.0.0.1@-@1"]`) {
			t.Errorf("servers: %s", data)
		}
	})
}

package zookeeper

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The connection is a floor below the features: connFiles (the
// connection go-zookeeper reads and writes, the table of its watches, the
// handshake's peer checks) name nothing declared in featureFiles (requests
// ejob sends on the connection), which reach it only through its own
// methods and the hooks it calls (sniffConn.route, sniffConn.auth).
var (
	connFiles    = []string{"conn.go", "library.go", "peer.go"}
	featureFiles = []string{"multitxn.go", "multiread.go", "recursive.go", "sasl.go", "saslconfig.go"}
)

func TestConnectionFloor(t *testing.T) {
	fset := token.NewFileSet()
	parse := func(name string) *ast.File {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	// What the features declare: package-level names, and the fields and
	// methods no other file declares.
	top := map[string]string{}
	members := map[string]string{}
	elsewhere := map[string]bool{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		feature := slices.Contains(featureFiles, name)
		for _, d := range parse(name).Decls {
			for id, member := range declared(d) {
				switch {
				case !feature && member:
					elsewhere[id] = true
				case feature && member:
					members[id] = name
				case feature:
					top[id] = name
				}
			}
		}
	}
	for _, name := range connFiles {
		if _, err := os.Stat(name); err != nil {
			t.Fatal(err)
		}
		ast.Inspect(parse(name), func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if from, ok := members[n.Sel.Name]; ok && !elsewhere[n.Sel.Name] {
					t.Errorf("%s: %s names .%s of %s, a feature above the connection", fset.Position(n.Pos()), name, n.Sel.Name, from)
				}
				ast.Inspect(n.X, func(m ast.Node) bool { return checkIdent(t, fset, name, top, m) })
				return false
			default:
				return checkIdent(t, fset, name, top, n)
			}
		})
	}
}

// checkIdent reports an identifier resolved outside its file that a
// feature declares.
func checkIdent(t *testing.T, fset *token.FileSet, file string, top map[string]string, n ast.Node) bool {
	id, ok := n.(*ast.Ident)
	// Obj is set for what the parser resolved in the file itself.
	if !ok || id.Obj != nil || id.Name == "_" {
		return true
	}
	if from, ok := top[id.Name]; ok {
		t.Errorf("%s: %s names %s of %s, a feature above the connection", fset.Position(id.Pos()), file, id.Name, from)
	}
	return true
}

// declared lists the names d declares (member: a method or a struct field).
func declared(d ast.Decl) map[string]bool {
	out := map[string]bool{}
	switch d := d.(type) {
	case *ast.FuncDecl:
		out[d.Name.Name] = d.Recv != nil
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.ValueSpec:
				for _, n := range s.Names {
					out[n.Name] = false
				}
			case *ast.TypeSpec:
				out[s.Name.Name] = false
				if st, ok := s.Type.(*ast.StructType); ok {
					for _, f := range st.Fields.List {
						for _, n := range f.Names {
							out[n.Name] = true
						}
					}
				}
			}
		}
	}
	return out
}

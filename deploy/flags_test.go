package deploy

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// flagDefs maps a flag name to the flag.FlagSet method that defines it
// ("StringVar", "BoolVar", "Duration", …).
type flagDefs map[string]string

// serverFlags parses cmd/raftstream's non-test files and returns the flags each
// function defines, by function name: "parseFlags" (the server) and "health"
// (the health subcommand). Reading the source, not `raftstream --help`,
// keeps the test fast and free of a build.
func serverFlags(t *testing.T) map[string]flagDefs {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("../cmd/raftstream/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var decls []ast.Decl
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		decls = append(decls, f.Decls...)
	}
	calls := map[string][]string{} // function → functions it calls by name
	defining := map[string]int{    // method → index of the name argument
		"String": 0, "Int": 0, "Int64": 0, "Uint": 0, "Uint64": 0, "Bool": 0, "Duration": 0, "Float64": 0,
		"Func": 0, "BoolFunc": 0, "TextVar": 1, "Var": 1,
		"StringVar": 1, "IntVar": 1, "Int64Var": 1, "UintVar": 1, "Uint64Var": 1, "BoolVar": 1,
		"DurationVar": 1, "Float64Var": 1,
	}
	out := map[string]flagDefs{}
	for _, d := range decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		defs := flagDefs{}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if id, isIdent := call.Fun.(*ast.Ident); isIdent {
				calls[fd.Name.Name] = append(calls[fd.Name.Name], id.Name)
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if _, isIdent := sel.X.(*ast.Ident); !isIdent {
				return true
			}
			i, ok := defining[sel.Sel.Name]
			if !ok || len(call.Args) <= i {
				return true
			}
			lit, ok := call.Args[i].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			name, err := strconv.Unquote(lit.Value)
			if err == nil {
				defs[name] = sel.Sel.Name
			}
			return true
		})
		if len(defs) > 0 {
			out[fd.Name.Name] = defs
		}
	}
	// Flags registered by helpers that a flag-defining function calls
	// (registerSecurityFlags from parseFlags, in another file) are that
	// function's flags too.
	for fn, defs := range out {
		for _, callee := range calls[fn] {
			for name, m := range out[callee] {
				if _, dup := defs[name]; !dup {
					defs[name] = m
				}
			}
		}
	}
	// Guard the parser itself: these flags are what every deployment uses.
	for fn, want := range map[string][]string{
		"parseFlags": {"bind", "port", "dir", "join", "bootstrap-expect", "announce", "announce-port",
			"cluster-port", "cluster-announce-bus", "protected-mode"},
		"health": {"addr", "timeout"},
	} {
		for _, name := range want {
			if _, ok := out[fn][name]; !ok {
				t.Fatalf("main.go: %s defines no flag %q (found %v); did the flag definitions change shape?", fn, name, out[fn])
			}
		}
	}
	return out
}

// parseArgs checks argv against defs the way package flag reads it
// (-name, --name, -name=value, --name value; bool flags take no separate
// value) and returns the values by flag name. Every problem is returned.
func parseArgs(argv []string, defs flagDefs) (map[string]string, []error) {
	vals := map[string]string{}
	var errs []error
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			errs = append(errs, fmt.Errorf("argument %q is not a flag (the server takes no positional arguments)", a))
			continue
		}
		name := strings.TrimLeft(a, "-")
		value, hasValue := "", false
		if k, v, ok := strings.Cut(name, "="); ok {
			name, value, hasValue = k, v, true
		}
		kind, ok := defs[name]
		if !ok {
			errs = append(errs, fmt.Errorf("flag %q is not defined by the server", a))
			continue
		}
		if !hasValue && kind != "BoolVar" && kind != "Bool" {
			if i+1 >= len(argv) {
				errs = append(errs, fmt.Errorf("flag %q has no value", a))
				continue
			}
			i++
			value = argv[i]
		}
		if _, dup := vals[name]; dup {
			errs = append(errs, fmt.Errorf("flag %q given twice", name))
		}
		vals[name] = value
	}
	return vals, errs
}

// envFlag maps RAFTSTREAM_BOOTSTRAP_EXPECT to "bootstrap-expect", as
// cmd/raftstream reads the environment; ok is false for other variables.
func envFlag(env string) (string, bool) {
	rest, ok := strings.CutPrefix(env, "RAFTSTREAM_")
	if !ok {
		return "", false
	}
	return strings.ToLower(strings.ReplaceAll(rest, "_", "-")), true
}

// readYAML decodes every document of a YAML file into generic maps
// (merge keys `<<` resolved by the decoder).
func readYAML(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return decodeYAML(t, path, string(b))
}

func decodeYAML(t *testing.T, name, text string) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(text))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
	return docs
}

// Small accessors for generic YAML trees: a missing or mistyped node yields
// the zero value, and the checks report what they expected.

func m(v any, path ...string) map[string]any {
	for _, k := range path {
		mm, _ := v.(map[string]any)
		v = mm[k]
	}
	mm, _ := v.(map[string]any)
	return mm
}

func list(v any) []any { l, _ := v.([]any); return l }

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func strs(v any) []string {
	var out []string
	for _, x := range list(v) {
		out = append(out, str(x))
	}
	return out
}

func TestParseArgsRejectsWhatTheServerWould(t *testing.T) {
	defs := serverFlags(t)["parseFlags"]
	vals, errs := parseArgs([]string{"--port", "7001", "-bind=0.0.0.0", "--forwarding", "--join", "a:1,b:2"}, defs)
	if len(errs) != 0 {
		t.Fatalf("valid arguments rejected: %v", errs)
	}
	if vals["port"] != "7001" || vals["bind"] != "0.0.0.0" || vals["forwarding"] != "" || vals["join"] != "a:1,b:2" {
		t.Fatalf("values = %v", vals)
	}
	for _, bad := range [][]string{
		{"--no-such-flag", "1"},
		{"--port"},
		{"positional"},
		{"--port", "1", "--port=2"},
	} {
		if _, errs := parseArgs(bad, defs); len(errs) == 0 {
			t.Errorf("%q accepted", bad)
		}
	}
	if f, ok := envFlag("RAFTSTREAM_BOOTSTRAP_EXPECT"); !ok || f != "bootstrap-expect" {
		t.Errorf("envFlag = %q %v", f, ok)
	}
}

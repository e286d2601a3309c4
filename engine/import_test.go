package engine

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestEngineImports keeps the engine pure: no I/O, clock, randomness,
// logging or concurrency in its non-test files.
func TestEngineImports(t *testing.T) {
	forbidden := map[string]bool{"time": true, "os": true, "net": true, "math/rand": true, "math/rand/v2": true,
		"log": true, "log/slog": true, "sync": true, "sync/atomic": true, "os/exec": true, "crypto/rand": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if forbidden[p] {
				t.Errorf("%s imports %q: package engine must stay free of I/O, clock, randomness and goroutines", f, p)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no engine source files found")
	}
}

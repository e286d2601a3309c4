package checker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/raftstream/raftstream/jepsen/history"
)

// fixture is an entry of jepsen/testdata/fixtures.json: a real failing
// history and what the checkers must say about it.
type fixture struct {
	About   string              `json:"about"`
	Options Options             `json:"options"`
	Illegal map[string][]string `json:"illegal"` // checker → anomaly kinds it must report
	Ok      []string            `json:"ok"`      // checkers that must pass
	// Visualization false: porcupine's search for the visualization of a
	// non-linearizable stream does not end within its budget (the verdict
	// comes from the chain check regardless).
	Visualization *bool `json:"visualization"`
}

// TestFixturesAreFlagged runs every checker on the recorded failing
// histories under jepsen/testdata and requires the verdicts and anomaly
// kinds listed in fixtures.json.
func TestFixturesAreFlagged(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fs map[string]fixture
	if err := json.Unmarshal(b, &fs); err != nil {
		t.Fatal(err)
	}
	if len(fs) == 0 {
		t.Fatal("no fixtures")
	}
	for name, f := range fs {
		t.Run(name, func(t *testing.T) {
			h, err := history.ReadFile(filepath.Join("..", "testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]Result{}
			for _, r := range Run(h, f.Options) {
				got[r.Name] = r
			}
			for c, kinds := range f.Illegal {
				r, ok := got[c]
				if !ok || r.Valid != Illegal {
					t.Errorf("%s: %s, want illegal", c, r.Valid)
					continue
				}
				have := map[string]bool{}
				for _, a := range r.Anomalies {
					have[a.Kind] = true
					if len(a.Ops) == 0 {
						t.Errorf("%s: anomaly %q names no operation", c, a.Msg)
					}
				}
				for _, k := range kinds {
					if !have[k] {
						t.Errorf("%s: no %s anomaly", c, k)
					}
				}
			}
			for _, c := range f.Ok {
				if got[c].Valid != Ok {
					t.Errorf("%s: %s, want ok: %+v", c, got[c].Valid, got[c].Anomalies)
				}
			}
			if len(got["linearizable"].Files) == 0 && f.Illegal["linearizable"] != nil && (f.Visualization == nil || *f.Visualization) {
				t.Error("no porcupine visualization for the non-linearizable keys")
			}
		})
	}
}

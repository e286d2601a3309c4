package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPackageLayering holds the tree to the package map in README.md:
// dependencies point one way (cmd → resp → cluster → fsm → engine; slots a
// leaf), resp's sub-packages need neither the node nor the FSM, the jepsen
// tree reaches the system only through the wire protocol and processes, and
// only cmd/ reads the environment.
func TestPackageLayering(t *testing.T) {
	const mod = "github.com/raftstream/raftstream/"
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Deps " "}}`, "../../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], mod) {
			continue
		}
		var ours []string
		for _, d := range f[1:] {
			if strings.HasPrefix(d, mod) {
				ours = append(ours, strings.TrimPrefix(d, mod))
			}
		}
		deps[strings.TrimPrefix(f[0], mod)] = ours
	}
	under := func(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }
	// forbidden[p] lists the trees package p (and everything below it) must
	// not depend on.
	forbidden := []struct{ pkg, not string }{
		{"slots", "engine"}, {"slots", "fsm"}, {"slots", "cluster"}, {"slots", "resp"},
		{"engine", "fsm"}, {"engine", "cluster"}, {"engine", "resp"}, {"engine", "jepsen"},
		{"fsm", "cluster"}, {"fsm", "resp"}, {"fsm", "jepsen"},
		{"cluster", "resp"}, {"cluster", "jepsen"},
		{"resp", "jepsen"}, {"resp", "cmd"},
		{"resp/wire", "fsm"}, {"resp/wire", "cluster"},
		{"resp/command", "fsm"}, {"resp/command", "cluster"},
		{"resp/acl", "fsm"}, {"resp/acl", "cluster"},
		{"resp/admin", "fsm"}, {"resp/admin", "cluster"}, {"resp/admin", "engine"},
		{"jepsen", "cluster"}, {"jepsen", "fsm"}, {"jepsen", "cmd"},
	}
	checked := 0
	for pkg, ds := range deps {
		for _, rule := range forbidden {
			if !under(pkg, rule.pkg) || (rule.pkg == "resp" && pkg != "resp" && rule.not != "jepsen" && rule.not != "cmd") {
				continue
			}
			checked++
			for _, d := range ds {
				if under(d, rule.not) {
					t.Errorf("%s depends on %s: the package map forbids %s → %s", pkg, d, rule.pkg, rule.not)
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d rules applied: is the module path or the tree wrong?", checked)
	}

	// Only cmd/ reads the environment.
	grep, err := exec.Command("git", "-C", "../..", "grep", "--untracked", "-l", "-E", `os\.(Getenv|LookupEnv)\(`, "--", "*.go", ":!cmd/", ":!*_test.go").CombinedOutput()
	if err == nil {
		t.Errorf("outside cmd/, these read the environment:\n%s", grep)
	} else if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("git grep: %v\n%s", err, grep)
	}
}

package deploy

import (
	"fmt"
	"maps"
	stdnet "net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// mergeCompose applies a compose override as docker-compose does for the
// keys these files use: services are merged by name, a service's
// environment is merged by variable, its other keys are replaced; top-level
// volumes and networks are merged by name.
func mergeCompose(base, over map[string]any) map[string]any {
	out := maps.Clone(base)
	for _, top := range []string{"services", "volumes", "networks"} {
		merged := maps.Clone(m(base, top))
		if merged == nil {
			merged = map[string]any{}
		}
		for name, v := range m(over, top) {
			if top != "services" || merged[name] == nil {
				merged[name] = v
				continue
			}
			svc := maps.Clone(m(merged[name]))
			for k, val := range m(v) {
				if k == "environment" {
					env := maps.Clone(m(svc, "environment"))
					if env == nil {
						env = map[string]any{}
					}
					maps.Copy(env, m(val))
					val = env
				}
				svc[k] = val
			}
			merged[name] = svc
		}
		out[top] = merged
	}
	return out
}

// checkCompose checks a (merged) compose file: valid flags and variables,
// loopback-only published ports that match the announced ones, the cluster
// shape in every node's environment, and named volumes at --dir.
func checkCompose(c map[string]any, flags map[string]flagDefs) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	if _, ok := c["name"]; ok {
		bad("top-level name: is Compose v2 only (docker-compose 1.29 rejects it)")
	}
	if v := str(c["version"]); !strings.HasPrefix(v, "3.") {
		bad("version %q: want a 3.x string, which docker-compose 1.29 and Compose v2 both read", v)
	}
	services := m(c, "services")
	if len(services) == 0 {
		return append(errs, fmt.Errorf("no services"))
	}
	names := slices.Sorted(maps.Keys(services))
	announced := map[string]string{}
	addrs := map[string]string{} // fixed IP → service
	for _, name := range names {
		svc := m(services, name)
		where := "service " + name
		if str(svc["image"]) == "" {
			bad("%s: no image", where)
		}
		if str(svc["restart"]) != "unless-stopped" {
			bad("%s: restart %q, want unless-stopped", where, str(svc["restart"]))
		}
		args := strs(svc["command"])
		vals, aerrs := parseArgs(args, flags["parseFlags"])
		for _, err := range aerrs {
			bad("%s: %v", where, err)
		}
		env := map[string]string{}
		for k, v := range m(svc, "environment") {
			f, ok := envFlag(k)
			if !ok {
				continue
			}
			if _, known := flags["parseFlags"][f]; !known {
				bad("%s: environment %s names no server flag", where, k)
				continue
			}
			if _, both := vals[f]; both {
				bad("%s: --%s set in both command and environment", where, f)
			}
			env[f] = str(v)
		}
		get := func(f string) string {
			if v, ok := vals[f]; ok {
				return v
			}
			return env[f]
		}
		port, bus := get("port"), get("cluster-port")
		if port == "" || bus == "" {
			bad("%s: --port and --cluster-port must be explicit", where)
		}
		if get("bind") != "0.0.0.0" {
			bad("%s: --bind %q: the container must listen on every interface", where, get("bind"))
		}
		if get("announce") != "127.0.0.1" {
			bad("%s: --announce %q, want 127.0.0.1 (clients on the host)", where, get("announce"))
		}
		ap := get("announce-port")
		if prev, dup := announced[ap]; dup {
			bad("%s: --announce-port %s also announced by %s", where, ap, prev)
		}
		announced[ap] = name
		if want := name + ":" + bus; get("cluster-announce-bus") != want {
			bad("%s: --cluster-announce-bus %q, want %q (service name on the compose network)", where, get("cluster-announce-bus"), want)
		}
		if n, _ := strconv.Atoi(get("bootstrap-expect")); n != len(services) {
			bad("%s: --bootstrap-expect %q, but the file has %d nodes", where, get("bootstrap-expect"), len(services))
		}
		var join []string
		for _, other := range names {
			join = append(join, other+":"+bus)
		}
		if got := strings.Split(get("join"), ","); !slices.Equal(slices.Sorted(slices.Values(got)), join) {
			bad("%s: --join %q, want every node %q", where, get("join"), strings.Join(join, ","))
		}

		// Published ports: 127.0.0.1 only, host port = announced port.
		published := strs(svc["ports"])
		if len(published) != 1 {
			bad("%s: want one published port (RESP), have %q", where, published)
		}
		for _, p := range published {
			parts := strings.Split(strings.TrimSuffix(p, "/tcp"), ":")
			if len(parts) != 3 || parts[0] != "127.0.0.1" {
				bad("%s: port %q is not published on 127.0.0.1 only (want 127.0.0.1:HOST:CONTAINER)", where, p)
				continue
			}
			if parts[1] != ap {
				bad("%s: host port %s differs from --announce-port %s", where, parts[1], ap)
			}
			if parts[2] != port {
				bad("%s: container port %s differs from --port %s", where, parts[2], port)
			}
		}

		// Data on a named volume at --dir.
		vols := strs(svc["volumes"])
		onDir := false
		for _, v := range vols {
			src, rest, _ := strings.Cut(v, ":")
			dst, _, _ := strings.Cut(rest, ":")
			if _, named := m(c, "volumes")[src]; !named {
				bad("%s: volume %q is not a named volume declared at the top level", where, v)
			} else if dst == get("dir") {
				onDir = true
			}
		}
		if !onDir {
			bad("%s: no named volume mounted at --dir %q", where, get("dir"))
		}

		// A fixed IP on the one network: the cluster records bus addresses
		// as IPs at formation, and `down`/`up` recreates the network.
		nets := m(svc, "networks")
		if len(nets) != 1 {
			bad("%s: want exactly one network, have %d", where, len(nets))
		}
		for net, cfg := range nets {
			ip := str(m(cfg)["ipv4_address"])
			subnets := list(m(c, "networks", net, "ipam")["config"])
			if ip == "" || len(subnets) != 1 {
				bad("%s: network %s: want a fixed ipv4_address in a network with one fixed subnet", where, net)
				continue
			}
			_, ipnet, err := stdnet.ParseCIDR(str(m(subnets[0])["subnet"]))
			if err != nil || !ipnet.Contains(stdnet.ParseIP(ip)) {
				bad("%s: ipv4_address %q is not in subnet %q", where, ip, str(m(subnets[0])["subnet"]))
			}
			if prev, dup := addrs[ip]; dup {
				bad("%s: ipv4_address %s also used by %s", where, ip, prev)
			}
			addrs[ip] = name
		}

		test := strs(m(svc, "healthcheck")["test"])
		if len(test) < 3 || test[0] != "CMD" || test[1] != "/raftstream" || test[2] != "health" {
			bad("%s: healthcheck %q, want [CMD /raftstream health …] (the image has no shell)", where, test)
		} else {
			hv, herrs := parseArgs(test[3:], flags["health"])
			for _, err := range herrs {
				bad("%s: healthcheck: %v", where, err)
			}
			if !strings.HasSuffix(hv["addr"], ":"+port) {
				bad("%s: healthcheck --addr %q is not the RESP port %s", where, hv["addr"], port)
			}
		}
	}
	return errs
}

// interpolate replaces ${VAR:-default} by its default, as compose does with
// VAR unset (the tests must not depend on the caller's environment).
func interpolate(text string) string {
	return regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*:-([^}]*)\}`).ReplaceAllString(text, "$1")
}

func composeFile(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	docs := decodeYAML(t, path, interpolate(string(b)))
	if len(docs) != 1 {
		t.Fatalf("%s: %d documents", path, len(docs))
	}
	return docs[0]
}

func TestComposeFiles(t *testing.T) {
	flags := serverFlags(t)
	three := composeFile(t, "docker-compose.yml")
	five := mergeCompose(three, composeFile(t, "docker-compose.5node.yml"))
	if _, ok := composeFile(t, "docker-compose.5node.yml")["name"]; ok {
		t.Error("docker-compose.5node.yml: top-level name:")
	}
	for name, c := range map[string]map[string]any{"3-node": three, "5-node": five} {
		t.Run(name, func(t *testing.T) {
			want := map[string]int{"3-node": 3, "5-node": 5}[name]
			if got := len(m(c, "services")); got != want {
				t.Errorf("%d services, want %d", got, want)
			}
			for _, err := range checkCompose(c, flags) {
				t.Error(err)
			}
		})
	}
}

func TestComposeCheckCatchesMistakes(t *testing.T) {
	flags := serverFlags(t)
	b, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	orig := string(b)
	for _, tc := range []struct{ name, old, new, want string }{
		{"all interfaces", `["127.0.0.1:7002:6379"]`, `["7002:6379"]`, "127.0.0.1 only"},
		{"announce port", `"--announce-port", "7003"]`, `"--announce-port", "7004"]`, "host port 7003 differs"},
		{"unknown flag", `"--node-name", "node1",`, `"--name", "node1",`, `"--name" is not defined`},
		{"unknown variable", `RAFTSTREAM_JOIN:`, `RAFTSTREAM_PEERS:`, "RAFTSTREAM_PEERS names no server flag"},
		{"top-level name", `version: "3.7"`, "version: \"3.7\"\nname: rs", "top-level name"},
		{"bind mount", `["node2-data:/data"]`, `["./data2:/data"]`, "not a named volume"},
		{"bus by IP", `"--cluster-announce-bus", "node3:16379"`, `"--cluster-announce-bus", "172.18.0.4:16379"`, "--cluster-announce-bus"},
		{"expect", `RAFTSTREAM_BOOTSTRAP_EXPECT: "3"`, `RAFTSTREAM_BOOTSTRAP_EXPECT: "2"`, "--bootstrap-expect"},
		{"same IP", `:-172.30.70}.13"`, `:-172.30.70}.12"`, "also used by node2"},
		{"outside subnet", `:-172.30.70}.11"`, `:-172.30.71}.11"`, "not in subnet"},
		{"shell healthcheck", `test: ["CMD", "/raftstream"`, `test: ["CMD-SHELL", "/raftstream"`, "healthcheck"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := strings.Count(orig, tc.old); n != 1 {
				t.Fatalf("docker-compose.yml contains %q %d times, want once; update the test", tc.old, n)
			}
			docs := decodeYAML(t, tc.name, interpolate(strings.Replace(orig, tc.old, tc.new, 1)))
			errs := checkCompose(docs[0], flags)
			for _, err := range errs {
				if strings.Contains(err.Error(), tc.want) {
					return
				}
			}
			t.Errorf("no error mentioning %q; got %v", tc.want, errs)
		})
	}
}

// TestDockerfile checks the image recipe: FROM scratch, classic-builder
// syntax only, an exec-form HEALTHCHECK through `raftstream health`, the
// ports and the data volume, and RAFTSTREAM_* variables that name flags.
func TestDockerfile(t *testing.T) {
	flags := serverFlags(t)
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string // instructions, continuation lines joined, comments dropped
	cur := ""
	for _, l := range strings.Split(string(b), "\n") {
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		cur += strings.TrimSpace(strings.TrimSuffix(l, "\\")) + " "
		if !strings.HasSuffix(strings.TrimSpace(l), "\\") {
			lines = append(lines, strings.TrimSpace(cur))
			cur = ""
		}
	}
	var from, health, expose, volume, entry string
	for _, l := range lines {
		instr, rest, _ := strings.Cut(l, " ")
		switch strings.ToUpper(instr) {
		case "FROM":
			from = rest
		case "HEALTHCHECK":
			health = rest
		case "EXPOSE":
			expose = rest
		case "VOLUME":
			volume = rest
		case "ENTRYPOINT":
			entry = rest
		case "RUN":
			t.Errorf("RUN %s: a FROM-scratch image has no shell", rest)
		case "ENV":
			for _, kv := range regexp.MustCompile(`(\w+)=`).FindAllStringSubmatch(rest, -1) {
				if f, ok := envFlag(kv[1]); ok {
					if _, known := flags["parseFlags"][f]; !known {
						t.Errorf("ENV %s names no server flag", kv[1])
					}
				}
			}
		}
		if strings.Contains(l, "--mount") || strings.Contains(l, "<<") {
			t.Errorf("%q: BuildKit-only syntax", l)
		}
	}
	if strings.Contains(string(b), "# syntax=") {
		t.Error("# syntax= directive needs BuildKit")
	}
	if from != "scratch" {
		t.Errorf("FROM %q, want scratch (no registry to pull from)", from)
	}
	if entry != `["/raftstream"]` {
		t.Errorf("ENTRYPOINT %s, want [\"/raftstream\"]", entry)
	}
	_, cmd, ok := strings.Cut(health, "CMD ")
	var argv []string
	for _, q := range regexp.MustCompile(`"([^"]*)"`).FindAllStringSubmatch(cmd, -1) {
		argv = append(argv, q[1])
	}
	if !ok || !strings.HasPrefix(strings.TrimSpace(cmd), "[") || len(argv) < 2 || argv[0] != "/raftstream" || argv[1] != "health" {
		t.Errorf("HEALTHCHECK %q: want exec form CMD [\"/raftstream\", \"health\", …]", health)
	} else if hv, errs := parseArgs(argv[2:], flags["health"]); len(errs) > 0 || hv["addr"] != "127.0.0.1:6379" {
		t.Errorf("HEALTHCHECK flags %q: %v (addr %q)", argv[2:], errs, hv["addr"])
	}
	if f := strings.Fields(expose); !slices.Contains(f, "6379") || !slices.Contains(f, "16379") {
		t.Errorf("EXPOSE %q, want 6379 (RESP) and 16379 (bus)", expose)
	}
	if !strings.Contains(volume, "/data") {
		t.Errorf("VOLUME %q, want /data", volume)
	}
}

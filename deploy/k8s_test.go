package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// checkK8s checks the Kubernetes manifests (all documents of the files in
// deploy/k8s) against the server's flags and against each other.
func checkK8s(docs []map[string]any, flags map[string]flagDefs) []error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	services := map[string]map[string]any{}
	var sts map[string]any
	for _, d := range docs {
		switch kind := str(d["kind"]); kind {
		case "Service":
			services[str(m(d, "metadata")["name"])] = d
		case "StatefulSet":
			if sts != nil {
				bad("more than one StatefulSet")
			}
			sts = d
		case "PodDisruptionBudget":
		default:
			bad("unexpected kind %q", kind)
		}
	}
	if sts == nil {
		return append(errs, fmt.Errorf("no StatefulSet"))
	}
	spec := m(sts, "spec")
	podLabels := m(spec, "template", "metadata", "labels")
	if len(podLabels) == 0 {
		bad("StatefulSet: pod template has no labels")
	}
	matches := func(sel map[string]any) bool {
		if len(sel) == 0 {
			return false
		}
		for k, v := range sel {
			if str(podLabels[k]) != str(v) {
				return false
			}
		}
		return true
	}
	if !matches(m(spec, "selector", "matchLabels")) {
		bad("StatefulSet: selector.matchLabels %v does not select the pod template's labels %v", m(spec, "selector", "matchLabels"), podLabels)
	}

	// The headless Service named by serviceName gives pods their DNS names.
	headlessName := str(spec["serviceName"])
	headless, ok := services[headlessName]
	switch {
	case headlessName == "":
		bad("StatefulSet: no serviceName")
	case !ok:
		bad("StatefulSet: serviceName %q names no Service", headlessName)
	default:
		if str(m(headless, "spec")["clusterIP"]) != "None" {
			bad("Service %s: serviceName must be headless (clusterIP: None)", headlessName)
		}
		if str(m(headless, "spec")["publishNotReadyAddresses"]) != "true" {
			bad("Service %s: publishNotReadyAddresses must be true (pods resolve each other before any is ready)", headlessName)
		}
	}
	clients := 0
	for name, svc := range services {
		if !matches(m(svc, "spec", "selector")) {
			bad("Service %s: selector %v does not select the pods", name, m(svc, "spec", "selector"))
		}
		if name != headlessName {
			clients++
		}
	}
	if clients == 0 {
		bad("no client Service besides the headless one")
	}
	replicas, _ := strconv.Atoi(str(spec["replicas"]))
	if replicas < 1 {
		bad("StatefulSet: replicas %q", str(spec["replicas"]))
	}
	if str(spec["podManagementPolicy"]) != "Parallel" {
		bad("StatefulSet: podManagementPolicy must be Parallel (no pod is ready before all have formed the cluster)")
	}

	// The one container: its args, env, ports, probes and volumes.
	containers := list(m(spec, "template", "spec")["containers"])
	if len(containers) != 1 {
		return append(errs, fmt.Errorf("StatefulSet: want 1 container, have %d", len(containers)))
	}
	c := m(containers[0])
	// Expand $(VAR) as the kubelet does: env values may use variables
	// defined before them, args use any; a fieldRef stands for itself.
	env := map[string]string{}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	expand := func(where, s string) string {
		return ref.ReplaceAllStringFunc(s, func(r string) string {
			name := ref.FindStringSubmatch(r)[1]
			v, ok := env[name]
			if !ok {
				bad("%s %q uses $(%s), which the container's env does not define (before it)", where, s, name)
			}
			return v
		})
	}
	for _, e := range list(c["env"]) {
		name := str(m(e)["name"])
		if fp := str(m(e, "valueFrom", "fieldRef")["fieldPath"]); fp != "" {
			env[name] = "{" + fp + "}"
		} else {
			env[name] = expand("env "+name, str(m(e)["value"]))
		}
		if f, ok := envFlag(name); ok {
			if _, known := flags["parseFlags"][f]; !known {
				bad("container env %s names no server flag", name)
			}
		}
	}
	if len(strs(c["command"])) > 0 {
		bad("container sets command; the image's entrypoint is the server, use args")
	}
	var args []string
	for _, a := range strs(c["args"]) {
		args = append(args, expand("arg", a))
	}
	vals, aerrs := parseArgs(args, flags["parseFlags"])
	errs = append(errs, aerrs...)

	ports := map[string]int{} // container port name → number
	for _, p := range list(c["ports"]) {
		n, _ := strconv.Atoi(str(m(p)["containerPort"]))
		ports[str(m(p)["name"])] = n
	}
	respPort, busPort := vals["port"], vals["cluster-port"]
	if respPort == "" || busPort == "" {
		bad("args must set --port and --cluster-port explicitly (have %v)", vals)
	}
	if strconv.Itoa(ports["resp"]) != respPort {
		bad("container port resp = %d, --port = %s", ports["resp"], respPort)
	}
	if strconv.Itoa(ports["bus"]) != busPort {
		bad("container port bus = %d, --cluster-port = %s", ports["bus"], busPort)
	}
	if vals["bind"] != "0.0.0.0" {
		bad("--bind = %q: pods must listen on every interface", vals["bind"])
	}
	if vals["announce-port"] != respPort {
		bad("--announce-port %s differs from --port %s (clients reach pods directly)", vals["announce-port"], respPort)
	}
	if !strings.Contains(vals["announce"], headlessName) {
		bad("--announce %q is not a pod DNS name under %s", vals["announce"], headlessName)
	}
	if bus := vals["cluster-announce-bus"]; !strings.Contains(bus, headlessName) || !strings.HasSuffix(bus, ":"+busPort) {
		bad("--cluster-announce-bus %q is not <pod DNS name>:%s", bus, busPort)
	}
	if vals["bootstrap-expect"] != strconv.Itoa(replicas) {
		bad("--bootstrap-expect %s differs from replicas %d", vals["bootstrap-expect"], replicas)
	}
	var wantJoin []string
	for i := range replicas {
		wantJoin = append(wantJoin, fmt.Sprintf("%s-%d.%s:%s", str(m(sts, "metadata")["name"]), i, headlessName, busPort))
	}
	if vals["join"] != strings.Join(wantJoin, ",") {
		bad("--join %q, want every pod: %q", vals["join"], strings.Join(wantJoin, ","))
	}
	for _, svc := range services {
		for _, p := range list(m(svc, "spec")["ports"]) {
			tp := str(m(p)["targetPort"])
			if _, named := ports[tp]; !named && !slices.Contains([]string{respPort, busPort}, tp) {
				bad("Service %s: targetPort %q is no container port", str(m(svc, "metadata")["name"]), tp)
			}
		}
	}
	for _, probe := range []string{"readinessProbe", "livenessProbe"} {
		cmd := strs(m(c, probe, "exec")["command"])
		if len(cmd) < 2 || cmd[0] != "/raftstream" || cmd[1] != "health" {
			bad("%s: want exec [/raftstream health …], have %q", probe, cmd)
			continue
		}
		hv, herrs := parseArgs(cmd[2:], flags["health"])
		errs = append(errs, herrs...)
		if !strings.HasSuffix(hv["addr"], ":"+respPort) {
			bad("%s: --addr %q is not the RESP port %s", probe, hv["addr"], respPort)
		}
	}

	// Data: a volumeClaimTemplate mounted at --dir.
	claims := map[string]bool{}
	for _, vct := range list(spec["volumeClaimTemplates"]) {
		claims[str(m(vct, "metadata")["name"])] = true
	}
	if len(claims) == 0 {
		bad("StatefulSet: no volumeClaimTemplates")
	}
	mounted := false
	for _, vm := range list(c["volumeMounts"]) {
		if claims[str(m(vm)["name"])] && str(m(vm)["mountPath"]) == vals["dir"] {
			mounted = true
		}
	}
	if !mounted {
		bad("no volumeClaimTemplate is mounted at --dir %q", vals["dir"])
	}
	return errs
}

func k8sDocs(t *testing.T) []map[string]any {
	t.Helper()
	files, err := filepath.Glob("k8s/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/k8s (%v)", err)
	}
	var docs []map[string]any
	for _, f := range files {
		docs = append(docs, readYAML(t, f)...)
	}
	return docs
}

func TestK8sManifests(t *testing.T) {
	flags := serverFlags(t)
	docs := k8sDocs(t)
	kinds := map[string]int{}
	for _, d := range docs {
		kinds[str(d["kind"])]++
	}
	if kinds["StatefulSet"] != 1 || kinds["Service"] != 2 {
		t.Errorf("kinds = %v, want 1 StatefulSet and 2 Services (headless + client)", kinds)
	}
	for _, err := range checkK8s(docs, flags) {
		t.Error(err)
	}
}

// TestK8sCheckCatchesMistakes breaks the manifest in the ways the checks are
// for and expects each to be reported, so a check that silently passes
// everything fails here.
func TestK8sCheckCatchesMistakes(t *testing.T) {
	flags := serverFlags(t)
	b, err := os.ReadFile("k8s/raftstream.yaml")
	if err != nil {
		t.Fatal(err)
	}
	orig := string(b)
	for _, tc := range []struct{ name, old, new, want string }{
		{"unknown flag", "--log-format=json", "--log-fmt=json", `"--log-fmt=json" is not defined`},
		{"serviceName", "serviceName: raftstream-headless", "serviceName: raftstream-peers", `names no Service`},
		{"not headless", "  clusterIP: None", "  clusterIP: 10.0.0.1", "headless"},
		{"resp port", "{name: resp, containerPort: 6379}", "{name: resp, containerPort: 6380}", "container port resp"},
		{"bus port", "--cluster-port=16379", "--cluster-port=16380", "--cluster-port"},
		{"replicas", "replicas: 3", "replicas: 5", "--bootstrap-expect"},
		{"ordered start", "  podManagementPolicy: Parallel", "  podManagementPolicy: OrderedReady", "Parallel"},
		{"no claims", "  volumeClaimTemplates:", "  volumeClaimTemplatez:", "volumeClaimTemplates"},
		{"undefined env", "$(POD_DNS):16379", "$(POD_HOST):16379", "POD_HOST"},
		{"probe flag", "\"2s\"]\n            periodSeconds: 5", "\"2s\", \"--wait\"]\n            periodSeconds: 5", `"--wait" is not defined`},
		{"short join", ",raftstream-2.raftstream-headless:16379", "", "--join"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := strings.Count(orig, tc.old); n != 1 {
				t.Fatalf("manifest contains %q %d times, want once; update the test", tc.old, n)
			}
			docs := decodeYAML(t, tc.name, strings.Replace(orig, tc.old, tc.new, 1))
			errs := checkK8s(docs, flags)
			for _, err := range errs {
				if strings.Contains(err.Error(), tc.want) {
					return
				}
			}
			t.Errorf("no error mentioning %q; got %v", tc.want, errs)
		})
	}
}

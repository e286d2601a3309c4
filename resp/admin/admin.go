package admin

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// Config configures the admin HTTP server.
type Config struct {
	// Pprof mounts net/http/pprof under /debug/pprof/.
	Pprof bool
}

// Sources are what the admin server reports, wired by cmd at start-up.
// Both are called from HTTP handler goroutines, possibly several at once,
// and must not wait on Raft or apply.
type Sources struct {
	// Ready answers /readyz (200 or 503, with the reason as the body) and
	// the raftstream_ready gauge. Required.
	Ready func() (bool, string)
	// Collect write the series of /metrics, in order, into one Scrape per
	// request.
	Collect []func(*Scrape)
}

// Admin serves the admin endpoints of one node.
type Admin struct {
	src Sources
	mux *http.ServeMux
}

// New returns the admin handler reporting src.
func New(cfg Config, src Sources) *Admin {
	a := &Admin{src: src, mux: http.NewServeMux()}
	a.mux.HandleFunc("/metrics", a.serveMetrics)
	a.mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	a.mux.HandleFunc("/readyz", a.serveReady)
	if cfg.Pprof {
		a.mux.HandleFunc("/debug/pprof/", pprof.Index)
		a.mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		a.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		a.mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		a.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return a
}

// ServeHTTP implements http.Handler.
func (a *Admin) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// ListenAndServe serves the admin endpoints on addr until ctx ends. It
// returns once the listener is open (or failed); the server runs in the
// background and is shut down when ctx is done.
func (a *Admin) ListenAndServe(ctx context.Context, addr string) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: a, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	return ln.Addr(), nil
}

func (a *Admin) serveReady(w http.ResponseWriter, r *http.Request) {
	ok, why := a.src.Ready()
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	fmt.Fprintln(w, why)
}

func (a *Admin) serveMetrics(w http.ResponseWriter, r *http.Request) {
	sc := a.collect()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = sc.WriteTo(w)
}

// collect returns a Scrape holding raftstream_ready and every collector's
// series: what /metrics serves.
func (a *Admin) collect() *Scrape {
	sc := NewScrape()
	ready, _ := a.src.Ready()
	v := 0.0
	if ready {
		v = 1
	}
	sc.Gauge("raftstream_ready", "1 when /readyz would answer 200.", v)
	for _, c := range a.src.Collect {
		c(sc)
	}
	return sc
}

package resp

// MetricWriter receives the series the server reports on /metrics (in cmd,
// the admin server's Scrape). Labels are name, value pairs; a histogram is
// its bounds, per-bucket counts (not cumulative), count and sum. Series of
// one family must be written with the same help text. It is called from
// the scraping goroutine only, and must not block.
type MetricWriter interface {
	Gauge(name, help string, v float64, labels ...string)
	Counter(name, help string, v float64, labels ...string)
	Histogram(name, help string, bounds []float64, counts []uint64, count uint64, sum float64, labels ...string)
}

// CollectMetrics writes the client, connection and command series. It
// reads atomics and takes the client-table lock briefly.
func (s *Server) CollectMetrics(w MetricWriter) {
	s.mu.Lock()
	nc := len(s.clients)
	s.mu.Unlock()
	w.Gauge("raftstream_clients_connected", "Client connections open.", float64(nc))
	w.Gauge("raftstream_clients_blocked", "Clients waiting in a blocking command (XREAD/XREADGROUP BLOCK, WAIT, WAITAOF).", float64(s.nBlocked.Load()))
	w.Counter("raftstream_connections_total", "Client connections accepted.", float64(s.stats.connections.Load()))
	const bufHelp = "Client connections closed for passing a buffer limit (client-query-buffer-limit, client-output-buffer-limit)."
	w.Counter("raftstream_client_buffer_limit_disconnections_total", bufHelp, float64(s.buf.queryDrops.Load()), "buffer", "query")
	w.Counter("raftstream_client_buffer_limit_disconnections_total", bufHelp, float64(s.buf.outDrops.Load()), "buffer", "output")
	s.cmdm.collect(w)
}

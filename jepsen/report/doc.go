// Package report presents checker results: a console summary ending with
// the line "N passed, N failed", a self-contained report.html (summary
// table, operation timeline with fault windows shaded, latency and
// throughput plot, anomalies with the operations that show them, links to
// and embedded porcupine visualizations of non-linearizable streams), and
// the exit code a runner returns.
package report

// Package report renders results files (the schema, the writer and the
// loader are e2e/results; SCHEMA.md here documents the file and the
// rendering): it compares two runs (the regression gate) and renders them:
// markdown in the methodology's own table layout and one self-contained HTML
// file with inline SVG charts. WriteRun is a run's last final step, called by
// e2e/framework after the results file is closed; tools/report renders and
// compares archived files.
//
// It imports e2e/results, and e2e/fleet for the outlier sentence: the
// harness records parsed iperf3 results and offload verdicts in results'
// types, and the report reads them back. Only e2e/framework and tools/report
// import it.
//
// Where things are: Set (files read together); the regression comparison
// (latency too: latency_compare.go); the markdown in the seed's layout, the
// HTML, the latency section and chart (latency.go), the timing breakdown;
// WriteFiles and WriteRun (a run's report.md and report.html); fleet.go, the
// fleet section (outliers first, failed offload proof, the per-node heat map,
// the per-node table with drift marks, the drift table, the checks' rounds
// with their start skew; FleetVerdictOf); junit.go (FleetJUnit: the fleet
// verdict as JUnit, one test case per node, written by WriteRun as
// junit-nodes.xml). Each measurement family's sections (markdown and HTML)
// are registered in the family's own file (pps.go, latency.go,
// connections.go, hold.go, aging.go, failover.go) and written in order where
// Markdown and HTML range over them (families.go).
package report

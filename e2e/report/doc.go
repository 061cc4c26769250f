// Package report reads and writes results files (the schema is
// e2e/results; SCHEMA.md here documents it), evaluates threshold rules on
// them, compares two runs (the regression gate), and renders them: markdown
// in the methodology's own table layout and one self-contained HTML file
// with inline SVG charts.
//
// It imports only e2e/results: the harness records parsed iperf3 results and
// offload verdicts in results' types, and the report reads them back.
package report

// Package report renders results files (the schema, the writer and the
// loader are e2e/results; SCHEMA.md here documents the file and the
// rendering): it compares two runs (the regression gate) and renders them:
// markdown in the methodology's own table layout and one self-contained HTML
// file with inline SVG charts. WriteRun is a run's last final step, called by
// e2e/framework after the results file is closed; tools/report renders and
// compares archived files.
//
// It imports only e2e/results: the harness records parsed iperf3 results and
// offload verdicts in results' types, and the report reads them back.
package report

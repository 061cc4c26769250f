package report

import (
	"fmt"
	"strings"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// gather is every element of one of the results' lists across the set's
// files, in file order, by address.
func gather[T any](s *Set, of func(*results.Results) []T) []*T {
	var out []*T
	for _, f := range s.Files {
		l := of(f)
		for i := range l {
			out = append(out, &l[i])
		}
	}
	return out
}

// tableSection is one of the report's profile sections that is a table and
// lines under it (connection scale, bond failover): markdown with its
// heading and intro, or under an HTML heading with its chart.
type tableSection struct {
	heading, intro string
	header         []string
	rows           [][]string
	findings       []string
}

// md writes the section; withHeading false leaves out heading and intro
// (the HTML writes its own).
func (s tableSection) md(b *strings.Builder, withHeading bool) {
	if withHeading {
		b.WriteString("## " + s.heading + "\n\n" + s.intro + "\n\n")
	}
	b.WriteString(mdTable(s.header, s.rows))
	b.WriteString("\n")
	for _, f := range s.findings {
		b.WriteString("- " + f + "\n")
	}
	b.WriteString("\n")
}

// html writes the section's heading, intro, chart ("" = none) and table.
func (s tableSection) html(b *strings.Builder, chart string) {
	fmt.Fprintf(b, "<h2>%s</h2>\n<p class=\"note\">%s</p>\n", s.heading, mdInline(s.intro))
	b.WriteString(chart)
	var md strings.Builder
	s.md(&md, false)
	b.WriteString(mdToHTML(md.String()))
}

package report

import (
	"path/filepath"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// WriteFiles renders s as dir/NAME.md and dir/NAME.html, each written
// atomically, and returns the two paths.
func WriteFiles(dir, name string, s *Set, opt Options) (md, html string, err error) {
	md = filepath.Join(dir, name+".md")
	html = filepath.Join(dir, name+".html")
	if err := results.WriteFileAtomic(md, []byte(Markdown(s, opt)), 0o644); err != nil {
		return "", "", err
	}
	if err := results.WriteFileAtomic(html, HTML(s, opt), 0o644); err != nil {
		return "", "", err
	}
	return md, html, nil
}

// WriteRun renders one run's results as report.md and report.html in dir,
// the run's directory, and a fleet run's verdict as JUnit by node
// (FleetJUnitFile): the last of a run's final steps, after the results
// file is closed.
func WriteRun(dir string, r results.Results) ([]string, error) {
	s, err := NewSet(&r)
	if err != nil {
		return nil, err
	}
	md, html, err := WriteFiles(dir, "report", s, Options{})
	if err != nil {
		return nil, err
	}
	files := []string{md, html}
	if r.Fleet != nil {
		data, err := FleetJUnit(&r)
		if err != nil {
			return files, err
		}
		ju := filepath.Join(dir, FleetJUnitFile)
		if err := results.WriteFileAtomic(ju, data, 0o644); err != nil {
			return files, err
		}
		files = append(files, ju)
	}
	return files, nil
}

package config

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Redacted returns the effective configuration (defaults and environment
// overrides applied) as YAML, safe to log and to keep with the run's
// artifacts. The file holds no credentials by construction (Load rejects
// secret-looking keys); in addition, any flavor extra spec whose key looks
// secret has its value replaced, and the home directory is shown as "~".
func (c *Config) Redacted() string {
	cp := *c
	if len(c.Flavor.ExtraSpecs) > 0 {
		cp.Flavor.ExtraSpecs = make(map[string]string, len(c.Flavor.ExtraSpecs))
		for k, v := range c.Flavor.ExtraSpecs {
			if secretKey.MatchString(k) {
				v = "<redacted>"
			}
			cp.Flavor.ExtraSpecs[k] = v
		}
	}
	out, err := yaml.Marshal(&cp)
	if err != nil {
		return fmt.Sprintf("# config %s: cannot render: %v\n", c.File, err)
	}
	text := string(out)
	if home, err := os.UserHomeDir(); err == nil && len(home) > 1 {
		text = strings.ReplaceAll(text, home+"/", "~/")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# effective configuration from %s\n", c.File)
	paths := make([]string, 0, len(c.env))
	for path := range c.env {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		fmt.Fprintf(&b, "# %s set from $%s\n", path, c.env[path])
	}
	b.WriteString(text)
	return b.String()
}

// String is Redacted.
func (c *Config) String() string { return c.Redacted() }

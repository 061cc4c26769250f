package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mosk-qa/asap2-e2e/e2e/results"
)

// Environment variables that override run knobs of the file (see docs/CONFIG.md).
const (
	// EnvConfig is the harness config file the suites run with (the
	// Makefile's CONFIG=; harness.EnvConfig; dist's launcher sets it).
	EnvConfig       = "ASAP2E2E_CONFIG"
	EnvOutputDir    = "ASAP2E2E_OUTPUT_DIR"    // run.output_dir (relative to the working directory)
	EnvExpectedPath = "ASAP2E2E_EXPECTED_PATH" // run.expected_path
	EnvBuildLabel   = "ASAP2E2E_BUILD_LABEL"   // run.build_label
	EnvBuildID      = "ASAP2E2E_BUILD_ID"      // run.build_id
	EnvKeep         = "ASAP2E2E_KEEP"          // run.keep_topology (1/0, true/false, yes/no)
	// data_port.binding_profile (set, nova): one config, run once with the
	// harness writing the capability and once leaving it to Nova.
	EnvBindingProfile = "ASAP2E2E_DATA_PORT_BINDING_PROFILE"
	// data_port.port_security (1/0, true/false, yes/no): one config, run
	// once in each mode for the side-by-side report.
	EnvPortSecurity = "ASAP2E2E_DATA_PORT_PORT_SECURITY"
	// fleet.mode (isolated, concurrent): one fleet config, run in each
	// traffic mode. Only with a fleet section.
	EnvFleetMode = "ASAP2E2E_FLEET_MODE"
	// fleet.run_group: one value for every shard of a sharded run (a CI
	// job's pipeline id).
	EnvRunGroup = "ASAP2E2E_RUN_GROUP"
	// fleet.shard as i/n (1-based).
	EnvFleetShard = "ASAP2E2E_FLEET_SHARD"
	// fleet.shard's n with a Kubernetes Indexed Job's EnvJobIndex (0-based).
	EnvFleetShards = "ASAP2E2E_FLEET_SHARDS"
	EnvJobIndex    = "JOB_COMPLETION_INDEX"
	EnvCloud       = "OS_CLOUD" // default of cloud.tenant when the file leaves it empty
)

// maxFileSize bounds what Load reads (a config file is a few KiB).
const maxFileSize = 4 << 20

// Option adjusts Load and Validate.
type Option func(*options)

type options struct {
	profiles    []string
	profilesSet bool
	getenv      func(string) string
	// pps.profiles (KnownPPSProfiles)
	ppsProfiles    []string
	ppsProfilesSet bool
}

func newOptions(opts []Option) options {
	o := options{getenv: os.Getenv}
	for _, apply := range opts {
		apply(&o)
	}
	return o
}

// KnownProfiles gives the profile IDs that traffic.profiles and
// thresholds[].profile may name (callers pass the iperf3 catalogue's IDs; the
// config package does not import e2e/iperf3, which keeps the dependency one
// way). Without this option profile IDs are only checked for form: non-empty
// and not repeated.
func KnownProfiles(ids ...string) Option {
	return func(o *options) {
		o.profiles = append([]string(nil), ids...)
		o.profilesSet = true
	}
}

// WithGetenv replaces os.Getenv for the environment overrides (tests).
func WithGetenv(getenv func(string) string) Option {
	return func(o *options) { o.getenv = getenv }
}

// Load reads, decodes, applies defaults and environment overrides, and
// validates the file at path. On any problem it returns a nil Config and a
// Problems error listing every problem found (decoding and validation
// together, so one run shows them all).
func Load(path string, opts ...Option) (*Config, error) {
	o := newOptions(opts)
	data, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	cfg, probs, fatal := decode(path, data)
	if fatal {
		return nil, probs
	}
	probs = append(probs, cfg.applyEnv(o.getenv)...)
	probs = append(probs, cfg.validate(o)...)
	if len(probs) > 0 {
		return nil, probs
	}
	return cfg, nil
}

func readConfigFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("config: %s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("config: %s: larger than %d bytes", path, maxFileSize)
	}
	return data, nil
}

// Parse decodes one config document strictly and applies the defaults. name
// is used in messages and as the base of relative paths in the file. It reads
// no file and no environment variable other than HOME (for "~/" paths) and
// does not validate: call Validate. The error, if any, is Problems.
func Parse(name string, data []byte) (*Config, error) {
	cfg, probs, _ := decode(name, data)
	if len(probs) > 0 {
		return nil, probs
	}
	return cfg, nil
}

// decode returns the decoded config (nil when fatal), the decoding problems,
// and whether they prevent validation (syntax errors, empty file).
func decode(name string, data []byte) (*Config, Problems, bool) {
	fatalf := func(line int, format string, args ...any) (*Config, Problems, bool) {
		return nil, Problems{{File: name, Line: line, Message: fmt.Sprintf(format, args...)}}, true
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return fatalf(0, "empty file: no configuration in it")
		}
		return fatalf(0, "invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return fatalf(extra.Line, "more than one YAML document; put the whole configuration in one")
	} else if !errors.Is(err, io.EOF) {
		return fatalf(0, "invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
			return fatalf(root.Line, "empty file: no configuration in it")
		}
		return fatalf(root.Line, "the top level must be a mapping of sections (run, cloud, image, ...)")
	}

	// The strict decode runs first: it refuses excessive aliasing, which
	// the walker (following aliases) must never meet.
	cfg := &Config{File: name}
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	err := strict.Decode(cfg)
	var terr *yaml.TypeError
	if err != nil && !errors.As(err, &terr) {
		return fatalf(0, "invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	w := walker{file: name, lines: map[int][]string{}}
	w.walk(root, reflect.TypeOf(Config{}), "", 0)
	if w.visits > maxVisits {
		return fatalf(0, "too large: more than %d values after alias expansion", maxVisits)
	}
	if terr != nil {
		// The decoder goes on past unknown keys and type errors, so cfg
		// holds everything else. Unknown keys were reported by the walker
		// with their key path; the type errors get theirs here.
		w.typeErrors(terr.Errors)
	}
	cfg.File = name
	cfg.bad = w.bad
	cfg.set = w.set
	cfg.applyDefaults()
	return cfg, w.probs, false
}

// secretKey matches key names that look like credentials.
var secretKey = regexp.MustCompile(`(?i)pass(word|wd|phrase)?|token|secret|credential|api[_-]?key|auth`)

// renamedKeys are keys a release renamed: the old one is refused with the
// new name, so a config written for an older harness says what to write
// instead of only "unknown key".
var renamedKeys = map[string]struct{ key, why string }{
	"fleet.concurrency": {"fleet.cloud_parallel", "it bounds the pairs provisioned and torn down at once; fleet.mode says whether the pairs' traffic runs concurrently"},
}

// walker checks the YAML tree against the Config type: unknown keys (with the
// line and key path), secret-looking keys, non-integral numbers for integer
// keys. It records the key path of every line for the type errors of the
// decoder.
type walker struct {
	file  string
	probs Problems
	lines map[int][]string
	bad   map[string]bool
	set   map[string]bool // every key path present in the file
	// visits counts nodes walked (aliases expanded), bounded by maxVisits.
	visits int
}

const maxVisits = 200000

func (w *walker) add(line int, path, format string, args ...any) {
	w.probs = append(w.probs, Problem{File: w.file, Line: line, Path: path, Message: fmt.Sprintf(format, args...)})
	w.markBad(path)
}

func (w *walker) markBad(path string) {
	if w.bad == nil {
		w.bad = map[string]bool{}
	}
	w.bad[path] = true
}

const maxDepth = 32

var durationType = reflect.TypeOf(time.Duration(0))

func (w *walker) walk(n *yaml.Node, t reflect.Type, path string, depth int) {
	if n == nil || depth > maxDepth {
		return
	}
	if w.visits++; w.visits > maxVisits {
		return
	}
	if n.Kind == yaml.AliasNode {
		w.walk(n.Alias, t, path, depth+1)
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return
	}
	w.lines[n.Line] = appendUnique(w.lines[n.Line], path)
	if w.set == nil {
		w.set = map[string]bool{}
	}
	w.set[path] = true
	switch t.Kind() {
	case reflect.Struct:
		if t == durationType || n.Kind != yaml.MappingNode {
			return
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.ShortTag() == "!!merge" {
				w.walkMerge(v, t, path, depth+1)
				continue
			}
			key := k.Value
			sub := joinPath(path, key)
			f, ok := fields[key]
			if !ok {
				if to, ok := renamedKeys[sub]; ok {
					w.add(k.Line, sub, "was renamed: write %s (%s)", to.key, to.why)
				} else if secretKey.MatchString(key) {
					w.add(k.Line, sub, "secrets do not belong in the harness config: put credentials in clouds.yaml / secure.yaml (or OS_* variables) and name the entry in cloud.tenant / cloud.admin")
				} else {
					w.add(k.Line, sub, "unknown key (known keys here: %s)", strings.Join(sortedKeys(fields), ", "))
				}
				continue
			}
			w.lines[k.Line] = appendUnique(w.lines[k.Line], sub)
			w.walk(v, f.Type, sub, depth+1)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.ShortTag() == "!!merge" {
				w.walkMerge(v, t, path, depth+1)
				continue
			}
			sub := joinMapKey(path, k.Value)
			if secretKey.MatchString(k.Value) && t.Elem().Kind() == reflect.String {
				w.add(k.Line, sub, "secrets do not belong in the harness config: put credentials in clouds.yaml / secure.yaml (or OS_* variables)")
				continue
			}
			w.lines[k.Line] = appendUnique(w.lines[k.Line], sub)
			w.walk(v, t.Elem(), sub, depth+1)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, item := range n.Content {
			w.walk(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), depth+1)
		}
	case reflect.Int, reflect.Int64:
		if t != durationType && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!float" {
			if f, err := strconv.ParseFloat(n.Value, 64); err != nil || f != float64(int64(f)) {
				w.add(n.Line, path, "must be a whole number, got %s", n.Value)
			}
		}
	}
}

func (w *walker) walkMerge(v *yaml.Node, t reflect.Type, path string, depth int) {
	if v.Kind == yaml.SequenceNode {
		for _, m := range v.Content {
			w.walk(m, t, path, depth)
		}
		return
	}
	w.walk(v, t, path, depth)
}

var terrLine = regexp.MustCompile(`^line (\d+): (.*)$`)

// typeErrors turns the decoder's "line N: cannot unmarshal ..." messages into
// problems with the key path of that line.
func (w *walker) typeErrors(msgs []string) {
	for _, m := range msgs {
		if strings.Contains(m, " not found in type ") {
			continue // reported by the walker with its key path
		}
		line := 0
		msg := m
		if g := terrLine.FindStringSubmatch(m); g != nil {
			line, _ = strconv.Atoi(g[1])
			msg = g[2]
		}
		if strings.HasSuffix(msg, "into time.Duration") {
			msg += ` (durations are Go durations such as "30s", "2m", "500ms")`
		}
		paths := w.lines[line]
		path := strings.Join(paths, ", ")
		w.probs = append(w.probs, Problem{File: w.file, Line: line, Path: path, Message: msg})
		for _, p := range paths {
			w.markBad(p)
		}
	}
}

func yamlFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name := strings.Split(tag, ",")[0]
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f
	}
	return out
}

func sortedKeys(m map[string]reflect.StructField) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// joinMapKey appends a map key: dotted when it is a plain word, bracketed
// and quoted otherwise (hypervisor names often contain dots).
func joinMapKey(path, key string) string {
	if plainKey.MatchString(key) {
		return joinPath(path, key)
	}
	return fmt.Sprintf("%s[%q]", path, key)
}

// resolvePath makes a path from the file absolute: "~/" is the home
// directory, a relative path is relative to the directory of the file.
func resolvePath(file, p string) string {
	if p == "" {
		return ""
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
		return p
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(filepath.Dir(file), p)
}

// applyEnv applies the environment overrides of run knobs and returns
// problems with their values.
func (c *Config) applyEnv(getenv func(string) string) Problems {
	var probs Problems
	if c.env == nil {
		c.env = map[string]string{}
	}
	if v := getenv(EnvOutputDir); v != "" {
		if abs, err := filepath.Abs(v); err == nil {
			v = abs
		}
		c.Run.OutputDir = v
		c.env["run.output_dir"] = EnvOutputDir
	}
	if v := getenv(EnvExpectedPath); v != "" {
		c.Run.ExpectedPath = results.Path(v)
		c.env["run.expected_path"] = EnvExpectedPath
	}
	if v := getenv(EnvBuildLabel); v != "" {
		c.Run.BuildLabel = v
		c.env["run.build_label"] = EnvBuildLabel
	}
	if v := getenv(EnvBuildID); v != "" {
		c.Run.BuildID = v
		c.env["run.build_id"] = EnvBuildID
	}
	if v := getenv(EnvBindingProfile); v != "" {
		c.DataPort.BindingProfile = BindingProfile(v)
		c.env["data_port.binding_profile"] = EnvBindingProfile
	}
	for _, b := range []struct {
		env, path string
		dst       *bool
	}{
		{EnvKeep, "run.keep_topology", &c.Run.KeepTopology},
		{EnvPortSecurity, "data_port.port_security", &c.DataPort.PortSecurity},
	} {
		v := getenv(b.env)
		if v == "" {
			continue
		}
		c.env[b.path] = b.env
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "1", "true", "yes", "on":
			*b.dst = true
		case "0", "false", "no", "off":
			*b.dst = false
		default:
			probs = append(probs, Problem{File: c.File, Path: b.path + " (from $" + b.env + ")",
				Message: "must be one of 1, 0, true, false, yes, no", Value: formatValue(v), HasValue: true})
		}
	}
	if v := getenv(EnvFleetMode); v != "" {
		if c.Fleet == nil {
			probs = append(probs, Problem{File: c.File, Path: "fleet.mode (from $" + EnvFleetMode + ")",
				Message: "needs a fleet section in the file (the run is a single pair)", Value: formatValue(v), HasValue: true})
		} else {
			c.Fleet.Mode = v
			c.env["fleet.mode"] = EnvFleetMode
		}
	}
	probs = append(probs, c.applyFleetEnv(getenv)...)
	if c.Cloud.Tenant == "" {
		if v := getenv(EnvCloud); v != "" {
			c.Cloud.Tenant = v
			c.env["cloud.tenant"] = EnvCloud
		}
	}
	return probs
}

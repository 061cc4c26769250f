package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/mosk-qa/asap2-e2e/tools/internal/cli/clitest"
)

const testVersion = "v0.0.0-20261205234954-09f1769abcde"

var commitTime = time.Date(2026, 12, 5, 23, 49, 54, 0, time.UTC)

// testDist is a small dist/ (tools/dist.sh's shape) and a CA bundle.
func testDist(t *testing.T) (dist, ca string) {
	t.Helper()
	dist = filepath.Join(t.TempDir(), "dist")
	for name, f := range map[string]struct {
		data string
		mode os.FileMode
	}{
		"bin/asap2-e2e":      {"launcher", 0o755},
		"bin/budget":         {"budget", 0o755},
		"suites/perf.test":   {"perf suite", 0o755},
		"examples/mosk.yaml": {"run: {}\n", 0o600},
		"VERSION": {"version=" + testVersion + "\nrevision=09f1769abcdef0123456789abcdef0123456789a\nmodified=false\n" +
			"time=2026-12-05T23:49:54Z\ngoos=linux\ngoarch=amd64\ngo=go1.26.8\n", 0o644},
	} {
		p := filepath.Join(dist, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.data), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	ca = filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dist, ca
}

func build(t *testing.T, dist, ca string) Result {
	t.Helper()
	v, err := ReadVersion(dist)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Write(Input{Dist: dist, CACerts: ca, Version: v}, filepath.Join(t.TempDir(), "oci"), "")
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The same dist gives the same digest whatever its files' times, owners'
// umask or when it is built; another byte in a binary gives another.
func TestSameInputSameDigest(t *testing.T) {
	dist, ca := testDist(t)
	first := build(t, dist, ca)
	past := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := filepath.Walk(dist, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, past, past)
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dist, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	again := build(t, dist, ca)
	if again.Digest != first.Digest {
		t.Fatalf("the same dist with other mtimes and modes: %s, then %s", first.Digest, again.Digest)
	}
	if err := os.WriteFile(filepath.Join(dist, "bin/budget"), []byte("budget2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if other := build(t, dist, ca); other.Digest == first.Digest {
		t.Fatalf("a changed binary kept the digest %s", first.Digest)
	}
}

// The layout holds one image, tagged with the version in index.json and
// annotated with version and revision; its config runs the launcher as the
// non-root user; its one layer holds dist/, the CA bundle, passwd, /tmp.
func TestTheImage(t *testing.T) {
	dist, ca := testDist(t)
	v, err := ReadVersion(dist)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "oci")
	archive := filepath.Join(t.TempDir(), "asap2-e2e.tar")
	res, err := Write(Input{Dist: dist, CACerts: ca, Version: v}, dir, archive)
	if err != nil {
		t.Fatal(err)
	}
	if res.Tag != "asap2-e2e:"+testVersion {
		t.Errorf("tag %q", res.Tag)
	}

	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations[AnnotationRefName] != testVersion || im.Manifests[0].Digest != res.Digest {
		t.Fatalf("index.json: %+v, want one manifest %s named %s", im.Manifests, res.Digest, testVersion)
	}
	img, err := idx.Image(res.Digest)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
		t.Errorf("manifest: %s, config %s, layers %+v: want an OCI image of one layer", m.MediaType, m.Config.MediaType, m.Layers)
	}
	for k, want := range map[string]string{AnnotationVersion: testVersion, AnnotationRevision: "09f1769abcdef0123456789abcdef0123456789a",
		AnnotationCreated: "2026-12-05T23:49:54Z"} {
		if m.Annotations[k] != want {
			t.Errorf("manifest annotation %s = %q, want %q", k, m.Annotations[k], want)
		}
	}
	if res.Size != m.Config.Size+m.Layers[0].Size || res.Unpacked <= 0 {
		t.Errorf("size %d, unpacked %d; config %d + layer %d", res.Size, res.Unpacked, m.Config.Size, m.Layers[0].Size)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != "65532:65532" || len(c.Entrypoint) != 1 || c.Entrypoint[0] != "/opt/asap2-e2e/bin/asap2-e2e" || c.WorkingDir != Home ||
		cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Time.Equal(commitTime) || c.Labels[AnnotationRevision] == "" {
		t.Errorf("config: %+v (os %s, arch %s, created %s)", c, cf.OS, cf.Architecture, cf.Created)
	}

	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	u, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	files := map[string]*tar.Header{}
	content := map[string]string{}
	tr := tar.NewReader(u)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(commitTime) {
			t.Errorf("%s is dated %s, not the commit's time", h.Name, h.ModTime)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name], content[h.Name] = h, string(b)
		names = append(names, h.Name)
	}
	for name, want := range map[string]struct {
		mode int64
		uid  int
		text string
	}{
		"tmp/":                              {0o1777, 0, ""},
		"home/asap2/":                       {0o755, UID, ""},
		"etc/passwd":                        {0o644, 0, "asap2:x:65532:65532:asap2-e2e:/home/asap2:/sbin/nologin\n"},
		"etc/group":                         {0o644, 0, "asap2:x:65532:\n"},
		"etc/ssl/certs/ca-certificates.crt": {0o644, 0, "BEGIN CERTIFICATE"},
		"opt/asap2-e2e/bin/asap2-e2e":       {0o755, 0, "launcher"},
		"opt/asap2-e2e/suites/perf.test":    {0o755, 0, "perf suite"},
		"opt/asap2-e2e/examples/mosk.yaml":  {0o644, 0, "run: {}"},
		"opt/asap2-e2e/VERSION":             {0o644, 0, "version=" + testVersion},
		"opt/asap2-e2e/examples/":           {0o755, 0, ""},
	} {
		h := files[name]
		if h == nil {
			t.Errorf("the layer has no %s (it has %q)", name, names)
			continue
		}
		if h.Mode != want.mode || h.Uid != want.uid || !strings.Contains(content[name], want.text) {
			t.Errorf("%s: mode %o uid %d content %q; want %o, %d, with %q", name, h.Mode, h.Uid, content[name], want.mode, want.uid, want.text)
		}
	}
	seen := map[string]bool{}
	for _, n := range names {
		if parent := filepath.Dir(strings.TrimSuffix(n, "/")); parent != "." && !seen[parent+"/"] {
			t.Errorf("%s comes before its directory %s/", n, parent)
		}
		seen[n] = true
	}

	// The docker archive holds the same image, tagged.
	tag, err := name.NewTag("asap2-e2e:" + testVersion)
	if err != nil {
		t.Fatal(err)
	}
	fromTar, err := tarball.ImageFromPath(archive, &tag)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.ConfigName()
	if got, err := fromTar.ConfigName(); err != nil || got != want {
		t.Errorf("the docker archive's config %s (%v), the layout's %s", got, err, want)
	}
}

func TestRefuses(t *testing.T) {
	dist, ca := testDist(t)
	noPEM := filepath.Join(t.TempDir(), "empty.crt")
	if err := os.WriteFile(noPEM, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := ReadVersion(dist)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(Input{Dist: dist, CACerts: noPEM, Version: v}, filepath.Join(t.TempDir(), "oci"), ""); err == nil || !strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Errorf("an empty CA bundle: %v", err)
	}
	if err := os.Symlink("bin/budget", filepath.Join(dist, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(Input{Dist: dist, CACerts: ca, Version: v}, filepath.Join(t.TempDir(), "oci"), ""); err == nil || !strings.Contains(err.Error(), "neither a file nor a directory") {
		t.Errorf("a symlink in dist: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dist, "VERSION"), []byte("version=unknown\nrevision=unknown\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadVersion(dist); err == nil || !strings.Contains(err.Error(), "no time, goos, goarch") {
		t.Errorf("a VERSION without time: %v", err)
	}
	if _, err := Tag("v1+modified"); err == nil {
		t.Error("a tag with + was taken")
	}
}

func TestCommand(t *testing.T) {
	clitest.HelpConvention(t, run)
	dist, ca := testDist(t)
	out := filepath.Join(t.TempDir(), "not", "yet", "oci") // made as make image's out/ is
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-dist", dist, "-ca-certs", ca, "-o", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"image asap2-e2e:" + testVersion, "digest sha256:", "MiB: config and compressed layer", "OCI layout " + out} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output %q has no %q", stdout.String(), want)
		}
	}
	var index struct {
		Manifests []struct{ Annotations map[string]string }
	}
	data, err := os.ReadFile(filepath.Join(out, "index.json"))
	if err != nil || json.Unmarshal(data, &index) != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v %s", err, data)
	}
	if code := run([]string{"-dist", dist}, &stdout, &stderr); code != 2 {
		t.Errorf("without -o: exit %d", code)
	}
}

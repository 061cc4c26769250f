package main

import (
	"archive/tar"
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's names: deploy/'s manifests name Repository, run as UID, and
// find the launcher at Entrypoint (deploy's test holds them to these).
const (
	Repository = "asap2-e2e"
	UID        = 65532 // the non-root user (distroless' "nonroot" number)
	UserName   = "asap2"
	Home       = "/home/asap2"
	Prefix     = "/opt/asap2-e2e" // dist/ goes here
	Entrypoint = Prefix + "/bin/asap2-e2e"
	CACerts    = "/etc/ssl/certs/ca-certificates.crt" // where Go's crypto/x509 looks first on Linux
)

// OCI annotation keys (image-spec annotations.md).
const (
	AnnotationVersion  = "org.opencontainers.image.version"
	AnnotationRevision = "org.opencontainers.image.revision"
	AnnotationCreated  = "org.opencontainers.image.created"
	AnnotationTitle    = "org.opencontainers.image.title"
	AnnotationRefName  = "org.opencontainers.image.ref.name"
)

// Version is dist/VERSION (tools/dist.sh writes it).
type Version struct {
	Version, Revision, GOOS, GOARCH string
	Modified                        bool
	Time                            time.Time // the commit's
}

// ReadVersion reads dir/VERSION: key=value lines; version, revision, time,
// goos and goarch are required.
func ReadVersion(dir string) (Version, error) {
	p := filepath.Join(dir, "VERSION")
	f, err := os.Open(p)
	if err != nil {
		return Version{}, fmt.Errorf("%w (make dist writes it)", err)
	}
	defer f.Close()
	kv := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			kv[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		return Version{}, fmt.Errorf("%s: %w", p, err)
	}
	var missing []string
	for _, k := range []string{"version", "revision", "time", "goos", "goarch"} {
		if kv[k] == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return Version{}, fmt.Errorf("%s: no %s (a dist built outside a git checkout has no version to tag)", p, strings.Join(missing, ", "))
	}
	t, err := time.Parse(time.RFC3339, kv["time"])
	if err != nil {
		return Version{}, fmt.Errorf("%s: time: %w", p, err)
	}
	return Version{Version: kv["version"], Revision: kv["revision"], Modified: kv["modified"] == "true",
		GOOS: kv["goos"], GOARCH: kv["goarch"], Time: t.UTC()}, nil
}

// Tag is the image's tag for a harness version: Repository:version.
func Tag(version string) (name.Tag, error) {
	return name.NewTag(Repository + ":" + version)
}

// Input is what Build makes an image of.
type Input struct {
	Dist    string // make dist's output
	CACerts string // the CA bundle to carry (PEM)
	Version Version
}

// Build is the image of in: FROM scratch, one layer holding dist/ at
// Prefix, the CA bundle, /etc/passwd and /etc/group with the non-root
// user, /etc/nsswitch.conf, /tmp and the user's home, every entry owned by
// root (the home and /tmp excepted) and dated the commit's time, so the
// same input gives the same digest. The layer is written to a temporary
// file in tmpDir first; its size is the int64 returned (the image unpacked).
func Build(in Input, tmpDir string) (v1.Image, int64, error) {
	tag, err := Tag(in.Version.Version)
	if err != nil {
		return nil, 0, err
	}
	layerFile, err := os.CreateTemp(tmpDir, "asap2-e2e-layer-*.tar")
	if err != nil {
		return nil, 0, err
	}
	defer layerFile.Close()
	if err := writeLayer(layerFile, in); err != nil {
		return nil, 0, fmt.Errorf("the layer: %w", err)
	}
	unpacked, err := layerFile.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, 0, err
	}
	if err := layerFile.Close(); err != nil {
		return nil, 0, err
	}
	layer, err := tarball.LayerFromFile(layerFile.Name(), tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, 0, err
	}
	created := v1.Time{Time: in.Version.Time}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{Created: created, CreatedBy: "tools/image: dist/ " + in.Version.Version,
		Comment: "make dist, FROM scratch"}})
	if err != nil {
		return nil, 0, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, 0, err
	}
	cf = cf.DeepCopy()
	labels := map[string]string{AnnotationVersion: in.Version.Version, AnnotationRevision: in.Version.Revision,
		AnnotationCreated: in.Version.Time.Format(time.RFC3339), AnnotationTitle: Repository}
	cf.OS, cf.Architecture, cf.Created = in.Version.GOOS, in.Version.GOARCH, created
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, UID),
		Env:        []string{"PATH=" + Prefix + "/bin", "HOME=" + Home, "SSL_CERT_FILE=" + CACerts},
		Entrypoint: []string{Entrypoint},
		Cmd:        []string{"--help"},
		WorkingDir: Home,
		Labels:     labels,
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, 0, err
	}
	ann := map[string]string{AnnotationRefName: tag.TagStr()}
	for k, v := range labels {
		ann[k] = v
	}
	return mutate.Annotations(img, ann).(v1.Image), unpacked, nil
}

// entry is one file of the layer.
type entry struct {
	hdr  tar.Header
	from string // a file to copy, or
	data []byte // its content
}

// writeLayer writes the layer's tar: every directory before its contents,
// sorted by name, fixed owners, modes and times.
func writeLayer(w io.Writer, in Input) error {
	mtime := in.Version.Time
	dir := func(name string, mode int64, uid int) entry {
		return entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: mtime}}
	}
	file := func(name string, mode int64, data []byte) entry {
		return entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: mtime}, data: data}
	}
	ca, err := os.ReadFile(in.CACerts)
	if err != nil {
		return fmt.Errorf("the CA bundle: %w", err)
	}
	if !strings.Contains(string(ca), "BEGIN CERTIFICATE") {
		return fmt.Errorf("the CA bundle %s holds no PEM certificate", in.CACerts)
	}
	entries := []entry{
		dir("etc", 0o755, 0), dir("etc/ssl", 0o755, 0), dir("etc/ssl/certs", 0o755, 0),
		file("etc/ssl/certs/ca-certificates.crt", 0o644, ca),
		file("etc/passwd", 0o644, fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:asap2-e2e:%s:/sbin/nologin\n", UserName, UID, UID, Home)),
		file("etc/group", 0o644, fmt.Appendf(nil, "root:x:0:\n%s:x:%d:\n", UserName, UID)),
		file("etc/nsswitch.conf", 0o644, []byte("hosts: files dns\n")),
		dir("tmp", 0o1777, 0),
		dir("home", 0o755, 0), dir(strings.TrimPrefix(Home, "/"), 0o755, UID),
	}
	prefix := strings.TrimPrefix(Prefix, "/")
	for p := path.Dir(prefix); p != "."; p = path.Dir(p) {
		entries = append(entries, dir(p, 0o755, 0))
	}
	err = filepath.WalkDir(in.Dist, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(in.Dist, p)
		if err != nil {
			return err
		}
		target := path.Join(prefix, filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			entries = append(entries, dir(target, 0o755, 0))
		case info.Mode().IsRegular():
			mode := int64(0o644)
			if info.Mode()&0o111 != 0 {
				mode = 0o755
			}
			entries = append(entries, entry{hdr: tar.Header{Typeflag: tar.TypeReg, Name: target, Mode: mode, Size: info.Size(), ModTime: mtime}, from: p})
		default:
			return fmt.Errorf("%s: %s is neither a file nor a directory", p, info.Mode().Type())
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.hdr.Name, b.hdr.Name) })
	tw := tar.NewWriter(w)
	for _, e := range entries {
		h := e.hdr
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(&h); err != nil {
			return err
		}
		switch {
		case e.from != "":
			if err := copyFile(tw, e.from, h.Size); err != nil {
				return err
			}
		case e.data != nil:
			if _, err := tw.Write(e.data); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// copyFile copies path's size bytes (its size when walked) into w.
func copyFile(w io.Writer, path string, size int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := io.Copy(w, io.LimitReader(f, size))
	if err == nil && n != size {
		err = fmt.Errorf("%s changed while the layer was written (%d bytes, then %d)", path, size, n)
	}
	return err
}

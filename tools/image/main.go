// Command image builds the OCI image of make dist's output without a
// container daemon (go-containerregistry): FROM scratch, one layer with
// dist/ at /opt/asap2-e2e, the CA bundle, /etc/passwd and /etc/group with a
// non-root user (65532, asap2), /tmp; the launcher as entrypoint; tagged
// asap2-e2e:<harness version> with the version and commit as OCI
// annotations and labels. Every entry is dated the commit's time, so the same
// dist gives the same digest.
//
//	go run ./tools/image -o out/image                       # an OCI image layout
//	go run ./tools/image -o out/image -docker-archive out/asap2-e2e.tar
//
// It prints the tag, the manifest's digest and the image's size (config and
// compressed layer: what a registry stores and a node pulls). Push or load
// it with any OCI tool, e.g. skopeo copy oci:out/image:TAG docker://REGISTRY/asap2-e2e:TAG,
// or podman load -i out/asap2-e2e.tar (docs/DEPLOY.md).
//
// Exit code: 0, 1 failure, 2 usage.
//
// Build writes the one layer sorted, with fixed owners and modes, plus
// nsswitch.conf, and the config's user, entrypoint, env and labels; the
// manifest's annotations are version, revision and created. Write writes the
// OCI layout (with ref.name) and the docker archive; ReadVersion reads
// dist/VERSION; Tag is the image's tag.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/mosk-qa/asap2-e2e/tools/internal/cli"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	dist := fs.String("dist", "dist", "make dist's output")
	ca := fs.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle the image carries (PEM)")
	out := fs.String("o", "", "write the OCI image layout into this directory (replaced)")
	archive := fs.String("docker-archive", "", "also write a docker-archive tar (docker load, podman load)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: image [-dist DIR] [-ca-certs FILE] -o DIR [-docker-archive FILE]")
		fs.PrintDefaults()
	}
	if done, code := cli.Parse(fs, args, stdout, stderr); done {
		return code
	}
	if *out == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "image: want -o DIR and no arguments")
		fs.Usage()
		return 2
	}
	v, err := ReadVersion(*dist)
	if err != nil {
		fmt.Fprintf(stderr, "image: %v\n", err)
		return 1
	}
	res, err := Write(Input{Dist: *dist, CACerts: *ca, Version: v}, *out, *archive)
	if err != nil {
		fmt.Fprintf(stderr, "image: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "image %s\ndigest %s\nsize %d bytes (%.1f MiB: config and compressed layer), %d bytes unpacked\nOCI layout %s\n",
		res.Tag, res.Digest, res.Size, float64(res.Size)/(1<<20), res.Unpacked, *out)
	if *archive != "" {
		fmt.Fprintf(stdout, "docker archive %s\n", *archive)
	}
	return 0
}

// Result is what Write made.
type Result struct {
	Tag      string
	Digest   v1.Hash
	Size     int64 // config + compressed layers
	Unpacked int64 // the layers' uncompressed tar bytes
}

// Write builds the image of in and writes it as an OCI image layout into
// dir (a new one, in place of what was there), with the tag as the
// manifest's org.opencontainers.image.ref.name in index.json, and, when
// archive is set, as a docker-archive tar.
func Write(in Input, dir, archive string) (Result, error) {
	for _, d := range []string{dir, archive} {
		if d == "" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Clean(d)), 0o755); err != nil {
			return Result{}, err
		}
	}
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(dir)), ".image-*")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(tmp)
	img, unpacked, err := Build(in, tmp)
	if err != nil {
		return Result{}, err
	}
	tag, err := Tag(in.Version.Version)
	if err != nil {
		return Result{}, err
	}
	res := Result{Tag: Repository + ":" + tag.TagStr(), Unpacked: unpacked}
	if res.Digest, err = img.Digest(); err != nil {
		return Result{}, err
	}
	m, err := img.Manifest()
	if err != nil {
		return Result{}, err
	}
	res.Size = m.Config.Size
	for _, l := range m.Layers {
		res.Size += l.Size
	}
	staged := filepath.Join(tmp, "oci")
	p, err := layout.Write(staged, empty.Index)
	if err != nil {
		return Result{}, err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{AnnotationRefName: tag.TagStr()})); err != nil {
		return Result{}, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return Result{}, err
	}
	if err := os.Rename(staged, dir); err != nil {
		return Result{}, err
	}
	if archive != "" {
		if err := tarball.WriteToFile(archive, tag, img); err != nil {
			return Result{}, fmt.Errorf("the docker archive: %w", err)
		}
	}
	return res, nil
}

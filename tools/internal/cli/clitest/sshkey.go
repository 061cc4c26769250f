package clitest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"
)

// SSHKey writes a throw-away ed25519 key pair as dir/name (OpenSSH PEM)
// and dir/name.pub (authorized_keys line), the files a harness config's
// ssh.private_key and ssh.public_key name, and returns the public key's
// line. For the tests of the commands that load a config.
func SSHKey(t testing.TB, dir, name string) string {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "asap2-e2e test key")
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	line := ssh.MarshalAuthorizedKey(sshPub)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for f, data := range map[string][]byte{name: pem.EncodeToMemory(block), name + ".pub": line} {
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return string(line)
}

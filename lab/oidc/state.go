package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// The files of the issuer's directory.
const (
	caCertFile  = "ca.crt"      // the CA the API server and the kubeconfig trust (written out)
	caKeyFile   = "ca.key"      // its key, 0600
	signingFile = "signing.key" // the id-tokens' RSA key, 0600
)

// caValidity: the CA outlives any lab (lab/down.sh removes the directory).
const caValidity = 30 * 24 * time.Hour

// state is the issuer's directory: its CA and signing key, made once and
// read again at each start.
type state struct {
	caFile  string
	ca      *x509.Certificate
	caKey   crypto.Signer
	signing *rsa.PrivateKey
}

// loadState reads dir's CA and signing key, making (and writing) each that
// is missing; dir is made 0700 when missing.
func loadState(dir string) (*state, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	st := &state{caFile: filepath.Join(dir, caCertFile)}
	signing, err := loadOrMake(filepath.Join(dir, signingFile), func() (crypto.Signer, error) { return rsa.GenerateKey(rand.Reader, 2048) })
	if err != nil {
		return nil, err
	}
	var ok bool
	if st.signing, ok = signing.(*rsa.PrivateKey); !ok {
		return nil, fmt.Errorf("%s: not an RSA key (RS256 needs one)", filepath.Join(dir, signingFile))
	}
	keyPath := filepath.Join(dir, caKeyFile)
	_, keyErr := os.Stat(keyPath)
	certPEM, certErr := os.ReadFile(st.caFile)
	if (keyErr == nil) != (certErr == nil) {
		return nil, fmt.Errorf("%s: %s and %s go together: remove both to make a new CA", dir, caCertFile, caKeyFile)
	}
	if st.caKey, err = loadOrMake(keyPath, func() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }); err != nil {
		return nil, err
	}
	if certErr != nil {
		if certPEM, err = makeCA(st.caKey); err != nil {
			return nil, err
		}
		if err := os.WriteFile(st.caFile, certPEM, 0o644); err != nil {
			return nil, err
		}
	}
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s: no PEM certificate", st.caFile)
	}
	if st.ca, err = x509.ParseCertificate(block.Bytes); err != nil {
		return nil, fmt.Errorf("%s: %w", st.caFile, err)
	}
	return st, nil
}

// loadOrMake reads a PKCS#8 PEM private key from path, or makes one and
// writes it there 0600.
func loadOrMake(path string, make func() (crypto.Signer, error)) (crypto.Signer, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		key, err := make()
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, err
		}
		return key, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	}
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s: no PEM \"PRIVATE KEY\" (PKCS#8)", path)
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: %T is no signing key", path, key)
	}
	return signer, nil
}

func serial() (*big.Int, error) { return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)) }

// makeCA is a self-signed CA certificate of key, PEM.
func makeCA(key crypto.Signer) ([]byte, error) {
	sn, err := serial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn, Subject: pkix.Name{CommonName: "asap2lab-oidc-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(caValidity),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// servingCert is a certificate for ip signed by the CA, with a key that
// lives in memory only.
func (st *state) servingCert(ip net.IP) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	sn, err := serial()
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: sn, Subject: pkix.Name{CommonName: "asap2lab-oidc"},
		NotBefore: now.Add(-time.Hour), NotAfter: st.ca.NotAfter,
		IPAddresses: []net.IP{ip},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, st.ca, &key.PublicKey, st.caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

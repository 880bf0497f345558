// signer — the client side of kubehsm's external signer, as the design
// describes it: a crypto.Signer whose Sign execs `kubehsm sign '<json>'`
// (external-signer.authentication.k8s.io/v1alpha1).  It fetches the
// certificate with a CertificateRequest, then completes a real
// client-authenticated TLS handshake with Go's crypto/tls, which calls Sign
// with the handshake digest and its SignerOpts (*rsa.PSSOptions for RSA
// keys, crypto.Hash for ECDSA).  Standard library only.
//
//	signer -kubehsm PATH -ca CA.pem -url https://127.0.0.1:PORT/kh-whoami -tls 1.3
//
// Prints "tls=1.3 status=200 signs=N opts=TYPE body=BODY" and exits 0 on success.
package main

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"time"
)

const apiVersion = "external-signer.authentication.k8s.io/v1alpha1"

type kubehsmSigner struct {
	bin     string
	args    []string
	cert    *x509.Certificate
	signs   int
	optsTyp string
}

func (s *kubehsmSigner) call(req map[string]any) (map[string]any, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	argv := append(append([]string{"sign"}, s.args...), string(b))
	cmd := exec.Command(s.bin, argv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubehsm sign: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var resp map[string]any
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("kubehsm sign: bad response %q: %v", out, err)
	}
	if resp["apiVersion"] != apiVersion {
		return nil, fmt.Errorf("kubehsm sign: unexpected apiVersion in %q", out)
	}
	return resp, nil
}

func (s *kubehsmSigner) fetchCertificate() error {
	resp, err := s.call(map[string]any{
		"apiVersion":    apiVersion,
		"kind":          "CertificateRequest",
		"configuration": map[string]string{},
	})
	if err != nil {
		return err
	}
	if resp["kind"] != "CertificateResponse" {
		return fmt.Errorf("kind %v, want CertificateResponse", resp["kind"])
	}
	b64, _ := resp["certificate"].(string)
	der, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return err
	}
	s.cert, err = x509.ParseCertificate(der)
	return err
}

func (s *kubehsmSigner) Public() crypto.PublicKey { return s.cert.PublicKey }

func (s *kubehsmSigner) Sign(_ io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	o, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	s.optsTyp = reflect.TypeOf(opts).String()
	resp, err := s.call(map[string]any{
		"apiVersion":     apiVersion,
		"kind":           "SignRequest",
		"configuration":  map[string]string{},
		"digest":         base64.StdEncoding.EncodeToString(digest),
		"signerOptsType": s.optsTyp,
		"signerOpts":     string(o),
	})
	if err != nil {
		return nil, err
	}
	if resp["kind"] != "SignResponse" {
		return nil, fmt.Errorf("kind %v, want SignResponse", resp["kind"])
	}
	b64, _ := resp["signature"].(string)
	s.signs++
	return base64.StdEncoding.DecodeString(b64)
}

func main() {
	bin := flag.String("kubehsm", "kubehsm", "path of kubehsm")
	caFile := flag.String("ca", "", "server CA (PEM)")
	url := flag.String("url", "", "https URL to GET")
	ver := flag.String("tls", "1.3", "TLS version: 1.2 or 1.3")
	extra := flag.String("args", "", "extra arguments for kubehsm sign (space-separated)")
	flag.Parse()

	s := &kubehsmSigner{bin: *bin}
	if *extra != "" {
		s.args = strings.Fields(*extra)
	}
	if err := s.fetchCertificate(); err != nil {
		fmt.Fprintln(os.Stderr, "signer: certificate:", err)
		os.Exit(1)
	}
	pem, err := os.ReadFile(*caFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "signer:", err)
		os.Exit(1)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		fmt.Fprintln(os.Stderr, "signer: no certificate in", *caFile)
		os.Exit(1)
	}
	v := uint16(tls.VersionTLS13)
	if *ver == "1.2" {
		v = tls.VersionTLS12
	}
	cfg := &tls.Config{
		RootCAs:    pool,
		MinVersion: v,
		MaxVersion: v,
		Certificates: []tls.Certificate{{
			Certificate: [][]byte{s.cert.Raw},
			PrivateKey:  s,
			Leaf:        s.cert,
		}},
	}
	client := &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: cfg}}
	resp, err := client.Get(*url)
	if err != nil {
		var uerr interface{ Unwrap() error }
		if errors.As(err, &uerr) {
			err = uerr.Unwrap()
		}
		fmt.Fprintln(os.Stderr, "signer: GET:", err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	got := "?"
	if resp.TLS != nil {
		got = map[uint16]string{tls.VersionTLS12: "1.2", tls.VersionTLS13: "1.3"}[resp.TLS.Version]
	}
	fmt.Printf("tls=%s status=%d signs=%d opts=%s body=%s\n", got, resp.StatusCode, s.signs,
		s.optsTyp, strings.TrimSpace(string(body)))
	if resp.StatusCode != 200 {
		os.Exit(1)
	}
}

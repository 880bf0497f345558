// kh-goapi: the Kubernetes API stand-in that parses HTTP the way
// kube-apiserver does, with Go's net/http (standard library only).
//
// tests/harness/goapi.sh builds and starts it.  It serves mTLS on a
// loopback port (a client certificate chaining to -client-ca is required,
// as kube-apiserver's x509 authenticator does), writes the port to
// -portfile once it listens, and appends one JSON line per request its
// handler is given to -log, before answering it:
//
//	{"method":"GET","path":"/kh-diff/3/0","proto":"HTTP/1.1","contentLength":0,
//	 "body":"<base64>","bodyLen":0,"upgrade":false,"remote":"127.0.0.1:50000"}
//
// so a test compares the requests the server parsed and served with the
// ones kubehsm-relayd audited.  Requests Go's own parser refuses (a 400 it
// writes itself) never reach the handler and are not logged.  It answers:
//
//	/version            kube-apiserver's version object
//	/kh-whoami          "<client serial> <client subject>"
//	/kh-uid             the user UID kube-apiserver (>= 1.33,
//	                    AllowParsingUserUIDFromCertAuth) reads from the
//	                    client certificate: the subject's one
//	                    1.3.6.1.4.1.57683.2 string ("" when none; 401
//	                    when two or not a string, as the apiserver refuses)
//	Upgrade requests    (Connection containing "upgrade", as
//	                    k8s.io/apimachinery's IsUpgradeRequest reads it):
//	                    101, then every byte back
//	anything else       200 {"served":N}, after reading the whole body
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
)

// The UID attribute, read as k8s.io/apiserver's x509 authenticator does:
// from Subject.Names (every attribute, the unknown ones too), at most one.
var uidOID = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57683, 2}

func certUID(c *x509.Certificate) (string, bool) {
	uid, n := "", 0
	for _, name := range c.Subject.Names {
		if !name.Type.Equal(uidOID) {
			continue
		}
		v, ok := name.Value.(string)
		if !ok {
			return "", false
		}
		uid, n = v, n+1
	}
	return uid, n <= 1
}

type entry struct {
	Method        string `json:"method"`
	Path          string `json:"path"`
	Proto         string `json:"proto"`
	ContentLength int64  `json:"contentLength"`
	Body          []byte `json:"body"`
	BodyLen       int    `json:"bodyLen"`
	BodyErr       string `json:"bodyErr,omitempty"`
	Upgrade       bool   `json:"upgrade"`
	Remote        string `json:"remote"`
}

type server struct {
	mu     sync.Mutex
	log    *os.File
	served int
}

// record appends one line; the lines are the test's evidence, so a
// failed write ends the server rather than dropping one.
func (s *server) record(e *entry) int {
	line, err := json.Marshal(e)
	if err != nil {
		log.Fatalf("kh-goapi: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.log.Write(append(line, '\n')); err != nil {
		log.Fatalf("kh-goapi: log: %v", err)
	}
	s.served++
	return s.served
}

// isUpgrade is k8s.io/apimachinery/pkg/util/httpstream.IsUpgradeRequest.
func isUpgrade(r *http.Request) bool {
	for _, h := range r.Header["Connection"] {
		if strings.Contains(strings.ToLower(h), "upgrade") {
			return true
		}
	}
	return false
}

func (s *server) echo(w http.ResponseWriter, r *http.Request) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "no hijack", http.StatusInternalServerError)
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: %s\r\nConnection: Upgrade\r\n\r\n",
		r.Header.Get("Upgrade"))
	if rw.Flush() != nil {
		return
	}
	buf := make([]byte, 32*1024)
	for {
		n, err := rw.Read(buf)
		if n > 0 {
			if _, werr := conn.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e := &entry{Method: r.Method, Path: r.RequestURI, Proto: r.Proto,
		ContentLength: r.ContentLength, Upgrade: isUpgrade(r), Remote: r.RemoteAddr}
	if !e.Upgrade {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		e.Body, e.BodyLen = body, len(body)
		if err != nil {
			e.BodyErr = err.Error()
		}
	}
	n := s.record(e)
	switch {
	case e.Upgrade:
		s.echo(w, r)
	case r.URL.Path == "/version":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"major":"1","minor":"30","gitVersion":"v1.30.0-kubehsm-go","platform":"linux/amd64"}`)
	case r.URL.Path == "/kh-uid":
		uid, ok := certUID(r.TLS.PeerCertificates[0])
		if !ok {
			http.Error(w, "bad UID attribute", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "%s\n", uid)
	case r.URL.Path == "/kh-whoami":
		c := r.TLS.PeerCertificates[0]
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "%X %s\n", c.SerialNumber, c.Subject.String())
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"served":%d}`, n)
	}
}

func main() {
	cert := flag.String("cert", "", "server certificate (PEM)")
	key := flag.String("key", "", "server key (PEM)")
	clientCA := flag.String("client-ca", "", "CA client certificates must chain to")
	logPath := flag.String("log", "", "where each served request is appended")
	portFile := flag.String("portfile", "", "where the port goes once listening")
	flag.Parse()

	pair, err := tls.LoadX509KeyPair(*cert, *key)
	if err != nil {
		log.Fatalf("kh-goapi: %v", err)
	}
	pem, err := os.ReadFile(*clientCA)
	if err != nil {
		log.Fatalf("kh-goapi: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		log.Fatalf("kh-goapi: no certificate in %s", *clientCA)
	}
	f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0644)
	if err != nil {
		log.Fatalf("kh-goapi: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatalf("kh-goapi: %v", err)
	}
	srv := &http.Server{
		Handler: &server{log: f},
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{pair},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    pool,
			MinVersion:   tls.VersionTLS12,
			NextProtos:   []string{"http/1.1"}, // as the relay speaks it: never h2
		},
		// Not nil: no HTTP/2 (the relay speaks HTTP/1.1 upstream).
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ErrorLog:     log.New(os.Stderr, "kh-goapi: ", 0),
	}
	port := fmt.Sprintf("%d\n", ln.Addr().(*net.TCPAddr).Port)
	tmp := *portFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(port), 0644); err != nil {
		log.Fatalf("kh-goapi: %v", err)
	}
	if err := os.Rename(tmp, *portFile); err != nil {
		log.Fatalf("kh-goapi: %v", err)
	}
	log.Fatal(srv.ServeTLS(ln, "", ""))
}

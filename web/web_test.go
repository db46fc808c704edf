package web_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/orca-agent/orca/web"
)

func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// loopbackOK allows the test servers' host, as a rule for 127.0.0.1 would.
func loopbackOK(host string) bool { return host == "127.0.0.1" }

// A page on an allowed host is fetched; the same page without the host
// allowed is refused, naming the address and the rule that would allow
// it — also when the URL names it by a name that resolves to loopback.
func TestPrivateAddresses(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<h1>hello</h1>") })
	p, err := (&web.Fetcher{AllowPrivate: loopbackOK}).Fetch(t.Context(), s.URL)
	if err != nil || p.Status != 200 || string(p.Body) != "<h1>hello</h1>" || p.Truncated {
		t.Fatalf("%+v %v", p, err)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.URL, "http://"))
	for _, u := range []string{s.URL, "http://localhost:" + port + "/", "http://[::1]:" + port + "/", "http://169.254.169.254/latest/meta-data/",
		"http://10.1.2.3/", "http://0.0.0.0:" + port + "/", "http://[::ffff:127.0.0.1]:" + port + "/"} {
		_, err := (&web.Fetcher{}).Fetch(t.Context(), u)
		if !errors.Is(err, web.ErrRefused) || !strings.Contains(err.Error(), "in your own network") || !strings.Contains(err.Error(), "WebFetch(domain:") {
			t.Errorf("%s: %v", u, err)
		}
	}
}

// fakeDNS answers every A question with addr, and AAAA with none: a
// name the test makes up resolves where the test says.
func fakeDNS(t *testing.T, addr [4]byte) *net.Resolver {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
			b.StartQuestions()
			b.Question(q)
			b.StartAnswers()
			if q.Type == dnsmessage.TypeA {
				b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: addr})
			}
			out, err := b.Finish()
			if err == nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

// A name is checked by the addresses it resolves to, and the address
// checked is the one dialled: a made-up name that resolves to loopback is
// refused, naming both, unless the name itself is allowed — and then the
// page comes from that address.
func TestResolvedAddresses(t *testing.T) {
	s := serve(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "via DNS") })
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.URL, "http://"))
	r := fakeDNS(t, [4]byte{127, 0, 0, 1})
	u := "http://innocent.example:" + port + "/"
	_, err := (&web.Fetcher{Resolver: r}).Fetch(t.Context(), u)
	if !errors.Is(err, web.ErrRefused) || !strings.Contains(err.Error(), "innocent.example (127.0.0.1) is an address in your own network (loopback)") {
		t.Errorf("%v", err)
	}
	p, err := (&web.Fetcher{Resolver: r, AllowPrivate: func(h string) bool { return h == "innocent.example" }}).Fetch(t.Context(), u)
	if err != nil || string(p.Body) != "via DNS" {
		t.Errorf("allowed: %+v %v", p, err)
	}
}

// Redirects: on the same host followed; to another host refused unless
// AllowRedirect approves — and then the new host's address is checked
// as the first was.
func TestRedirects(t *testing.T) {
	target := serve(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "there") })
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(target.URL, "http://"))
	other := "http://localhost:" + port + "/x" // another host, the same server
	from := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			http.Redirect(w, r, "/final", http.StatusFound)
		case "/final":
			fmt.Fprint(w, "here")
		case "/other":
			http.Redirect(w, r, other, http.StatusMovedPermanently)
		case "/file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		}
	})
	f := &web.Fetcher{AllowPrivate: loopbackOK}
	if p, err := f.Fetch(t.Context(), from.URL+"/same"); err != nil || string(p.Body) != "here" || !strings.HasSuffix(p.URL, "/final") {
		t.Errorf("same host: %+v %v", p, err)
	}
	for path, want := range map[string]string{"/other": "redirects to another host, " + other, "/file": "only http and https", "/loop": "more than 10 redirects"} {
		if _, err := f.Fetch(t.Context(), from.URL+path); !errors.Is(err, web.ErrRefused) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
	// Allowed to go to localhost — whose address (loopback) is then
	// refused, as localhost is not allowed to reach it.
	f.AllowRedirect = func(from, to *url.URL) error { return nil }
	if _, err := f.Fetch(t.Context(), from.URL+"/other"); !errors.Is(err, web.ErrRefused) || !strings.Contains(err.Error(), "localhost (127.0.0.1) is an address in your own network") {
		t.Errorf("redirect allowed, address not: %v", err)
	}
	f.AllowPrivate = func(host string) bool { return host == "127.0.0.1" || host == "localhost" }
	if p, err := f.Fetch(t.Context(), from.URL+"/other"); err != nil || string(p.Body) != "there" {
		t.Errorf("both allowed: %+v %v", p, err)
	}
	f.AllowRedirect = func(from, to *url.URL) error { return errors.New("no rule allows WebFetch(domain:localhost)") }
	if _, err := f.Fetch(t.Context(), from.URL+"/other"); !errors.Is(err, web.ErrRefused) || !strings.Contains(err.Error(), "no rule allows WebFetch(domain:localhost)") {
		t.Errorf("refused by AllowRedirect: %v", err)
	}
}

// A page over MaxBytes is cut there, and says so; one that never ends is
// read no further; a server that does not answer in Timeout is an error
// that says so; what is not an http(s) URL is refused before anything is
// sent.
func TestCaps(t *testing.T) {
	big := serve(t, func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 1<<20))
		for range 50 { // 50 MB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	p, err := (&web.Fetcher{AllowPrivate: loopbackOK, MaxBytes: 1 << 20}).Fetch(t.Context(), big.URL)
	if err != nil || len(p.Body) != 1<<20 || !p.Truncated {
		t.Fatalf("%d bytes, truncated %v, %v", len(p.Body), p != nil && p.Truncated, err)
	}
	hang := make(chan struct{})
	slow := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	})
	defer close(hang)
	if _, err := (&web.Fetcher{AllowPrivate: loopbackOK, Timeout: 200e6}).Fetch(t.Context(), slow.URL); err == nil || !strings.Contains(err.Error(), "no answer in 200ms") {
		t.Errorf("slow: %v", err)
	}
	for _, u := range []string{"file:///etc/passwd", "ftp://example.com/", "gopher://x/", "http:///nohost", "http://user:pw@example.com/"} {
		if _, err := (&web.Fetcher{}).Fetch(t.Context(), u); !errors.Is(err, web.ErrRefused) {
			t.Errorf("%s: %v", u, err)
		}
	}
	if _, err := (&web.Fetcher{}).Fetch(t.Context(), "http://%zz"); err == nil || !strings.Contains(err.Error(), "is not a URL") {
		t.Errorf("bad URL: %v", err)
	}
}

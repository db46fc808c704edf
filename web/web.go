// Package web is the web as the agent's tools reach it (WebFetch): http
// and https only; no address in the user's own network — loopback,
// private, link-local (the clouds' metadata service among them), shared
// (carrier-grade NAT), unspecified or multicast — unless the caller allows
// the host, checked on the addresses a name resolves to, which are the
// ones dialled (a name cannot resolve to a public address for the check
// and a private one for the connection); redirects followed only where
// the caller allows them (another host needs its say); bodies and time
// capped; a page made text for a model (Page.Text: HTML as Markdown,
// through html-to-markdown, in whatever charset it came).
package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// Defaults of a Fetcher.
const (
	DefaultMaxBytes  = 10 << 20
	DefaultTimeout   = 30 * time.Second
	DefaultRedirects = 10
)

// ErrRefused: the fetch was refused before anything was sent (an address
// in the user's network, a scheme other than http(s), a redirect not
// allowed). Errors wrap it and name the URL and why.
var ErrRefused = errors.New("web: refused")

// Fetcher fetches pages. The zero value fetches public http(s) pages,
// following redirects on the same host, with the default caps.
type Fetcher struct {
	// AllowPrivate reports whether host (a name or an address, as the URL
	// gives it) may be reached at an address in the user's network (a
	// permission rule names it); nil: never.
	AllowPrivate func(host string) bool
	// AllowRedirect reports whether a redirect from one URL to another
	// on a different host may be followed (nil: never); a redirect on the
	// same host is followed.
	AllowRedirect func(from, to *url.URL) error
	// MaxBytes caps the body read (DefaultMaxBytes if zero): the rest is
	// not read, and Page.Truncated says so.
	MaxBytes int64
	// Timeout bounds the whole fetch, redirects included (DefaultTimeout
	// if zero).
	Timeout time.Duration
	// Resolver resolves names (net.DefaultResolver if nil).
	Resolver *net.Resolver
	// UserAgent is sent as User-Agent ("orca" if empty).
	UserAgent string
}

// Page is what a fetch got.
type Page struct {
	// URL is the page's, after redirects.
	URL         string
	Status      int
	ContentType string
	Body        []byte
	// Truncated: the body was longer than MaxBytes, and is cut there.
	Truncated bool
}

// Fetch gets rawURL (GET). A status other than 2xx is no error: the Page
// says it.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Page, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("web: %q is not a URL: %w", rawURL, err)
	}
	if err := checkURL(u); err != nil {
		return nil, err
	}
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would dial where the checks do not look
		DialContext:            f.dial,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: f.redirect}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("web: %s: %w", rawURL, err)
	}
	req.Header.Set("User-Agent", cmp.Or(f.UserAgent, "orca"))
	req.Header.Set("Accept", "text/html, text/markdown, text/plain;q=0.9, */*;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) && errors.Is(ue.Err, ErrRefused) {
			return nil, ue.Err
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("web: %s: no answer in %v", rawURL, timeout)
		}
		return nil, fmt.Errorf("web: %s: %w", rawURL, err)
	}
	defer resp.Body.Close()
	max := f.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("web: %s: reading the page: %w", resp.Request.URL, err)
	}
	p := &Page{URL: resp.Request.URL.String(), Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: body}
	if int64(len(body)) > max {
		p.Body, p.Truncated = body[:max], true
	}
	return p, nil
}

// checkURL refuses what is not http(s) with a host.
func checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: %s: only http and https URLs are fetched", ErrRefused, u.Redacted())
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%w: %s: no host", ErrRefused, u.Redacted())
	}
	if u.User != nil {
		return fmt.Errorf("%w: %s: a URL with a user name or password is not fetched", ErrRefused, u.Redacted())
	}
	return nil
}

// redirect follows a redirect on the same host, and one to another host
// AllowRedirect approves; never more than DefaultRedirects.
func (f *Fetcher) redirect(req *http.Request, via []*http.Request) error {
	if len(via) >= DefaultRedirects {
		return fmt.Errorf("%w: %s: more than %d redirects", ErrRefused, via[0].URL.Redacted(), DefaultRedirects)
	}
	if err := checkURL(req.URL); err != nil {
		return err
	}
	from := via[len(via)-1].URL
	if strings.EqualFold(req.URL.Host, from.Host) {
		return nil
	}
	if f.AllowRedirect == nil {
		return &RedirectError{From: from, To: req.URL}
	}
	if err := f.AllowRedirect(from, req.URL); err != nil {
		return &RedirectError{From: from, To: req.URL, Err: err}
	}
	return nil
}

// RedirectError is a redirect to another host that was not followed (the
// Fetcher's AllowRedirect said no, or there is none). It is ErrRefused.
type RedirectError struct {
	From, To *url.URL
	// Err is why AllowRedirect refused it (nil: no AllowRedirect).
	Err error
}

func (e *RedirectError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("%v: %s redirects to another host, %s, which is not allowed", ErrRefused, e.From.Redacted(), e.To.Redacted())
	}
	return fmt.Sprintf("%v: %s redirects to %s: %v", ErrRefused, e.From.Redacted(), e.To.Redacted(), e.Err)
}

func (e *RedirectError) Is(target error) bool { return target == ErrRefused }
func (e *RedirectError) Unwrap() error        { return e.Err }

// dial connects to addr's host at one of its addresses that may be
// reached: the name is resolved here, each address checked, and only an
// allowed one dialled.
func (f *Fetcher) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		r := f.Resolver
		if r == nil {
			r = net.DefaultResolver
		}
		addrs, err := r.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", host, err)
		}
		ips = addrs
	}
	allowed := f.AllowPrivate != nil && f.AllowPrivate(host)
	var refused netip.Addr
	var d net.Dialer
	var lastErr error
	for _, ip := range ips {
		ip = ip.Unmap()
		if private(ip) && !allowed {
			refused = ip
			continue
		}
		c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		lastErr = err
	}
	if lastErr != nil {
		return nil, lastErr
	}
	if refused.IsValid() {
		what := host
		if refused.String() != host {
			what += " (" + refused.String() + ")"
		}
		return nil, fmt.Errorf("%w: %s is an address in your own network (%s): a permission rule must allow it, as WebFetch(domain:%s)",
			ErrRefused, what, kind(refused), host)
	}
	return nil, fmt.Errorf("resolving %s: no address", host)
}

// shared is the carrier-grade NAT range (RFC 6598).
var shared = netip.MustParsePrefix("100.64.0.0/10")

// private reports whether ip is in the user's own network, or no one's.
func private(ip netip.Addr) bool {
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() ||
		ip.IsMulticast() || ip.IsUnspecified() || shared.Contains(ip)
}

// kind says what sort of address ip is, for the error.
func kind(ip netip.Addr) string {
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsLinkLocalUnicast():
		return "link-local, where the clouds' metadata services are"
	case ip.IsPrivate():
		return "private"
	case shared.Contains(ip):
		return "shared (carrier-grade NAT)"
	case ip.IsUnspecified():
		return "unspecified"
	}
	return "multicast"
}

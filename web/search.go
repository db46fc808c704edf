package web

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	stdhtml "html"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Query is a web search.
type Query struct {
	// Text is what is searched for.
	Text string
	// Allowed, if any, are the only domains results may be on; Blocked
	// the domains they may not be on. A domain covers its subdomains
	// ("go.dev": "pkg.go.dev" too).
	Allowed, Blocked []string
	// Max is how many results are wanted (DefaultResults if zero).
	Max int
}

// DefaultResults is how many results a search returns unless asked.
const DefaultResults = 10

// Result is one search result.
type Result struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet,omitempty"`
	// Age says how old the page is, as the backend says it ("2 days
	// ago", a date), if it does.
	Age string `json:"age,omitempty"`
}

// Searcher searches the web: a search API the user configured (Brave,
// Tavily, SearXNG).
type Searcher interface {
	// Name names the backend, for the model and the user ("Brave").
	Name() string
	// Search returns the results of q, at most q.Max, none outside
	// q.Allowed (if any) or inside q.Blocked.
	Search(ctx context.Context, q Query) ([]Result, error)
}

// Brave is Brave's Search API (api.search.brave.com): a key from
// https://brave.com/search/api/, in $BRAVE_API_KEY.
type Brave struct {
	Key string
	// Endpoint is the web search URL (DefaultBraveEndpoint if empty).
	Endpoint string
	// Client sends the requests (nil: one with a 30 s timeout, through
	// the environment's proxy, its connection closed after each search).
	Client *http.Client
}

// DefaultBraveEndpoint is Brave's web search.
const DefaultBraveEndpoint = "https://api.search.brave.com/res/v1/web/search"

func (*Brave) Name() string { return "Brave" }

func (b *Brave) Search(ctx context.Context, q Query) ([]Result, error) {
	q = q.normal()
	u, err := url.Parse(cmp.Or(b.Endpoint, DefaultBraveEndpoint))
	if err != nil {
		return nil, fmt.Errorf("Brave: endpoint: %w", err)
	}
	v := u.Query()
	v.Set("q", q.withSite())
	v.Set("count", strconv.Itoa(min(q.Max*2, 20))) // some may be filtered out
	u.RawQuery = v.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("Brave: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Subscription-Token", b.Key)
	var out struct {
		Web struct {
			Results []struct {
				Title       string `json:"title"`
				URL         string `json:"url"`
				Description string `json:"description"`
				Age         string `json:"age"`
			} `json:"results"`
		} `json:"web"`
	}
	if err := send(b.Client, req, "Brave", &out); err != nil {
		return nil, err
	}
	rs := make([]Result, 0, len(out.Web.Results))
	for _, r := range out.Web.Results {
		rs = append(rs, Result{Title: r.Title, URL: r.URL, Snippet: stripTags(r.Description), Age: r.Age})
	}
	return q.filter(rs), nil
}

// Tavily is Tavily's Search API (api.tavily.com): a key from
// https://tavily.com, in $TAVILY_API_KEY.
type Tavily struct {
	Key string
	// Endpoint is the search URL (DefaultTavilyEndpoint if empty).
	Endpoint string
	Client   *http.Client
}

// DefaultTavilyEndpoint is Tavily's search.
const DefaultTavilyEndpoint = "https://api.tavily.com/search"

func (*Tavily) Name() string { return "Tavily" }

func (t *Tavily) Search(ctx context.Context, q Query) ([]Result, error) {
	q = q.normal()
	body, _ := json.Marshal(map[string]any{"query": q.Text, "max_results": min(q.Max, 20),
		"include_domains": nonNil(q.Allowed), "exclude_domains": nonNil(q.Blocked)})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cmp.Or(t.Endpoint, DefaultTavilyEndpoint), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("Tavily: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+t.Key)
	var out struct {
		Results []struct {
			Title         string `json:"title"`
			URL           string `json:"url"`
			Content       string `json:"content"`
			PublishedDate string `json:"published_date"`
		} `json:"results"`
	}
	if err := send(t.Client, req, "Tavily", &out); err != nil {
		return nil, err
	}
	rs := make([]Result, 0, len(out.Results))
	for _, r := range out.Results {
		rs = append(rs, Result{Title: r.Title, URL: r.URL, Snippet: r.Content, Age: r.PublishedDate})
	}
	return q.filter(rs), nil
}

// SearXNG is a SearXNG instance (self-hosted, its JSON format enabled in
// its settings.yml: search.formats has json), at $SEARXNG_URL.
type SearXNG struct {
	// URL is the instance's base URL ("http://localhost:8888").
	URL    string
	Client *http.Client
}

func (*SearXNG) Name() string { return "SearXNG" }

func (s *SearXNG) Search(ctx context.Context, q Query) ([]Result, error) {
	q = q.normal()
	u, err := url.Parse(strings.TrimRight(s.URL, "/") + "/search")
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("SearXNG: %q is not the http(s) URL of an instance", s.URL)
	}
	v := url.Values{"q": {q.withSite()}, "format": {"json"}}
	u.RawQuery = v.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("SearXNG: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	var out struct {
		Results []struct {
			Title         string `json:"title"`
			URL           string `json:"url"`
			Content       string `json:"content"`
			PublishedDate string `json:"publishedDate"`
		} `json:"results"`
	}
	if err := send(s.Client, req, "SearXNG", &out); err != nil {
		if strings.Contains(err.Error(), "403") {
			err = fmt.Errorf("%w (is the JSON format on? search.formats in its settings.yml must list json)", err)
		}
		return nil, err
	}
	rs := make([]Result, 0, len(out.Results))
	for _, r := range out.Results {
		rs = append(rs, Result{Title: r.Title, URL: r.URL, Snippet: r.Content, Age: r.PublishedDate})
	}
	return q.filter(rs), nil
}

// send sends req and decodes its JSON answer into out; a failure names
// the backend and what it said.
func send(c *http.Client, req *http.Request, name string, out any) error {
	if c == nil {
		// A connection of its own, closed after the answer: a search is a
		// call of a tool, and leaves nothing running once it returns.
		c = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true,
			ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second}}
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("%s: reading the answer: %w", name, err)
	}
	if resp.StatusCode != http.StatusOK {
		what := strings.TrimSpace(string(body))
		if len(what) > 300 {
			what = what[:300] + "…"
		}
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Errorf("%s: %s: the key (or the instance) refuses the search: %s", name, resp.Status, what)
		case http.StatusTooManyRequests:
			return fmt.Errorf("%s: %s: the plan's rate or quota is used up: %s", name, resp.Status, what)
		}
		return fmt.Errorf("%s: %s: %s", name, resp.Status, what)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%s: the answer is not the JSON expected: %w", name, err)
	}
	return nil
}

// normal returns q with its domains as hosts, lower case, and Max set.
func (q Query) normal() Query {
	if q.Max <= 0 {
		q.Max = DefaultResults
	}
	q.Allowed, q.Blocked = Domains(q.Allowed), Domains(q.Blocked)
	return q
}

// withSite is the query text, limited to the one allowed domain by the
// site: operator the search engines know (more are filtered after).
func (q Query) withSite() string {
	if len(q.Allowed) == 1 {
		return q.Text + " site:" + q.Allowed[0]
	}
	return q.Text
}

// Keep returns the results of rs with an http(s) URL on an allowed
// domain of q and on no blocked one, at most q.Max of them (DefaultResults
// if zero): what a Searcher returns, and what a caller keeps of results
// found otherwise (a provider's own search).
func (q Query) Keep(rs []Result) []Result { return q.normal().filter(rs) }

// Allows reports whether a result on host may be kept: on an allowed
// domain of q (if it has any), and on no blocked one.
func (q Query) Allows(host string) bool {
	q = q.normal()
	host = strings.ToLower(host)
	return host != "" && (len(q.Allowed) == 0 || onAny(host, q.Allowed)) && !onAny(host, q.Blocked)
}

// filter is Keep of a normal query.
func (q Query) filter(rs []Result) []Result {
	out := rs[:0]
	for _, r := range rs {
		u, err := url.Parse(r.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			continue
		}
		host := strings.ToLower(u.Hostname())
		if len(q.Allowed) > 0 && !onAny(host, q.Allowed) || onAny(host, q.Blocked) {
			continue
		}
		r.Title = strings.TrimSpace(stripTags(r.Title))
		out = append(out, r)
		if len(out) == q.Max {
			break
		}
	}
	return out
}

// Domains returns ds as the hosts a search is limited to: lower case,
// "https://Go.dev/doc" and "*.go.dev" as "go.dev".
func Domains(ds []string) []string {
	var out []string
	for _, d := range ds {
		d = strings.ToLower(strings.TrimSpace(d))
		if u, err := url.Parse(d); err == nil && u.Host != "" {
			d = u.Hostname()
		}
		d = strings.TrimPrefix(strings.TrimSuffix(d, "/"), "*.")
		d = strings.TrimPrefix(d, ".")
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

// onAny reports whether host is one of ds or a subdomain of one.
func onAny(host string, ds []string) bool {
	for _, d := range ds {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// stripTags removes the <strong> and other tags a backend marks its
// snippets with, and unescapes what it escaped.
func stripTags(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return s
	}
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>' && in:
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return stdhtml.UnescapeString(b.String())
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// The environment variables FromEnv reads.
const (
	SearchEnv     = "ORCA_WEB_SEARCH" // brave, tavily, searxng or off
	BraveKeyEnv   = "BRAVE_API_KEY"
	TavilyKeyEnv  = "TAVILY_API_KEY"
	SearXNGURLEnv = "SEARXNG_URL"
)

// FromEnv returns the Searcher the variables getenv reads configure:
// SearchEnv's choice, else the first backend whose variable is set —
// BraveKeyEnv, TavilyKeyEnv, SearXNGURLEnv; nil when none is (or
// SearchEnv is "off"). A choice without its variable, or one it does not
// know, is an error naming both.
func FromEnv(getenv func(string) string) (Searcher, error) {
	brave, tavily, searx := getenv(BraveKeyEnv), getenv(TavilyKeyEnv), getenv(SearXNGURLEnv)
	need := func(name, env, v string) error {
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("%s=%s, but %s is not set: %s needs it", SearchEnv, name, env, name)
		}
		return nil
	}
	switch choice := strings.ToLower(strings.TrimSpace(getenv(SearchEnv))); choice {
	case "off":
		return nil, nil
	case "brave":
		if err := need(choice, BraveKeyEnv, brave); err != nil {
			return nil, err
		}
		return &Brave{Key: brave}, nil
	case "tavily":
		if err := need(choice, TavilyKeyEnv, tavily); err != nil {
			return nil, err
		}
		return &Tavily{Key: tavily}, nil
	case "searxng":
		if err := need(choice, SearXNGURLEnv, searx); err != nil {
			return nil, err
		}
		return &SearXNG{URL: searx}, nil
	case "":
	default:
		return nil, fmt.Errorf("%s=%s: want brave, tavily, searxng or off", SearchEnv, choice)
	}
	switch {
	case brave != "":
		return &Brave{Key: brave}, nil
	case tavily != "":
		return &Tavily{Key: tavily}, nil
	case searx != "":
		return &SearXNG{URL: searx}, nil
	}
	return nil, nil
}

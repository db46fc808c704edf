package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// RecordingsEnv names the folder of real provider exchanges others
// recorded, in go-vcr's cassette format (version 2): .ci/run points it at
// the providertests/testdata folder of the Go module charm.land/fantasy
// (Apache-2.0), which the Go module proxy serves, so that orca's
// providers are tested against what the APIs really sent; nothing of it
// is copied into orca.
const RecordingsEnv = "ORCA_RECORDINGS"

// Exchange is one recorded request and the response it got.
type Exchange struct {
	Method, URL  string
	RequestBody  []byte
	Status       int
	Header       http.Header
	ResponseBody []byte
}

// Recorded returns the exchanges of the cassette at path, a path under
// RecordingsEnv's folder. Without RecordingsEnv the test is skipped;
// with it, a cassette that is missing or does not parse fails it.
func Recorded(t testing.TB, path string) []Exchange {
	t.Helper()
	root := os.Getenv(RecordingsEnv)
	if root == "" {
		t.Skipf("%s is not set: it names the folder of recorded provider exchanges (providertests/testdata of the Go module charm.land/fantasy); .ci/run sets it", RecordingsEnv)
	}
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatalf("the recording: %v", err)
	}
	var c struct {
		Version      int `yaml:"version"`
		Interactions []struct {
			Request struct {
				Body   string `yaml:"body"`
				URL    string `yaml:"url"`
				Method string `yaml:"method"`
			} `yaml:"request"`
			Response struct {
				Body    string              `yaml:"body"`
				Headers map[string][]string `yaml:"headers"`
				Code    int                 `yaml:"code"`
			} `yaml:"response"`
		} `yaml:"interactions"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if c.Version != 2 || len(c.Interactions) == 0 {
		t.Fatalf("%s: a cassette of version %d with %d exchanges (want version 2, one or more)", path, c.Version, len(c.Interactions))
	}
	out := make([]Exchange, len(c.Interactions))
	for i, in := range c.Interactions {
		out[i] = Exchange{Method: in.Request.Method, URL: in.Request.URL, RequestBody: []byte(in.Request.Body),
			Status: in.Response.Code, Header: headerOf(in.Response.Headers), ResponseBody: []byte(in.Response.Body)}
	}
	return out
}

// Replay is a local server that answers each request with the next
// recorded response, byte for byte, at the recorded request's path, and
// keeps the bodies it received.
type Replay struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

// NewReplay starts a Replay of exs, closed when the test ends. A request
// past the last exchange, or to another path than its exchange's, gets a
// 404 and fails the test.
func NewReplay(t testing.TB, exs []Exchange) *Replay {
	t.Helper()
	r := &Replay{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		n := len(r.bodies)
		r.bodies = append(r.bodies, body)
		r.mu.Unlock()
		if n >= len(exs) {
			t.Errorf("request %d: the recording has %d", n+1, len(exs))
			http.NotFound(w, req)
			return
		}
		ex := exs[n]
		if u, err := url.Parse(ex.URL); err != nil || u.Path != req.URL.Path || ex.Method != req.Method {
			t.Errorf("request %d: %s %s, the recording's was %s %s", n+1, req.Method, req.URL.Path, ex.Method, ex.URL)
			http.NotFound(w, req)
			return
		}
		for k, vs := range ex.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(ex.Status)
		w.Write(ex.ResponseBody)
	}))
	t.Cleanup(r.Close)
	return r
}

// Bodies returns the request bodies received so far.
func (r *Replay) Bodies() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.bodies...)
}

// Cassette returns the exchanges of a cassette recorded by vcrpy (the
// Python VCR, version 1, as Pydantic AI's tests keep theirs) at path, a
// file of the test's own testdata: a request's body and URI, a response's
// status, headers and body — streamed bytes kept as YAML's !!binary,
// JSON kept as parsed_body (written back as JSON). A cassette that is
// missing or does not parse fails the test.
func Cassette(t testing.TB, path string) []Exchange {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the recording: %v", err)
	}
	var c struct {
		Version      int `yaml:"version"`
		Interactions []struct {
			Request struct {
				Body   string `yaml:"body"`
				URI    string `yaml:"uri"`
				Method string `yaml:"method"`
			} `yaml:"request"`
			Response struct {
				Status struct {
					Code int `yaml:"code"`
				} `yaml:"status"`
				Headers map[string][]string `yaml:"headers"`
				Body    struct {
					String string `yaml:"string"`
				} `yaml:"body"`
				Parsed any `yaml:"parsed_body"`
			} `yaml:"response"`
		} `yaml:"interactions"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if c.Version != 1 || len(c.Interactions) == 0 {
		t.Fatalf("%s: a cassette of version %d with %d exchanges (want vcrpy's version 1, one or more)", path, c.Version, len(c.Interactions))
	}
	out := make([]Exchange, len(c.Interactions))
	for i, in := range c.Interactions {
		h := headerOf(in.Response.Headers)
		body := []byte(in.Response.Body.String)
		if in.Response.Parsed != nil {
			if body, err = json.Marshal(in.Response.Parsed); err != nil {
				t.Fatalf("%s, exchange %d: the parsed body: %v", path, i+1, err)
			}
			h.Del("Content-Length")
		}
		out[i] = Exchange{Method: in.Request.Method, URL: in.Request.URI, RequestBody: []byte(in.Request.Body),
			Status: in.Response.Status.Code, Header: h, ResponseBody: body}
	}
	return out
}

// headerOf is a recording's headers with their names as net/http keeps
// them.
func headerOf(recorded map[string][]string) http.Header {
	h := http.Header{}
	for k, vs := range recorded {
		h[http.CanonicalHeaderKey(k)] = vs
	}
	return h
}

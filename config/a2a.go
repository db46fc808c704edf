package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/orca-agent/orca/internal/names"
)

// A2AAgent is a remote Agent2Agent agent the settings' "a2aAgents" name
// as a subagent: Task delegates to it as to any subagent.
type A2AAgent struct {
	// Name is the subagent's name (the entry's key).
	Name string
	// URL is the agent's base URL: its card is at
	// /.well-known/agent-card.json below it.
	URL string
	// Description tells the model when to use it.
	Description string
	// Headers are sent with every request (its API key: ${VAR}s are
	// expanded from the environment).
	Headers map[string]string
	// Timeout bounds one task ("timeout", seconds; 0: the default).
	Timeout time.Duration
	// File is where it is declared; Project says the workspace declares
	// it, so that it is used only in a trusted workspace (the workspace's
	// prompts would reach it).
	File    string
	Project bool
}

// parseA2AAgents reads an "a2aAgents" object of the file at path.
func parseA2AAgents(path string, raw json.RawMessage) ([]A2AAgent, error) {
	var byName map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byName); err != nil || byName == nil {
		return nil, fmt.Errorf("%s: a2aAgents: want an object of remote agents by name, got %s", path, kind(raw))
	}
	var out []A2AAgent
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		key := "a2aAgents." + name
		if !names.Slug(name) {
			return nil, fmt.Errorf("%s: %s: a subagent's name is lowercase letters, digits and hyphens, at most 64", path, key)
		}
		var e struct {
			URL         string            `json:"url"`
			Description string            `json:"description"`
			Headers     map[string]string `json:"headers"`
			Timeout     *float64          `json:"timeout"`
		}
		dec := json.NewDecoder(bytes.NewReader(byName[name]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("%s: %s: want {url, description, headers?, timeout?}: %v", path, key, err)
		}
		u, err := url.Parse(e.URL)
		if e.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%s: %s.url: %q: want the agent's http or https base URL", path, key, e.URL)
		}
		if e.Description == "" {
			return nil, fmt.Errorf("%s: %s.description: missing: it tells the model when to use the agent", path, key)
		}
		a := A2AAgent{Name: name, URL: e.URL, Description: e.Description, File: path}
		for k, v := range e.Headers {
			x, err := expandVars(v, os.LookupEnv)
			if err != nil {
				return nil, fmt.Errorf("%s: %s.headers.%s: %v", path, key, k, err)
			}
			if a.Headers == nil {
				a.Headers = map[string]string{}
			}
			a.Headers[k] = x
		}
		if e.Timeout != nil {
			if *e.Timeout <= 0 {
				return nil, fmt.Errorf("%s: %s.timeout: want a positive number of seconds, got %v", path, key, *e.Timeout)
			}
			a.Timeout = time.Duration(*e.Timeout * float64(time.Second))
		}
		out = append(out, a)
	}
	return out, nil
}

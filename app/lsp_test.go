package app_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/orca-agent/orca/app"
	"github.com/orca-agent/orca/config"
)

// TestLanguageServersChosen: those found installed, the settings' over
// them — a configured server takes its extensions from a detected one,
// false turns one off — in order.
func TestLanguageServersChosen(t *testing.T) {
	installed := map[string]bool{"gopls": true, "pyright-langserver": true, "basedpyright-langserver": true, "rust-analyzer": true}
	lookPath := func(name string) (string, error) {
		if installed[name] {
			return "/opt/bin/" + name, nil
		}
		return "", errors.New("not found")
	}
	s := &config.Settings{LSPServers: []config.LSPServer{
		{Name: "go", Command: "my-gopls", ExtensionToLanguage: map[string]string{".go": "go"}},
		{Name: "rust-analyzer", Off: true},
	}}
	var got []string
	for _, srv := range app.LanguageServers(s, lookPath) {
		got = append(got, srv.Name+"="+srv.Command)
	}
	if strings.Join(got, " ") != "pyright=/opt/bin/pyright-langserver go=my-gopls" {
		t.Errorf("servers: %v", got)
	}
	if n := len(app.LanguageServers(&config.Settings{}, func(string) (string, error) { return "", errors.New("none") })); n != 0 {
		t.Errorf("none installed: %d servers", n)
	}
}

package session

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// readEnvFile reads the variables SESSION_START hooks wrote to path
// (Claude Code's CLAUDE_ENV_FILE): lines NAME=value or export NAME=value,
// the value bare, 'single-quoted' or "double-quoted" (with \" and \\
// escapes). Blank lines, comments and lines that are not such
// assignments are skipped: orca reads the file, it does not run it.
func readEnvFile(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var env []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		line = strings.TrimSpace(strings.TrimPrefix(line, "export "))
		name, value, ok := strings.Cut(line, "=")
		if !ok || !validName(name) {
			continue
		}
		switch {
		case len(value) >= 2 && value[0] == '\'' && value[len(value)-1] == '\'':
			value = value[1 : len(value)-1]
		case len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"':
			if v, err := strconv.Unquote(value); err == nil {
				value = v
			} else {
				value = value[1 : len(value)-1]
			}
		default:
			if i := strings.Index(value, " #"); i >= 0 {
				value = strings.TrimSpace(value[:i])
			}
		}
		env = append(env, name+"="+value)
	}
	return env
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

package observe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// TimelineFile is the name of a run's timeline in its folder.
const TimelineFile = "events.jsonl"

// FindRun returns the timeline file that run names: the path of a timeline
// file or of a run's folder, or the id of a run of workspace (a folder of
// its RunsDir); "" names the workspace's newest run. Its errors say what
// was looked for.
func FindRun(workspace, run string) (string, error) {
	if run != "" {
		if fi, err := os.Stat(run); err == nil {
			if fi.IsDir() {
				return filepath.Join(run, TimelineFile), nil
			}
			return run, nil
		}
		if strings.ContainsRune(run, os.PathSeparator) || strings.HasSuffix(run, ".jsonl") {
			return "", fmt.Errorf("%s does not exist", run)
		}
	}
	runs := filepath.Join(workspace, filepath.FromSlash(RunsDir))
	if run != "" {
		path := filepath.Join(runs, run, TimelineFile)
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("workspace %s has no run %s", workspace, run)
		}
		return path, nil
	}
	entries, err := os.ReadDir(runs)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	type found struct {
		name string
		mod  time.Time
	}
	var all []found
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if fi, err := os.Stat(filepath.Join(runs, e.Name(), TimelineFile)); err == nil {
			all = append(all, found{e.Name(), fi.ModTime()})
		}
	}
	if len(all) == 0 {
		return "", fmt.Errorf("workspace %s has no runs yet", workspace)
	}
	newest := slices.MaxFunc(all, func(a, b found) int {
		if c := a.mod.Compare(b.mod); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name) // run ids sort by start
	})
	return filepath.Join(runs, newest.name, TimelineFile), nil
}

// ReadTimeline reads the events of a timeline file as the JSON lines they
// are (event.Decode decodes each); blank lines are skipped, and a line that
// is not JSON is an error naming the file and line.
func ReadTimeline(path string) ([]json.RawMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for n := 1; sc.Scan(); n++ {
		l := sc.Bytes()
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if !json.Valid(l) {
			return nil, fmt.Errorf("%s:%d: not a JSON event", path, n)
		}
		lines = append(lines, json.RawMessage(slices.Clone(l)))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return lines, nil
}

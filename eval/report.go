package eval

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// WriteText writes rep for people: a line per case (its failures under
// it), a line per suite, and the verdict.
func WriteText(w io.Writer, rep *Report) error {
	var b strings.Builder
	for _, s := range rep.Suites {
		fmt.Fprintf(&b, "%s (%s)\n", s.Name, s.File)
		for _, c := range s.Cases {
			mark := "ok  "
			if !c.Passed {
				mark = "FAIL"
			}
			took := time.Duration(0)
			for _, r := range c.Runs {
				took += r.Duration
			}
			if rep.Repeat > 1 {
				fmt.Fprintf(&b, "  %s %s  %d/%d runs passed (pass@%d %v, pass^%d %v)  %s\n", mark, c.Name, c.PassedRuns, len(c.Runs), len(c.Runs), c.PassAtK, len(c.Runs), c.Passed, took.Round(time.Millisecond))
			} else {
				fmt.Fprintf(&b, "  %s %s  %s\n", mark, c.Name, took.Round(time.Millisecond))
			}
			for k, r := range c.Runs {
				prefix := "       "
				if len(c.Runs) > 1 {
					prefix = fmt.Sprintf("       run %d: ", k+1)
				}
				if r.Error != "" {
					fmt.Fprintf(&b, "%s%s\n", prefix, r.Error)
				}
				for _, sc := range r.Scores {
					if !sc.Pass {
						fmt.Fprintf(&b, "%s%s: %s\n", prefix, where(sc), sc.Detail)
					}
				}
			}
		}
		verdict := "passed"
		if !s.Passed {
			verdict = "FAILED"
		}
		fmt.Fprintf(&b, "%s: %d of %d cases passed (%.0f%%, %.0f%% needed)", verdict, int(s.PassRate*float64(len(s.Cases))+0.5), len(s.Cases), s.PassRate*100, s.Threshold*100)
		if len(s.FailedGates) > 0 {
			fmt.Fprintf(&b, "; gates failed: %s", strings.Join(s.FailedGates, "; "))
		}
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "%s in %s", map[bool]string{true: "PASS", false: "FAIL"}[rep.Passed], rep.Duration.Round(time.Millisecond))
	if rep.CostUSD > 0 {
		fmt.Fprintf(&b, ", $%.4f", rep.CostUSD)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// where names a score: its scorer, and its turn.
func where(s Score) string {
	if s.Turn > 0 {
		return fmt.Sprintf("turn %d %s", s.Turn, s.Scorer)
	}
	return s.Scorer
}

// WriteJSON writes rep as one JSON object.
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(rep)
}

// The JUnit XML orca writes holds to Apache Ant's schema, the strictest
// of the usual ones (windyroad/JUnit-Schema): a suite's package, id,
// hostname, properties, system-out and system-err are all required.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Package    string          `xml:"package,attr"`
	ID         int             `xml:"id,attr"`
	Name       string          `xml:"name,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Hostname   string          `xml:"hostname,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out"`
	SystemErr  string          `xml:"system-err"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Error     *junitProblem `xml:"error,omitempty"`
	Failure   *junitProblem `xml:"failure,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes rep as JUnit XML: a testsuite per suite, a testcase
// per run of a case, a failure naming the scorers that failed, an error
// for a run that could not finish; how each run's turns ended is the
// suite's system-out.
func WriteJUnit(w io.Writer, rep *Report) error {
	host, _ := os.Hostname()
	mode := "replay"
	if rep.Live {
		mode = "live"
	}
	var out junitSuites
	for i, s := range rep.Suites {
		js := junitSuite{Package: "orca.eval", ID: i, Name: s.Name, Hostname: or(host, "localhost"), Timestamp: rep.Started.Format("2006-01-02T15:04:05"),
			Properties: []junitProperty{{"mode", mode}, {"repeat", fmt.Sprint(rep.Repeat)}, {"file", or(s.File, s.Name)},
				{"threshold", fmt.Sprint(s.Threshold)}, {"pass_rate", fmt.Sprint(s.PassRate)}, {"passed", fmt.Sprint(s.Passed)}}}
		var took time.Duration
		var log strings.Builder
		for _, c := range s.Cases {
			for k, r := range c.Runs {
				name := c.Name
				if len(c.Runs) > 1 {
					name = fmt.Sprintf("%s #%d", c.Name, k+1)
				}
				jc := junitCase{Name: name, Classname: s.Name, Time: seconds(r.Duration)}
				var failed []string
				var details strings.Builder
				for _, sc := range r.Scores {
					if !sc.Pass {
						failed = append(failed, where(sc))
						fmt.Fprintf(&details, "%s: %s\n", where(sc), sc.Detail)
					}
				}
				switch {
				case r.Error != "":
					jc.Error = &junitProblem{Message: r.Error, Type: "run", Text: details.String()}
					js.Errors++
				case len(failed) > 0:
					jc.Failure = &junitProblem{Message: "failed: " + strings.Join(failed, ", "), Type: "scorer", Text: details.String()}
					js.Failures++
				}
				fmt.Fprintf(&log, "%s: %s\n", name, strings.Join(r.Turns, ", "))
				js.Cases = append(js.Cases, jc)
				js.Tests++
				took += r.Duration
			}
		}
		js.Time = seconds(took)
		js.SystemOut = log.String()
		out.Suites = append(out.Suites, js)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

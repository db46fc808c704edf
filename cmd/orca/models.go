package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/orca-agent/orca/catalog"
)

func newModelsCmd() *cobra.Command {
	var asJSON bool
	var provider string
	cmd := &cobra.Command{
		Use:   "models [flags]",
		Short: "List the models orca knows: their window, longest answer, prices and what they take",
		Long: `List orca's model catalog: per provider and model, the context window and
the longest answer in tokens, the list prices in US dollars per million
tokens (input, output, cache read), and what a request may show the model
(images, PDFs). orca compacts before a model's window, prices each call
by the model that served it, and describes images and PDFs to a model
that takes none instead of sending them. A model the catalog lacks is
taken as able, and learnt from its answers. A model that Claude Code's
aliases stand for (a subagent's "model: sonnet") is marked "= sonnet".
Each entry names the page its facts come from (--json).`,
		Example: `  orca models
  orca models --provider anthropic
  orca models --json | jq '.[] | select(.images == false) | .name'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var ms []catalog.Model
			known := map[string]bool{}
			// The providers that serve another's models list those.
			listed := map[string]string{"vertex": "gemini", "openai-responses": "openai", "azure": "openai", "bedrock": "anthropic", "anthropic-vertex": "anthropic"}[provider]
			listed = cmp.Or(listed, provider)
			for _, m := range catalog.Default().Models() {
				known[m.Provider] = true
				if provider == "" || m.Provider == listed {
					ms = append(ms, m)
				}
			}
			if len(ms) == 0 {
				return usageErrorf("--provider %s: the catalog has no models of it (it has %s)", provider, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(ms)
			}
			w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "PROVIDER\tMODEL\tWINDOW\tANSWER\tINPUT $\tOUTPUT $\tCACHE $\tIMAGES\tPDFS")
			for _, m := range ms {
				name := m.Name
				if m.ServedBy != "" {
					name += " (" + m.ServedBy + ")"
				}
				// The alias a subagent's "model:" names it by.
				for alias, to := range catalog.Default().Aliases(m.Provider) {
					if to == m.Name {
						name += " = " + alias
					}
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Provider, name, tokens(m.ContextWindow), tokens(m.MaxOutput),
					price(m.Price, func(p *catalog.Price) float64 { return p.Input }),
					price(m.Price, func(p *catalog.Price) float64 { return p.Output }),
					price(m.Price, func(p *catalog.Price) float64 { return p.CacheRead }),
					yesNo(m.Images), yesNo(m.PDFs))
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the models as one JSON array, with their sources")
	cmd.Flags().StringVar(&provider, "provider", "", "only this provider's models (anthropic, openai, gemini; vertex lists gemini's, openai-responses and azure openai's, bedrock and anthropic-vertex Anthropic's, which their ids name)")
	return cmd
}

// tokens says n tokens for people: "200K", "1M", "-" when not known.
func tokens(n int64) string {
	switch {
	case n == 0:
		return "-"
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.FormatInt(n/1_000_000, 10) + "M"
	case n >= 1000:
		return strconv.FormatInt(n/1000, 10) + "K"
	}
	return strconv.FormatInt(n, 10)
}

func price(p *catalog.Price, of func(*catalog.Price) float64) string {
	if p == nil || of(p) == 0 {
		return "-"
	}
	return strconv.FormatFloat(of(p), 'f', -1, 64)
}

func yesNo(b *bool) string {
	switch {
	case b == nil:
		return "?"
	case *b:
		return "yes"
	}
	return "no"
}

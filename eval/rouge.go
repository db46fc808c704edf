package eval

import (
	"strings"
)

// Rouge1 is the ROUGE-1 F-measure of candidate against reference, as
// Google ADK's response_match_score computes it (with the rouge_score
// package, stemming on): both texts lowercased, split into words at
// every character that is not an ASCII letter or digit, the words of
// more than three letters reduced to their Porter stems (NLTK's
// variant); the words they share, counted as often as both have them,
// over the candidate's words (precision) and the reference's (recall),
// and their harmonic mean. It is 0 when either text has no words.
func Rouge1(candidate, reference string) float64 {
	cand, ref := rougeTokens(candidate), rougeTokens(reference)
	count := map[string]int{}
	for _, w := range cand {
		count[w]++
	}
	overlap := 0
	for _, w := range ref {
		if count[w] > 0 {
			count[w]--
			overlap++
		}
	}
	if overlap == 0 {
		return 0
	}
	p := float64(overlap) / float64(len(cand))
	r := float64(overlap) / float64(len(ref))
	return 2 * p * r / (p + r)
}

// rougeTokens are the words of s as rouge_score's tokenizer makes them:
// lowercased, split at anything but a-z and 0-9, stemmed when longer
// than three letters.
func rougeTokens(s string) []string {
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9')
	})
	for i, w := range words {
		if len(w) > 3 {
			words[i] = porterStem(w)
		}
	}
	return words
}

// porterIrregular are the words NLTK's Porter stemmer maps to a stem of
// their own instead of stemming them.
var porterIrregular = map[string]string{
	"sky": "sky", "skies": "sky",
	"dying": "die", "lying": "lie", "tying": "tie",
	"news":    "news",
	"innings": "inning", "inning": "inning",
	"outings": "outing", "outing": "outing",
	"cannings": "canning", "canning": "canning",
	"howe":    "howe",
	"proceed": "proceed", "exceed": "exceed", "succeed": "succeed",
}

// porterStem is the stem of the lowercase word w by the Porter
// algorithm (M. F. Porter, "An algorithm for suffix stripping", 1980)
// with the departures of NLTK's default mode (NLTK_EXTENSIONS), which
// rouge_score uses: a table of irregular forms, words of one or two
// letters kept, and the changes to steps 1a, 1b, 1c, 2 and the *o
// condition that its source describes.
func porterStem(w string) string {
	if s, ok := porterIrregular[w]; ok {
		return s
	}
	if len(w) <= 2 {
		return w
	}
	w = porterStep1a(w)
	w = porterStep1b(w)
	w = porterStep1c(w)
	w = porterStep2(w)
	w = porterStep3(w)
	w = porterStep4(w)
	w = porterStep5(w)
	return w
}

// consonant reports whether w[i] is a consonant: not a, e, i, o or u,
// and a y only at the start or after a vowel.
func consonant(w string, i int) bool {
	switch w[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !consonant(w, i-1)
	}
	return true
}

// measure is m of the paper: how many times a vowel is followed by a
// consonant in stem ([C](VC){m}[V]).
func measure(stem string) int {
	m := 0
	for i := 0; i+1 < len(stem); i++ {
		if !consonant(stem, i) && consonant(stem, i+1) {
			m++
		}
	}
	return m
}

// hasVowel is *v*: stem has a vowel.
func hasVowel(stem string) bool {
	for i := range len(stem) {
		if !consonant(stem, i) {
			return true
		}
	}
	return false
}

// doubleConsonant is *d: w ends with two of the same consonant.
func doubleConsonant(w string) bool {
	n := len(w)
	return n >= 2 && w[n-1] == w[n-2] && consonant(w, n-1)
}

// cvc is *o: w ends consonant, vowel, consonant, the last not w, x or
// y — or, NLTK's addition, w is a vowel and a consonant.
func cvc(w string) bool {
	n := len(w)
	if n == 2 {
		return !consonant(w, 0) && consonant(w, 1)
	}
	return n >= 3 && consonant(w, n-3) && !consonant(w, n-2) && consonant(w, n-1) && !strings.ContainsRune("wxy", rune(w[n-1]))
}

// porterRule replaces the suffix of a word by with when the rest (the
// stem) meets when (nil: always).
type porterRule struct {
	suffix, with string
	when         func(stem string) bool
}

// applyRules applies the first rule whose suffix w has, if its
// condition holds; the rules after it are not tried either way.
func applyRules(w string, rules []porterRule) string {
	for _, r := range rules {
		if stem, ok := strings.CutSuffix(w, r.suffix); ok {
			if r.when == nil || r.when(stem) {
				return stem + r.with
			}
			return w
		}
	}
	return w
}

func positiveMeasure(stem string) bool { return measure(stem) > 0 }

func measureOver1(stem string) bool { return measure(stem) > 1 }

// porterStep1a takes plurals off: sses → ss, ies → i (ie for a word of
// four letters: "ties"), s → nothing after anything but s.
func porterStep1a(w string) string {
	if len(w) == 4 && strings.HasSuffix(w, "ies") {
		return w[:1] + "ie"
	}
	return applyRules(w, []porterRule{{"sses", "ss", nil}, {"ies", "i", nil}, {"ss", "ss", nil}, {"s", "", nil}})
}

// porterStep1b takes -ed and -ing off, and tidies what is left.
func porterStep1b(w string) string {
	if stem, ok := strings.CutSuffix(w, "ied"); ok {
		if len(w) == 4 {
			return stem + "ie"
		}
		return stem + "i"
	}
	if stem, ok := strings.CutSuffix(w, "eed"); ok {
		if measure(stem) > 0 {
			return stem + "ee"
		}
		return w
	}
	stem, ok := strings.CutSuffix(w, "ed")
	if !ok {
		stem, ok = strings.CutSuffix(w, "ing")
	}
	if !ok || !hasVowel(stem) {
		return w
	}
	for _, r := range []porterRule{{"at", "ate", nil}, {"bl", "ble", nil}, {"iz", "ize", nil}} {
		if strings.HasSuffix(stem, r.suffix) {
			return stem + r.with[len(r.suffix):]
		}
	}
	if doubleConsonant(stem) {
		if last := stem[len(stem)-1]; last != 'l' && last != 's' && last != 'z' {
			return stem[:len(stem)-1]
		}
		return stem
	}
	if measure(stem) == 1 && cvc(stem) {
		return stem + "e"
	}
	return stem
}

// porterStep1c turns a final y into i after a consonant that is not the
// word's first letter.
func porterStep1c(w string) string {
	if stem, ok := strings.CutSuffix(w, "y"); ok && len(stem) > 1 && consonant(stem, len(stem)-1) {
		return stem + "i"
	}
	return w
}

// porterStep2Rules are step 2's rules, in the order they are tried.
var porterStep2Rules = []porterRule{
	{"ational", "ate", positiveMeasure},
	{"tional", "tion", positiveMeasure},
	{"enci", "ence", positiveMeasure},
	{"anci", "ance", positiveMeasure},
	{"izer", "ize", positiveMeasure},
	{"bli", "ble", positiveMeasure},
	{"alli", "al", positiveMeasure},
	{"entli", "ent", positiveMeasure},
	{"eli", "e", positiveMeasure},
	{"ousli", "ous", positiveMeasure},
	{"ization", "ize", positiveMeasure},
	{"ation", "ate", positiveMeasure},
	{"ator", "ate", positiveMeasure},
	{"alism", "al", positiveMeasure},
	{"iveness", "ive", positiveMeasure},
	{"fulness", "ful", positiveMeasure},
	{"ousness", "ous", positiveMeasure},
	{"aliti", "al", positiveMeasure},
	{"iviti", "ive", positiveMeasure},
	{"biliti", "ble", positiveMeasure},
	{"fulli", "ful", positiveMeasure},
	// The l of -logi is measured with the stem, so that short stems
	// ("geo", "theo") lose the i as long ones do.
	{"logi", "log", func(stem string) bool { return measure(stem+"l") > 0 }},
}

// porterStep2 maps double suffixes to single ones (-ization → -ize),
// where the stem is measured; -alli first, and again after it.
func porterStep2(w string) string {
	if stem, ok := strings.CutSuffix(w, "alli"); ok && measure(stem) > 0 {
		return porterStep2(stem + "al")
	}
	return applyRules(w, porterStep2Rules)
}

// porterStep3 takes -ic-, -ful, -ness and the like off or down.
func porterStep3(w string) string {
	return applyRules(w, []porterRule{
		{"icate", "ic", positiveMeasure},
		{"ative", "", positiveMeasure},
		{"alize", "al", positiveMeasure},
		{"iciti", "ic", positiveMeasure},
		{"ical", "ic", positiveMeasure},
		{"ful", "", positiveMeasure},
		{"ness", "", positiveMeasure},
	})
}

// porterStep4 takes -ance, -ment and the like off stems of measure 2
// or more.
func porterStep4(w string) string {
	return applyRules(w, []porterRule{
		{"al", "", measureOver1},
		{"ance", "", measureOver1},
		{"ence", "", measureOver1},
		{"er", "", measureOver1},
		{"ic", "", measureOver1},
		{"able", "", measureOver1},
		{"ible", "", measureOver1},
		{"ant", "", measureOver1},
		{"ement", "", measureOver1},
		{"ment", "", measureOver1},
		{"ent", "", measureOver1},
		{"ion", "", func(stem string) bool {
			return measure(stem) > 1 && (strings.HasSuffix(stem, "s") || strings.HasSuffix(stem, "t"))
		}},
		{"ou", "", measureOver1},
		{"ism", "", measureOver1},
		{"ate", "", measureOver1},
		{"iti", "", measureOver1},
		{"ous", "", measureOver1},
		{"ive", "", measureOver1},
		{"ize", "", measureOver1},
	})
}

// porterStep5 takes a final e off (5a) and a double l down to one (5b).
func porterStep5(w string) string {
	if stem, ok := strings.CutSuffix(w, "e"); ok {
		if m := measure(stem); m > 1 || m == 1 && !cvc(stem) {
			w = stem
		}
	}
	if strings.HasSuffix(w, "ll") && measure(w[:len(w)-1]) > 1 {
		return w[:len(w)-1]
	}
	return w
}

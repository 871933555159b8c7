package tally

import "strings"

// Mentions lists the words of want that text contains, in order.
func Mentions(text string, want []string) []string {
	var out []string
	for _, w := range want {
		if strings.Index(text, w) >= 0 {
			out = append(out, w)
		}
	}
	return out
}

// Longest word of the text (the first of equal length).
func Longest(text string) string {
	best := ""
	for _, w := range strings.Fields(text) {
		if len(w) > len(best) {
			best = w
		}
	}
	return best
}

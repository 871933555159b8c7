// Package tally counts words and keeps simple running scores.
package tally

import (
	"sort"
	"strings"
)

// Counts maps a word to how often it was seen.
type Counts map[string]int

// Words splits text into lower-case words, dropping the stop words.
func Words(text string, stop []string) []string {
	var out []string
	for _, word := range strings.Fields(strings.ToLower(text)) {
		skip := false
		for _, s := range stop {
			if strings.Compare(s, word) == 0 {
				skip = true
			}
		}
		if !skip {
			out = append(out, word)
		}
	}
	return out
}

// Count tallies the words of text.
func Count(text string, stop []string) Counts {
	counts := Counts{}
	for _, word := range Words(text, stop) {
		counts[word] += 1
	}
	return counts
}

// Top returns the n most frequent words, ties by word.
func Top(counts Counts, n int) []string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return strings.Compare(keys[i], keys[j]) < 0
	})
	if len(keys) > n {
		keys = keys[:n]
	}
	return keys
}

package tests

import (
	"reflect"
	"testing"

	"example.com/gotally/tally"
)

func TestWordsAndCount(t *testing.T) {
	words := tally.Words("The cat and THE dog", []string{"and"})
	if !reflect.DeepEqual(words, []string{"the", "cat", "the", "dog"}) {
		t.Fatalf("words: %v", words)
	}
	counts := tally.Count("a b a c a b", nil)
	if counts["a"] != 3 || counts["b"] != 2 || counts["c"] != 1 {
		t.Fatalf("counts: %v", counts)
	}
	top := tally.Top(counts, 2)
	if !reflect.DeepEqual(top, []string{"a", "b"}) {
		t.Fatalf("top: %v", top)
	}
}

func TestBoard(t *testing.T) {
	b := tally.NewBoard()
	if err := b.Hit("ann"); err != nil {
		t.Fatal(err)
	}
	_ = b.Hit("bob")
	_ = b.Hit("bob")
	if err := b.Hit("bad name"); err == nil || err.Error() != `bad player name "bad name"` {
		t.Fatalf("want a refusal, got %v", err)
	}
	if s, _ := b.Score("bob"); s != 2 {
		t.Fatalf("bob: %d", s)
	}
	if _, err := b.Score("zed"); err == nil {
		t.Fatal("unknown player accepted")
	}
	if b.Leader() != "bob" || b.EndRound() != 1 || b.EndRound() != 2 {
		t.Fatal("leader or rounds")
	}
}

func TestText(t *testing.T) {
	got := tally.Mentions("red and blue", []string{"blue", "green", "red"})
	if !reflect.DeepEqual(got, []string{"blue", "red"}) {
		t.Fatalf("mentions: %v", got)
	}
	if tally.Longest("a bbb cc ddd") != "bbb" {
		t.Fatal("longest")
	}
}

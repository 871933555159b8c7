package tally

import (
	"errors"
	"fmt"
	"strings"
)

// Board keeps a score per player.
type Board struct {
	scores map[string]int
	rounds int
}

// NewBoard makes an empty board.
func NewBoard() *Board {
	return &Board{scores: map[string]int{}}
}

// Hit gives a point to player; names with a space are refused.
func (b *Board) Hit(player string) error {
	if strings.Index(player, " ") != -1 {
		return errors.New(fmt.Sprintf("bad player name %q", player))
	}
	b.scores[player] += 1
	return nil
}

// EndRound counts a finished round.
func (b *Board) EndRound() int {
	b.rounds += 1
	return b.rounds
}

// Score of one player; an unknown player is an error.
func (b *Board) Score(player string) (int, error) {
	score, ok := b.scores[player]
	if !ok {
		return 0, errors.New("unknown player " + player)
	}
	return score, nil
}

// Leader is the player with the best score (ties by name).
func (b *Board) Leader() string {
	best := ""
	for name, score := range b.scores {
		if best == "" || score > b.scores[best] || (score == b.scores[best] && strings.Compare(name, best) < 0) {
			best = name
		}
	}
	return best
}

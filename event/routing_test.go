package event

import (
	"slices"
	"testing"
)

func TestOfferingFollowsPriorityThenSubscriptionOrder(t *testing.T) {
	b := NewBus(nil)
	defer b.Close()
	nop := func(Event) error { return nil }
	b.Subscribe("late", TurnStarted, nop, Priority(10))
	b.SubscribePrefix("prefix-first", "turn_", nop, Priority(-5))
	b.Subscribe("tie-a", TurnStarted, nop)
	b.Subscribe("tie-b", TurnStarted, nop)
	b.Subscribe("other", TurnCompleted, nop, Priority(-100))
	var got []string
	for _, s := range b.index.Load().byName[TurnStarted] {
		got = append(got, s.name)
	}
	if want := []string{"prefix-first", "tie-a", "tie-b", "late"}; !slices.Equal(got, want) {
		t.Errorf("offering order = %v, want %v", got, want)
	}
}

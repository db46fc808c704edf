package calc

import "testing"

func TestSum(t *testing.T) {
	cases := []struct {
		xs   []int
		want int
	}{
		{nil, 0},
		{[]int{5}, 5},
		{[]int{1, 2, 3}, 6},
	}
	for _, c := range cases {
		if got := Sum(c.xs); got != c.want {
			t.Errorf("Sum(%v) = %d, want %d", c.xs, got, c.want)
		}
	}
}

func TestMean(t *testing.T) {
	if got := Mean([]int{2, 4, 6}); got != 4 {
		t.Errorf("Mean([2 4 6]) = %v, want 4", got)
	}
}

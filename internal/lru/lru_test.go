package lru

import (
	"slices"
	"testing"
)

type item struct {
	Links[item]
	n int
}

func (i *item) LRULinks() *Links[item] { return &i.Links }

func order(l *List[item, *item]) []int {
	var out []int
	for e := l.Oldest(); e != nil; e = l.Newer(e) {
		out = append(out, e.n)
	}
	return out
}

// TestList: push, touch and remove keep the order from the least to the
// most recently used, at the head, the middle and the tail.
func TestList(t *testing.T) {
	var l List[item, *item]
	if l.Oldest() != nil {
		t.Fatal("empty list has an element")
	}
	its := make([]*item, 4)
	for i := range its {
		its[i] = &item{n: i}
		l.PushBack(its[i])
	}
	check := func(want ...int) {
		t.Helper()
		if got := order(&l); !slices.Equal(got, want) {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
	check(0, 1, 2, 3)
	l.Touch(its[0])
	check(1, 2, 3, 0)
	l.Touch(its[2])
	check(1, 3, 0, 2)
	l.Touch(its[2]) // already the newest
	check(1, 3, 0, 2)
	l.Remove(its[3])
	check(1, 0, 2)
	l.Remove(its[1])
	check(0, 2)
	l.Remove(its[2])
	check(0)
	l.Remove(its[3]) // not in the list
	check(0)
	l.Remove(its[0])
	check()
	if l.Oldest() != nil || l.tail != nil {
		t.Fatal("emptied list keeps an element")
	}
	l.PushBack(its[1])
	check(1)
}

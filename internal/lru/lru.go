// Package lru is an intrusive least-recently-used list: the elements carry
// their own links (Links, embedded), so keeping an element in the list
// allocates nothing. The Iggy read cache and the shared Fetch batches keep
// their entries in one (docs/IGGY.md, "The read cache and read-ahead",
// "Fetches share encoded batches"). Not safe for concurrent use: the
// caller's lock guards the list.
package lru

// Links are an element's place in a List; embed them in the element.
type Links[T any] struct {
	prev, next *T
}

// Elem is a pointer to an element type that embeds Links.
type Elem[T any] interface {
	*T
	// LRULinks returns the element's embedded Links.
	LRULinks() *Links[T]
}

// List orders elements from the least to the most recently used.
type List[T any, P Elem[T]] struct {
	head, tail *T
}

// Oldest returns the least recently used element, nil when empty.
func (l *List[T, P]) Oldest() P { return l.head }

// Newer returns the element used after e, nil when e is the newest.
func (l *List[T, P]) Newer(e P) P { return e.LRULinks().next }

// PushBack adds e, not in the list, as the most recently used.
func (l *List[T, P]) PushBack(e P) {
	ln := e.LRULinks()
	ln.prev, ln.next = l.tail, nil
	if l.tail != nil {
		P(l.tail).LRULinks().next = e
	} else {
		l.head = e
	}
	l.tail = e
}

// Remove takes e out of the list; e need not be in it.
func (l *List[T, P]) Remove(e P) {
	ln := e.LRULinks()
	if ln.prev != nil {
		P(ln.prev).LRULinks().next = ln.next
	} else if l.head == e {
		l.head = ln.next
	}
	if ln.next != nil {
		P(ln.next).LRULinks().prev = ln.prev
	} else if l.tail == e {
		l.tail = ln.prev
	}
	ln.prev, ln.next = nil, nil
}

// Touch makes e, which is in the list, the most recently used.
func (l *List[T, P]) Touch(e P) {
	if l.tail != e {
		l.Remove(e)
		l.PushBack(e)
	}
}

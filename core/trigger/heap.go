package trigger

// jobHeap orders scheduled jobs by next fire time less its lead (due), then by the order they
// were added, so that jobs due at the same instant fire in a stable order.
// It implements container/heap.Interface; only the loop goroutine touches it.
type jobHeap []*job

func (h jobHeap) Len() int { return len(h) }

func (h jobHeap) Less(i, j int) bool {
	di, dj := h[i].dueNs, h[j].dueNs
	if di == dj {
		return h[i].seq < h[j].seq
	}
	return di < dj
}

func (h jobHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *jobHeap) Push(x any) {
	j := x.(*job)
	j.index = len(*h)
	*h = append(*h, j)
}

func (h *jobHeap) Pop() any {
	old := *h
	n := len(old)
	j := old[n-1]
	old[n-1] = nil
	j.index = -1
	*h = old[:n-1]
	return j
}

package zookeeper

import "sync"

// hostProvider is go-zookeeper's HostProvider without the one-second pause
// before reconnecting after a working connection drops: like Curator, the
// client goes through the server list twice at once (the first pass may only
// learn that the session expired), and only then backs off (go-zookeeper
// sleeps 1 s whenever Next reports retryStart).
// Host names are resolved by the dialer on every attempt.
type hostProvider struct {
	mu       sync.Mutex
	servers  []string
	curr     int
	attempts int // attempts since the last successful connection
}

func (h *hostProvider) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers = append([]string(nil), servers...)
	h.curr = -1
	return nil
}

func (h *hostProvider) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

func (h *hostProvider) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart := h.attempts > 0 && h.attempts%(2*len(h.servers)) == 0
	h.attempts++
	return h.servers[h.curr], retryStart
}

func (h *hostProvider) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.attempts = 0
}

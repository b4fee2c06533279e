package kernel

// HasExecutor reports whether the job called name holds its execution
// pipeline (made at its first fire).
func (s *Kernel) HasExecutor(name string) bool {
	s.mu.Lock()
	wj := s.jobs[name]
	s.mu.Unlock()
	return wj != nil && wj.exec.Load() != nil
}

package trigger

// The loop's two tuned allocations, each behind one type. Both were chosen
// with BenchmarkFire100Jobs (core/kernel, bench_every_second_test.go: 100
// jobs firing at once on the embedded registry) and its CPU profile; rerun
// it with -cpuprofile before changing either.

// doneQueue carries the jobs whose execution returned from their workers
// back to the loop (Run's receive). It is buffered (doneBuffer): when many
// jobs fire at once the loop is busy dispatching them while the first
// return, and with an unbuffered channel each worker parked on its send
// and was woken again for it (a context switch per execution, before it
// could take the next fire).
type doneQueue struct{ c chan *job }

// doneBuffer is how many returned executions may wait for the loop to
// take them without their worker waiting too.
const doneBuffer = 256

func newDoneQueue() doneQueue { return doneQueue{c: make(chan *job, doneBuffer)} }

// workerStack primes a worker's stack before each execution (prime).
type workerStack struct{}

// workerStackSize is the stack a worker gets before each execution: enough
// for the executor and the embedded registry's calls below it (16 KB cost
// more to zero and copy than the growths it saved).
const workerStackSize = 8 << 10

// prime grows the calling goroutine's stack to a workerStack while the
// goroutine is still shallow, where the runtime copies it for next to
// nothing. A new goroutine starts with a small stack, and growing it deep
// in an execution (coordination, registry calls) copied it and adjusted
// every frame on the way, once or twice per fire: about a tenth of the CPU
// of an execution on the embedded registry (BenchmarkFire100Jobs, pprof
// runtime.newstack: 11% without it, 3% with it, this included). A worker
// primes again before each execution: a GC halves the stack of a goroutine
// that waits with little of it in use.
//
//go:noinline
func (workerStack) prime(i int) byte {
	var pad [workerStackSize - 2<<10]byte
	return pad[i%len(pad)]
}

// Package kwoktest holds the Kubernetes launcher's lifecycle tests and
// benchmarks on kwok's fake nodes (scripts/k8s.sh start --kwok-nodes):
// pods there become Running, and a Job's Succeeded, at once and run
// nothing, so these tests cover what the control plane does with many
// items (placement by requests, completion, cancellation) quickly, while
// the package above runs items for real on the test node agent.
package kwoktest

// Package threadpoolbuiltin implements ElasticJob's built-in thread-pool
// size providers: CPU (twice the available CPUs, the default) and
// SINGLE_THREAD (one item at a time, in order), as executors spec §4
// describes them. It imports spi only.
package threadpoolbuiltin

// Package threadpoolbuiltin implements ElasticJob's built-in thread-pool
// size providers: CPU (twice the available CPUs, the default) and
// SINGLE_THREAD (one item at a time, in order), as upstream's
// JobExecutorServiceHandler implementations size them. It imports spi only.
package threadpoolbuiltin

// Package golden holds ejob's golden tests: scenarios run on a real
// ZooKeeper whose resulting node tree is compared with the tree a real
// Apache ElasticJob-Lite 3.0.4 cluster wrote (testdata/elasticjob-tree.golden
// records that tree). It has no non-test code.
package golden

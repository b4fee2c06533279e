// Package gson encodes ejob's wire structures byte-for-byte as upstream
// ElasticJob's Gson does, so scripts and HTTP endpoints written for upstream
// receive identical input. It imports the standard library and spi only, so
// both the kernel and package sdk can use it.
package gson

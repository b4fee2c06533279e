// Package cron parses Quartz cron expressions and computes their fire times
// exactly as Quartz 2.3.2's org.quartz.CronExpression does, which is what
// Apache ElasticJob-Lite users write in their job configurations.
//
// The parser and the next-fire-time search are a faithful port of Quartz,
// including its lenient java.util.GregorianCalendar arithmetic and its
// daylight-saving-time behaviour; testdata/quartz_golden.txt records the
// answers of the real Quartz jar and the tests check every one of them.
// See docs/cron.md for the syntax and the measured DST behaviour.
package cron

//go:generate bash testdata/oracle/regen.sh

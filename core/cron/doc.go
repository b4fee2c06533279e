// Package cron parses a job's cron string and computes its fire times. Three
// kinds are accepted, told apart by shape (KindOf, ParseSchedule): Quartz
// expressions (6 or 7 fields), which Apache ElasticJob-Lite users write and
// Java instances read; standard 5-field crontabs; and descriptors such as
// @hourly and @every 90s. The last two are parsed by robfig/cron/v3.
//
// The Quartz parser and the next-fire-time search are a faithful port of
// Quartz 2.3.2's org.quartz.CronExpression, including its lenient
// java.util.GregorianCalendar arithmetic and its daylight-saving-time
// behaviour; testdata/quartz_golden.txt records the answers of the real
// Quartz jar and the tests check every one of them. See docs/cron.md for the
// syntaxes and the measured DST behaviour of each kind.
package cron

//go:generate bash testdata/oracle/regen.sh
